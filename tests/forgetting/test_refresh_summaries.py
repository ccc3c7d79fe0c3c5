"""Consolidation refreshes stale summaries (issue 10 §2): when turns a summary covers are
forgotten, the summary is written again from the turns left — by the configured LLM, else
the offline summariser — with provenance, the old text kept in its history."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.errors import ValidationError
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.records import MemoryRecord, RecordType

S = Scope("acme", "alice", session="s1")
SECRET = "zorblaxian"


class EchoLLM(HeuristicLLM):
    """A 'provider' whose summary repeats every turn, so what it was given is visible."""

    @property
    def name(self) -> str:
        return "echo"

    def summarize(self, texts: Sequence[str], *, max_words: int = 200) -> str:
        return " | ".join(texts)


@pytest.fixture(params=["sqlite", "memory"])
def emem(request: pytest.FixtureRequest, tmp_path: Path, clock: FixedClock) -> Memory:
    url = f"sqlite:///{tmp_path / 'r.db'}" if request.param == "sqlite" else "memory://"
    m = Memory(url, embedder="hashing", llm=EchoLLM(), clock=clock, background=False)
    request.addfinalizer(m.close)
    return m


def _conversation(mem: Memory) -> list[MemoryRecord]:
    turns = []
    for i in range(6):
        word = SECRET if i == 2 else f"topic{i}"
        turns.append(mem.add_message(S, "user", f"round {i}: I talked about {word} today"))
        turns.append(mem.add_message(S, "assistant", f"noted round {i}"))
    mem.end_session(S)
    return turns


def _summaries(mem: Memory) -> list[MemoryRecord]:
    return mem.list(S.user_scope, filters={"types": ["summary"]}, limit=100)


def test_forgotten_turns_are_summarised_away(emem: Memory) -> None:
    turns = _conversation(emem)
    victim = turns[4]
    stale = [s for s in _summaries(emem) if victim.id in s.source_ids]
    assert stale and all(SECRET in s.text for s in stale)
    emem.forget(S, [victim.id], reason="user asked")
    report = emem.maintain(S)
    assert report.refreshed == len(stale)
    assert any(e.action == "refresh" and e.policy == "consolidation" for e in report.log)
    for old in stale:
        new = emem.get(S.user_scope, old.id)
        assert SECRET not in new.text and "round 3" in new.text
        assert new.version > old.version and victim.id not in new.source_ids
        assert new.metadata["refreshed"]["dropped_sources"] == [victim.id]
        assert new.metadata["summarizer"] == "echo"
        assert any(SECRET in v.text for v in emem.history(S.user_scope, old.id))
        hits = emem.search(S.user_scope, SECRET, mode="lexical")
        assert old.id not in [h.record.id for h in hits]
    assert emem.maintain(S).refreshed == 0  # nothing stale any more


def test_offline_summariser_without_a_provider(tmp_path: Path, clock: FixedClock) -> None:
    mem = Memory("memory://", embedder="hashing", clock=clock, background=False)
    try:
        turns = _conversation(mem)
        mem.forget(S, [turns[4].id])
        assert mem.maintain(S).refreshed >= 1
        refreshed = [s for s in _summaries(mem) if "refreshed" in s.metadata]
        assert refreshed and all(
            s.metadata["refreshed"]["summarizer"] == "heuristic" for s in refreshed
        )
    finally:
        mem.close()


def test_dry_run_and_no_turn_left(emem: Memory) -> None:
    turns = _conversation(emem)
    before = {s.id: s.version for s in _summaries(emem)}
    emem.forget(S, [t.id for t in turns])
    dry = emem.maintain(S, dry_run=True)
    assert dry.refreshed == len(before)
    assert {s.id: s.version for s in _summaries(emem)} == before
    emem.maintain(S)
    assert _summaries(emem) == []  # every turn gone: the summaries are forgotten (restorable)
    deleted = emem.list(S.user_scope, filters={"types": ["summary"], "include_deleted": True})
    assert deleted and all("forgotten" in s.metadata for s in deleted)


def test_retention_purged_turns_do_not_make_a_summary_stale(
    emem: Memory, clock: FixedClock
) -> None:
    _conversation(emem)
    clock.advance(days=40)
    report = emem.maintain(S)
    assert report.purged > 0 and report.refreshed == 0
    assert all(SECRET in s.text or "round 0" in s.text for s in _summaries(emem))
    assert {s.type for s in _summaries(emem)} == {RecordType.SUMMARY}


def test_maintain_as_of_a_later_time(tmp_path: Path, clock: FixedClock) -> None:
    mem = Memory("memory://", embedder="hashing", clock=clock, background=False)
    try:
        weak = mem.add(
            S,
            "the user once mentioned a blue umbrella in passing",
            importance=0.1,
            source="implicit_inference",
            type=RecordType.EPISODE,
        )
        assert mem.maintain(S).forgotten == 0
        later = clock.now() + timedelta(days=200)
        report = mem.maintain(S, now=later)
        assert report.forgotten == 1 and report.log[0].at == later
        gone = mem.get(S.user_scope, weak.id, include_deleted=True)
        assert gone.metadata["forgotten"]["at"] == later.isoformat()
        assert clock.now() < later  # the Memory's own clock did not move
        with pytest.raises(ValidationError):
            mem.maintain(S, now="not a date")
    finally:
        mem.close()
