"""Clusters, episodes and other derived records follow their sources (issue 10 §2, §6).

When a turn is forgotten, maintenance re-derives every cluster, conversation episode and
automatic key entry that repeats it from the turns left (the old text stays in the history,
as a summary's does), trims the sources of facts a kept turn also supports, and forgets the
derived records with no source left. When a turn is purged, the same records are rebuilt
under the same id with no history, so no byte of the turn survives in the file. Derived
records of kept turns, and what the user wrote, stay intact."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.errors import NotFoundError
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.records import MemoryRecord, RecordType, Source

S = Scope("acme", "alice", session="s1")
SECRET = "zorblaxian"
WORD2 = "quuxberry"
DERIVED = ("cluster", "episode")


class EchoLLM(HeuristicLLM):
    """A provider whose summaries repeat every turn, so what it was given is visible."""

    @property
    def name(self) -> str:
        return "echo"

    def summarize(self, texts: Sequence[str], *, max_words: int = 200) -> str:
        return " | ".join(texts)


def _mem(url: str, clock: FixedClock) -> Memory:
    return Memory(url, embedder="hashing", llm=EchoLLM(), clock=clock, background=False)


def _conversation(mem: Memory) -> list[MemoryRecord]:
    turns = []
    for i in range(6):
        # the oldest turn holds the words (in the digest); every turn shares the rest, so the
        # oldest, clustered first, is joined by the others (hashing embedder)
        word = f"{SECRET} {WORD2}" if i == 0 else f"{i}"
        text = f"tomato garden planted and leeks {word}"
        turns.append(mem.add_message(S, "user", text))
        turns.append(mem.add_message(S, "assistant", f"noted tomato garden {i}"))
    mem.end_session(S)
    return turns


def _current(mem: Memory, *types: str) -> list[MemoryRecord]:
    return mem.list(S.user_scope, filters={"types": list(types)}, limit=1000)


def _every_version(mem: Memory) -> list[MemoryRecord]:
    flt = {"include_deleted": True, "include_superseded": True}
    return [
        v
        for r in mem.list(S.user_scope, filters=flt, limit=1000)
        for v in mem.history(S.user_scope, r.id)
    ]


def _says(r: MemoryRecord, word: str) -> bool:
    return word in repr((r.text, r.content.summary, dict(r.content.structured)))


def _setup(mem: Memory) -> tuple[list[MemoryRecord], dict[str, MemoryRecord]]:
    turns = _conversation(mem)
    before = {r.id: r for r in _current(mem, *DERIVED)}
    holding = [r for r in before.values() if _says(r, SECRET) and len(r.source_ids) > 1]
    assert {r.type.value for r in holding} == set(DERIVED), "precondition: both repeat it"
    return turns, before


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_maintenance_rederives_clusters_and_episodes_of_a_forgotten_turn(
    kind: str, tmp_path: Path, clock: FixedClock
) -> None:
    url = f"sqlite:///{tmp_path / 'f.db'}" if kind == "sqlite" else "memory://"
    mem = _mem(url, clock)
    try:
        turns, before = _setup(mem)
        victim = turns[0]
        one_source = mem.add(
            S,
            f"alice mentioned {SECRET} once",
            type=RecordType.FACT,
            source=Source.IMPLICIT_INFERENCE,
            source_ids=[victim.id],
        )
        two_sources = mem.add(
            S,
            "alice gardens tomatoes",
            type=RecordType.FACT,
            source=Source.IMPLICIT_INFERENCE,
            source_ids=[victim.id, turns[2].id],
        )
        hers = mem.add(S, "my own note on that day", source_ids=[victim.id])
        mem.forget(S, [victim.id])
        report = mem.maintain(S)
        assert report.rederived >= len([r for r in before.values() if _says(r, SECRET)])
        after = {r.id: r for r in _current(mem, *DERIVED)}
        assert set(after) == set(before)  # re-derived in place, same ids
        for rid, r in after.items():
            assert not _says(r, SECRET), f"{r.type.value} still repeats the forgotten turn"
            assert victim.id not in r.source_ids
            assert victim.id not in r.content.structured.get("members", [])
            if _says(before[rid], SECRET):
                assert r.version == before[rid].version + 1
                assert r.metadata["refreshed"]["dropped_sources"] == [victim.id]
                assert "tomato" in r.text  # what the kept turns said is still there
                assert any(_says(v, SECRET) for v in mem.history(S.user_scope, rid))
            else:
                assert r.version == before[rid].version  # untouched
        assert not mem.get(S, one_source.id, include_deleted=True).is_active
        kept = mem.get(S, two_sources.id)
        assert kept.text == "alice gardens tomatoes" and kept.source_ids == (turns[2].id,)
        assert mem.get(S, hers.id).is_active  # what the user wrote is never forgotten
        logged = {e.record_id: e.action for e in report.log}
        assert logged[one_source.id] == "forget" and logged[two_sources.id] == "refresh"
        again = mem.maintain(S)
        assert again.rederived == 0 and again.refreshed == 0  # nothing stale is left
    finally:
        mem.close()


def test_a_dry_run_reports_and_writes_nothing(clock: FixedClock) -> None:
    mem = _mem("memory://", clock)
    try:
        turns, before = _setup(mem)
        mem.forget(S, [turns[0].id])
        report = mem.maintain(S, dry_run=True)
        assert report.rederived >= 2
        assert {r.id: r.version for r in _current(mem, *DERIVED)} == {
            r.id: r.version for r in before.values()
        }
    finally:
        mem.close()


def _file(path: Path) -> bytes:
    return b"".join(
        Path(f"{path}{s}").read_bytes() for s in ("", "-wal") if Path(f"{path}{s}").exists()
    ).lower()


def test_a_purged_turn_leaves_no_word_in_derived_records(tmp_path: Path, clock: FixedClock) -> None:
    path = tmp_path / "p.db"
    mem = _mem(f"sqlite:///{path}", clock)
    try:
        turns, before = _setup(mem)
        victim = turns[0]
        fact = mem.add(
            S,
            f"alice said {WORD2}",
            type=RecordType.FACT,
            source=Source.IMPLICIT_INFERENCE,
            source_ids=[victim.id],
        )
        mem.forget(S, [turns[2].id])
        mem.maintain(S)  # history now holds versions that repeat the victim
        report = mem.purge(S, [victim.id])
        assert report.remaining == 0 and report.records >= 2  # the turn and the fact
        after = {r.id: r for r in _current(mem, *DERIVED)}
        assert set(after) == set(before)
        for v in _every_version(mem):
            assert not _says(v, SECRET) and not _says(v, WORD2), v.type
            assert victim.id not in v.source_ids
        for rid in after:
            if _says(before[rid], SECRET):
                assert [v.version for v in mem.history(S.user_scope, rid)] == [1]
        with pytest.raises(NotFoundError):
            mem.get(S, fact.id, include_deleted=True)
    finally:
        mem.close()
    data = _file(path)
    assert SECRET.encode() not in data and WORD2.encode() not in data
    assert b"quuxberri" not in data  # the stemmed term of the lexical index
    assert b"tomato" in data
