"""One live fact per key, whatever made two (session 20, facts20).

A profile key has at most one live (active, not superseded) fact; earlier values stay in
``facts.history``. Before this, a restore of a deleted fact whose key had a new first fact
since left both live for good (every later upsert of the key applied the rules to one of
them, the other stayed in ``facts.all`` and in the profile of ``build_context``), and so
did an import of a backup holding another live fact of the key (or a rare race,
``layers/races.py``). Now:

- a restore makes the restored fact the current value; the other live ones end superseded
  by it (``valid_to``, ``superseded_by``), in the history, as by an update;
- an import keeps the key's most confident live fact (as ``get`` picks it), the others end
  superseded by it;
- any write of a key that finds more than one live fact (confirmation, conflict,
  replacement, or a statement that changes nothing) ends the others, superseded by the
  record it writes or keeps;
- ``facts.history`` on SQLite reads the key's rows by index, not every fact of the user.
"""

from __future__ import annotations

import io
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memstrata import Memory, Scope
from memstrata.filters import Filters, MetadataCondition
from memstrata.llm.models import ExtractedFact
from memstrata.records import MemoryRecord, RecordType
from memstrata.store.base import RecordWrite

ALICE = Scope("acme", "alice")
BOB = Scope("acme", "bob")


@pytest.fixture(params=["sqlite", "memory", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'm.db'}"
    elif request.param == "memory":
        yield "memory://"
    else:
        yield request.getfixturevalue("pg_url")


def _fact(value: str, confidence: float = 0.9, key: str = "city") -> ExtractedFact:
    return ExtractedFact(key=key, value=value, category="location", confidence=confidence)


def _live(mem: Memory, key: str = "city") -> list[MemoryRecord]:
    """The key's live facts, straight from the store (expired ones too)."""
    flt = Filters(
        types=frozenset({RecordType.FACT}), metadata=(MetadataCondition("key", "eq", key),)
    )
    return list(mem.store.list(ALICE, flt, limit=1000))


def _values(mem: Memory, key: str = "city") -> set[str]:
    """Every value ``facts.history`` shows for the key: a version's value or a conflict."""
    out: set[str] = set()
    for v in mem.facts.history(ALICE, key):
        out.add(str(v.content.structured["value"]))
        out |= {str(c["value"]) for c in v.content.structured.get("conflicts", [])}
    return out


def _value(record: MemoryRecord | None) -> str | None:
    return None if record is None else str(record.content.structured["value"])


def test_a_restored_fact_is_the_current_value_and_ends_the_other(url: str) -> None:
    """The lead's sequence: delete, a new first fact, restore, then updates."""
    with Memory(url, embedder="hashing", background=False) as mem:
        paris = mem.facts.upsert(ALICE, _fact("Paris")).record
        mem.delete(ALICE, paris.id)
        oslo = mem.facts.upsert(ALICE, _fact("Oslo")).record
        restored = mem.restore(ALICE, paris.id)
        assert restored.is_active and restored.superseded_by is None
        assert [_value(r) for r in mem.facts.all(ALICE)] == ["Paris"]
        assert _value(mem.facts.get(ALICE, "city")) == "Paris"
        ended = mem.store.get(ALICE, oslo.id)
        assert ended.superseded_by == paris.id and ended.valid_to is not None
        assert ended.is_active  # ended as by an update, not deleted
        assert _values(mem) == {"Paris", "Oslo"}
        # a less confident other value: a conflict on Paris, and still one live fact
        assert mem.facts.upsert(ALICE, _fact("Rome", 0.8)).action.value == "conflict"
        assert [_value(r) for r in _live(mem)] == ["Paris"]
        # a surer one replaces it: one live fact, every value in the history
        assert mem.facts.upsert(ALICE, _fact("Berlin", 0.95)).action.value == "replaced"
        assert [_value(r) for r in _live(mem)] == ["Berlin"]
        assert _values(mem) == {"Paris", "Oslo", "Rome", "Berlin"}
        context = mem.build_context(ALICE, "where do I live?")
        profile = [it.text for it in context.items if it.block == "facts"]
        assert profile == ["city: Berlin"], profile  # the current value only


def test_a_restore_changes_nothing_else_when_the_key_has_no_other_fact(url: str) -> None:
    with Memory(url, embedder="hashing", background=False) as mem:
        paris = mem.facts.upsert(ALICE, _fact("Paris")).record
        lyon = mem.facts.upsert(ALICE, _fact("Lyon", 0.9, key="birthplace")).record
        mem.delete(ALICE, paris.id)
        mem.restore(ALICE, paris.id)
        assert {r.id for r in mem.facts.all(ALICE)} == {paris.id, lyon.id}
        assert mem.store.get(ALICE, lyon.id).version == lyon.version
        assert [v.version for v in mem.store.history(ALICE, paris.id)] == [1, 2, 3]


def test_a_restored_superseded_fact_stays_an_earlier_version(url: str) -> None:
    """A fact an update ended comes back in the history only: the current value stays."""
    with Memory(url, embedder="hashing", background=False) as mem:
        paris = mem.facts.upsert(ALICE, _fact("Paris", 0.7)).record
        mem.facts.upsert(ALICE, _fact("Oslo", 0.9))
        mem.delete(ALICE, paris.id)
        back = mem.restore(ALICE, paris.id)
        assert back.is_active and back.superseded_by is not None
        assert [_value(r) for r in _live(mem)] == ["Oslo"]


def _second_live(mem: Memory, value: str, confidence: float) -> MemoryRecord:
    """A second live fact of the key, stored as an import or a race leaves one."""
    template = mem.facts.get(ALICE, "city")
    assert template is not None
    text = f"city: {value}"
    other = replace(
        template,
        id=f"fact-other-{value}",
        confidence=confidence,
        content=replace(
            template.content,
            raw=text,
            structured={**template.content.structured, "value": value, "confidence": confidence},
        ),
    )
    mem.store.insert([RecordWrite(other, None, ())])
    assert len(_live(mem)) == 2
    return other


@pytest.mark.parametrize(
    ("value", "confidence", "action", "current"),
    [
        ("Paris", 0.9, "confirmed", "Paris"),  # the same value as the current one
        ("Rome", 0.8, "conflict", "Paris"),  # less confident: kept as a conflict
        ("Rome", 0.99, "replaced", "Rome"),  # surer: the new value
    ],
)
def test_a_write_of_a_key_with_two_live_facts_ends_the_other(
    url: str, value: str, confidence: float, action: str, current: str
) -> None:
    with Memory(url, embedder="hashing", background=False) as mem:
        mem.facts.upsert(ALICE, _fact("Paris", 0.9))
        other = _second_live(mem, "Oslo", 0.6)
        assert _value(mem.facts.get(ALICE, "city")) == "Paris"  # the most confident
        outcome = mem.facts.upsert(ALICE, _fact(value, confidence))
        assert outcome.action.value == action
        live = _live(mem)
        assert [_value(r) for r in live] == [current]
        ended = mem.store.get(ALICE, other.id)
        assert ended.superseded_by == live[0].id and ended.valid_to is not None
        assert _values(mem) >= {"Paris", "Oslo", value}


def test_a_statement_that_changes_nothing_still_ends_the_other(url: str) -> None:
    with Memory(url, embedder="hashing", background=False) as mem:
        paris = mem.facts.upsert(ALICE, _fact("Paris"), source_ids=["m1"]).record
        _second_live(mem, "Oslo", 0.6)
        outcome = mem.facts.upsert(ALICE, _fact("Paris"), source_ids=["m1"])  # seen already
        assert outcome.action.value == "unchanged" and outcome.record.id == paris.id
        assert [r.id for r in _live(mem)] == [paris.id]


def _export(mem: Memory, scope: Scope) -> str:
    buf = io.StringIO()
    mem.export_records(scope, buf)
    return buf.getvalue()


def test_an_import_of_a_backup_keeps_one_live_fact(url: str, tmp_path: Path) -> None:
    """The backup's fact of the key and the one stored since: the more confident stays
    current (as the rules keep a surer value), the other ends superseded by it."""
    # (a copy of another user's: a backup of this user's own would hold Nice under the id of
    # the store's Oslo, a first fact of the key too, and the import would skip it)
    with Memory(f"sqlite:///{tmp_path / 'backup.db'}", embedder="hashing") as old:
        old.facts.upsert(BOB, _fact("Nice", 0.5))
        old.facts.upsert(BOB, _fact("Paris", 0.9))
        old.facts.upsert(BOB, _fact("Lyon", 0.9, key="birthplace"))
        text = _export(old, BOB)
    with Memory(url, embedder="hashing", background=False) as mem:
        oslo = mem.facts.upsert(ALICE, _fact("Oslo", 0.7)).record
        report = mem.import_records(io.StringIO(text), into=ALICE)
        assert (report.imported, report.skipped) == (3, 0)
        live = _live(mem)
        assert [_value(r) for r in live] == ["Paris"]
        ended = mem.store.get(ALICE, oslo.id)
        assert ended.superseded_by == live[0].id and ended.valid_to is not None
        assert _values(mem) == {"Nice", "Paris", "Oslo"}
        assert [_value(r) for r in _live(mem, "birthplace")] == ["Lyon"]
        # then an update: one live fact still, nothing lost
        mem.facts.upsert(ALICE, _fact("Rome", 0.95))
        assert [_value(r) for r in _live(mem)] == ["Rome"]
        assert _values(mem) == {"Nice", "Paris", "Oslo", "Rome"}


def test_a_keys_history_on_sqlite_is_read_by_index(tmp_path: Path) -> None:
    """``facts.history`` lists every record of the key, superseded ones too: by schema 12's
    index of the key's rows, not every fact row of the user (``records_type``)."""
    path = tmp_path / "m.db"
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        for i in range(50):
            mem.facts.upsert(ALICE, _fact(f"v{i}", 0.7, key=f"k{i}"))
        for i in range(3):
            mem.facts.upsert(ALICE, _fact(f"c{i}", 0.5 + i / 10))
        statements: list[str] = []
        conn: sqlite3.Connection = mem.store._reader()  # type: ignore[attr-defined]
        conn.set_trace_callback(statements.append)
        try:
            versions = mem.facts.history(ALICE, "city")
        finally:
            conn.set_trace_callback(None)
        assert [_value(v) for v in versions if v.superseded_by is None] == ["c0", "c1", "c2"]
    listings = [s for s in statements if s.lstrip().startswith("SELECT") and "'$.key'" in s]
    assert listings, statements
    plain = sqlite3.connect(str(path))
    try:
        for sql in listings:
            plan = " | ".join(str(r[-1]) for r in plain.execute("EXPLAIN QUERY PLAN " + sql))
            assert "records_fact_key" in plan, plan
    finally:
        plain.close()


# --- random sequences of upsert / delete / restore / purge on one key -----------------------
_VALUES = ["Paris", "Oslo", "Rome", "Lyon"]
_STEP = st.one_of(
    st.tuples(st.just("upsert"), st.sampled_from(_VALUES), st.sampled_from([0.6, 0.75, 0.9, 0.95])),
    st.tuples(st.just("delete"), st.integers(0, 5), st.just(0.0)),
    st.tuples(st.just("restore"), st.integers(0, 5), st.just(0.0)),
    st.tuples(st.just("purge"), st.integers(0, 5), st.just(0.0)),
)


def _every_value(mem: Memory) -> set[str]:
    """Every value of every stored record of the key, in any version (deleted ones too:
    restorable, so not lost), with the conflicts recorded."""
    flt = Filters(
        types=frozenset({RecordType.FACT}),
        metadata=(MetadataCondition("key", "eq", "city"),),
        include_deleted=True,
        include_superseded=True,
    )
    out: set[str] = set()
    for record in mem.store.list(ALICE, flt, limit=1000):
        for v in mem.store.history(ALICE, record.id):
            out.add(str(v.content.structured["value"]))
            out |= {str(c["value"]) for c in v.content.structured.get("conflicts", [])}
    return out


def _run(mem: Memory, steps: list[tuple[str, Any, float]]) -> None:
    made: list[str] = []  # every fact record made, in order
    deleted: list[str] = []  # those deleted now (a restore brings one of them back)
    holder: dict[str, str] = {}  # value -> the record that holds it (its own or a conflict)
    purged: set[str] = set()
    for op, arg, confidence in steps:
        if op == "upsert":
            outcome = mem.facts.upsert(ALICE, _fact(arg, confidence))
            if outcome.record.id not in made:
                made.append(outcome.record.id)
            holder[arg] = outcome.record.id
        else:
            pool = deleted if op == "restore" else [r for r in made if r not in purged]
            if not pool:
                continue
            rid = pool[arg % len(pool)]
            if op == "delete":
                mem.delete(ALICE, rid)
                deleted += [] if rid in deleted else [rid]
            elif op == "restore":
                mem.restore(ALICE, rid)
                deleted.remove(rid)
            else:
                mem.purge(ALICE, [rid])
                purged.add(rid)
                deleted = [r for r in deleted if r != rid]
        live = _live(mem)
        assert len(live) <= 1, [(_value(r), r.id) for r in live]
        current = mem.facts.get(ALICE, "city")
        assert [r.id for r in live] == ([] if current is None else [current.id])
        kept = {v for v, rid in holder.items() if rid not in purged}
        assert kept <= _every_value(mem), (kept, steps)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(_STEP, min_size=1, max_size=14))
