"""Turns that hold what the question asks for — a date for "when", a number for "how
many", a name for "which" — rank higher in build_context (ContextConfig.answer_type_boost,
context/answer_types.py; docs/measurements.md, "Session 33")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memstrata import Memory, Message, Role, Scope, ValidationError
from memstrata.context.answer_types import asked_type, holds_type, names_in
from memstrata.context.config import ContextConfig


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("When did Nate win his first tournament?", "time"),
        ("What year did Jon start his dance studio?", "time"),
        ("How many children does Melanie have?", "number"),
        ("How long has Caroline had her friends?", "number"),
        ("Which two fantasy novels does Tim enjoy?", "name"),
        ("Where did Caroline move from?", "name"),
        ("Who is Tim's favourite author?", "name"),
        ("小王什么时候去的杭州？", "time"),
        ("她哪年开始学钢琴？", "time"),
        ("你有几个孩子？", "number"),
        ("他们几号见面？", "time"),
        ("他读了哪本书？", "name"),
        ("谁送的礼物？", "name"),
        ("Did Nate like the tournament?", None),
        ("Remind me about the trip.", None),
    ],
)
def test_asked_type(question: str, kind: str | None) -> None:
    assert asked_type(question) == kind


@pytest.mark.parametrize(
    ("kind", "text", "held"),
    [
        ("time", "Thanks, Caroline! Yup, we just did it yesterday!", True),
        ("time", "We met in August 2021.", True),
        ("time", "I moved here in 2019.", True),
        ("time", "我上个月去了杭州。", True),
        ("time", "我们5月8号见面。", True),
        ("time", "That sounds great, keep it up!", False),
        ("time", "我很喜欢杭州。", False),
        ("number", "I have 3 kids.", True),
        ("number", "我有2个孩子。", True),
        ("number", "I have three kids.", False),
        ("name", "For sure! Harry Potter and Game of Thrones are amazing!", True),
        ("name", 'I\'m reading "The Name of the Wind" right now.', True),
        ("name", "林晓也在读《北极光咖啡馆》，真巧。", True),
        # a sentence's first word, "I", and the speakers are not names
        ("name", "Nate: Hey Joanna! I love it. Great work.", False),
        ("name", "我很喜欢那本书。", False),
    ],
)
def test_holds_type(kind: str, text: str, held: bool) -> None:
    assert holds_type(kind, text, {"Nate", "Joanna", "Caroline"}) is held  # type: ignore[arg-type]


def test_names_in_skips_the_speakers_prefix() -> None:
    assert names_in("Nate: Hey Joanna! I won a big Valorant tournament.") == {
        "Joanna",
        "Valorant",
    }


@pytest.mark.parametrize("value", [-0.1, 10.5, float("nan")])
def test_answer_type_boost_is_checked(value: float) -> None:
    with pytest.raises(ValidationError, match="answer_type_boost"):
        ContextConfig(answer_type_boost=value)


def test_answer_type_boost_is_off_before_the_levers() -> None:
    assert ContextConfig.before().answer_type_boost == 0.0


_T0 = datetime(2023, 10, 20, 18, 0, tzinfo=UTC)


def _ranked(turns: list[tuple[str, str]], question: str, boost: float) -> list[tuple[str, float]]:
    mem = Memory("memory://", embedder="hashing", background=False)
    try:
        mem.context_config = ContextConfig(answer_type_boost=boost)
        written = mem.add_messages(
            Scope("t", "mel", session="s1"),
            [
                Message(
                    role=Role.USER,
                    content=f"{who}: {text}",
                    metadata={"speaker": who},
                    observed_at=_T0 + timedelta(seconds=10 * i),
                )
                for i, (who, text) in enumerate(turns)
            ],
        )
        ctx = mem.build_context(Scope("t", "mel"), question, token_budget=2000, reserve_ratio=0)
        stored = {rec.id: rec.text for rec in written}
        scored = sorted(
            (it for it in ctx.items if it.block == "relevant"), key=lambda it: -it.score
        )
        return [(stored[it.record_id or ""], it.score) for it in scored]
    finally:
        mem.close()


@pytest.mark.parametrize(
    ("turns", "question", "answer"),
    [
        (
            [
                ("Melanie", "We love hiking in the mountains after a long road trip."),
                ("Caroline", "Hiking after a road trip sounds lovely, Melanie."),
                ("Melanie", "We went on the hike yesterday, the kids loved it."),
                ("Caroline", "My turtles love strawberries."),
            ],
            "When did Melanie go on a hike after the road trip?",
            2,
        ),
        (
            [
                ("小李", "小王最近读小说读得很多，小说是小王的最爱。"),
                ("小王", "我在读《北极光咖啡馆》。"),
                ("小李", "小王最近读的小说很多。"),
                ("小王", "我的乌龟喜欢吃草莓。"),
            ],
            "小王最近在读哪本小说？",
            1,
        ),
    ],
)
def test_a_turn_holding_what_is_asked_moves_up(
    turns: list[tuple[str, str]], question: str, answer: int
) -> None:
    off, on = _ranked(turns, question, 0.0), _ranked(turns, question, 1.0)
    said = f"{turns[answer][0]}: {turns[answer][1]}"
    assert len(off) == len(on) == len(turns)
    before = dict(off)
    # the turn holding what is asked gains the boost, the others nothing
    for text, score in on:
        assert score == pytest.approx(before[text] + (1.0 if text == said else 0.0), abs=1e-6)
    assert [t for t, _ in off].index(said) > 0
    assert [t for t, _ in on].index(said) == 0
