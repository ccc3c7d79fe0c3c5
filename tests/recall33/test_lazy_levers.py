"""With reaction_penalty and answer_type_boost on, a context rendered from views (no
candidate decoded) is the one decoding every candidate gives: both levers read only a
candidate's text and speaker, which a view holds."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memstrata import Memory, Message, Role, Scope
from memstrata.context import builder
from memstrata.context.config import ContextConfig

_WORDS = "sailing boat bay harbour wind dawn anchor rope island tide chart compass".split()
_ENDS = ("?", ".", "! Wow!", "! So proud of you!", " yesterday.", " in May 2023.", " 3 times.")
_NAMES = ("", " with Anna", " on the Sea Breeze", " at Harbour Point")


@pytest.mark.parametrize("budget", [300, 1000, 2000])
def test_lazy_context_with_the_new_levers_is_the_eager_one(
    tmp_path: Path, budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rnd = random.Random(33)
    mem = Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", background=False)
    try:
        mem.context_config = ContextConfig(reaction_penalty=0.3, answer_type_boost=0.3)
        alice = Scope("acme", "alice", session="s1")
        t0 = datetime(2023, 6, 1, tzinfo=UTC)
        msgs = []
        for i in range(200):
            words = " ".join(rnd.choice(_WORDS) for _ in range(rnd.choice((2, 5, 12, 30))))
            who = rnd.choice(("Mia", "Leo"))
            text = f"{who}: {words}{rnd.choice(_NAMES)}{rnd.choice(_ENDS)}"
            msgs.append(
                Message(
                    role=Role.USER,
                    content=text,
                    observed_at=t0 + timedelta(minutes=i),
                    metadata={"speaker": who},
                )
            )
        mem.add_messages(alice, msgs)
        mem.flush()
        other = Scope("acme", "alice", session="s2")
        queries = (
            "When did Mia go sailing at dawn?",
            "How many times did Leo check the tide chart?",
            "Which boat did Mia take to the island?",
            "anchor rope",
        )
        lazy = [mem.build_context(other, q, token_budget=budget) for q in queries]
        monkeypatch.setattr(builder.ContextRequest, "lazy", property(lambda self: False))
        eager = [mem.build_context(other, q, token_budget=budget) for q in queries]
        assert lazy == eager
        # the levers moved something: the scores are not those of the levers off
        mem.context_config = ContextConfig()
        plain = [mem.build_context(other, q, token_budget=budget) for q in queries]
        assert [[it.score for it in c.items] for c in plain] != [
            [it.score for it in c.items] for c in eager
        ]
    finally:
        mem.close()