@example(  # the lead's sequence, then an update
    steps=[
        ("upsert", "Paris", 0.9),
        ("delete", 0, 0.0),
        ("upsert", "Oslo", 0.9),
        ("restore", 0, 0.0),
        ("upsert", "Rome", 0.75),
    ]
)
@pytest.mark.parametrize("store", ["sqlite", "memory"])
def test_random_sequences_keep_one_live_fact_and_every_value(
    store: str, tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, Any, float]]
) -> None:
    url = (
        f"sqlite:///{tmp_path_factory.mktemp('seq') / 'm.db'}" if store == "sqlite" else "memory://"
    )
    with Memory(url, embedder="hashing", background=False) as mem:
        _run(mem, steps)


# --- documents: one live version per qa_id ---------------------------------------------------
def _doc_memory(url: str) -> Memory:
    from memstrata.layers.types import LayerConfig

    small = LayerConfig(chunk_tokens=40, chunk_overlap_tokens=5)
    return Memory(url, embedder="hashing", background=False, layer_config=small)


def _text(word: str) -> str:
    return " ".join(f"{word} line {i} of the timetable." for i in range(30))


def test_a_restored_chunk_of_a_document_written_again_since_is_its_version(url: str) -> None:
    """A one-chunk document deleted, ingested again (a first version), then the old chunk
    restored: the document is the restored one, the other soft-deleted (restorable)."""
    with Memory(url, embedder="hashing", background=False) as mem:
        old = mem.knowledge.ingest(ALICE, "the ferries leave at nine", "ferries")[0]
        mem.delete(ALICE, old.id)
        new = mem.knowledge.ingest(ALICE, "the ferries leave at ten", "ferries")[0]
        mem.restore(ALICE, old.id)
        assert [r.id for r in mem.knowledge.chunks(ALICE, "ferries")] == [old.id]
        assert mem.store.get(ALICE, new.id, include_deleted=True).is_active is False
        mem.restore(ALICE, new.id)  # and back again: the other way round
        assert [r.id for r in mem.knowledge.chunks(ALICE, "ferries")] == [new.id]


def test_a_restored_chunk_of_a_replaced_version_brings_the_version_back(url: str) -> None:
    with _doc_memory(url) as mem:
        first = mem.knowledge.ingest(ALICE, _text("boats"), "timetable")
        second = mem.knowledge.ingest(ALICE, _text("trains"), "timetable")
        assert len(first) > 2 and len(second) > 2
        mem.restore(ALICE, first[1].id)
        assert [r.id for r in mem.knowledge.chunks(ALICE, "timetable")] == [r.id for r in first]
        assert not any(mem.store.get(ALICE, r.id, include_deleted=True).is_active for r in second)


def test_a_restored_chunk_of_the_live_version_changes_nothing_else(url: str) -> None:
    with _doc_memory(url) as mem:
        chunks = mem.knowledge.ingest(ALICE, _text("boats"), "timetable")
        mem.delete(ALICE, chunks[1].id)
        mem.restore(ALICE, chunks[1].id)
        assert [r.id for r in mem.knowledge.chunks(ALICE, "timetable")] == [r.id for r in chunks]


def test_the_sequence_with_a_fixed_clock_and_a_redis_buffer(mem: Memory) -> None:
    """Every backend of ``conftest.mem`` (with Redis in front of PostgreSQL), where every
    record has the same times: the restored fact is current all the same."""
    paris = mem.facts.upsert(ALICE, _fact("Paris")).record
    mem.delete(ALICE, paris.id)
    oslo = mem.facts.upsert(ALICE, _fact("Oslo")).record
    mem.restore(ALICE, paris.id)
    assert [r.id for r in _live(mem)] == [paris.id]
    assert mem.store.get(ALICE, oslo.id).superseded_by == paris.id
    mem.facts.upsert(ALICE, _fact("Rome", 0.95))
    assert [_value(r) for r in _live(mem)] == ["Rome"]
    assert _values(mem) == {"Paris", "Oslo", "Rome"}


def test_the_async_api_restores_the_same_way(tmp_path: Path) -> None:
    import asyncio

    from memstrata import AsyncMemory

    async def run() -> None:
        url = f"sqlite:///{tmp_path / 'm.db'}"
        async with AsyncMemory(url, embedder="hashing", background=False) as mem:
            paris = (await mem.facts.upsert(ALICE, _fact("Paris"))).record
            await mem.delete(ALICE, paris.id)
            oslo = (await mem.facts.upsert(ALICE, _fact("Oslo"))).record
            await mem.restore(ALICE, paris.id)
            assert [r.id for r in await mem.facts.all(ALICE)] == [paris.id]
            assert (await mem.store.get(ALICE, oslo.id)).superseded_by == paris.id

    asyncio.run(run())
