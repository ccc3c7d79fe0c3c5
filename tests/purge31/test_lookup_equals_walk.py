"""The index of citations finds what the walk it replaced found (purge31).

On random stores — derived records of every type citing turns and one another in
``source_ids``, a cluster's ``members`` and a fact's conflicts' ``source_ids``, then
changed (new sources), forgotten, superseded, purged — ``rederive.stale_derived`` (both
ways: current records, and deleted and superseded ones too) and
``consolidation.stale_summaries`` give, for random sets of ids (``[purged]`` among them),
what the walk of every record of the user gave (the code before purge31, kept here as the
reference), in the same order; so do the facts ended by one of them (``superseded_by``),
which ``rederive._orphans`` re-links after a purge."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Memory, Message, Scope
from memstrata.audit_types import PURGED
from memstrata.consolidation import stale_summaries
from memstrata.filters import Filters
from memstrata.layers.semantic_types import fact_sources
from memstrata.records import Content, MemoryRecord, RecordType, Role
from memstrata.rederive import citing, stale_derived
from memstrata.store.types import RecordWrite

TYPES = ["note", "procedure", "summary", "cluster", "fact", "episode", "key", "task"]
_NOT_DERIVED = {RecordType.MESSAGE, RecordType.SUMMARY}


def _sources(record: MemoryRecord) -> tuple[str, ...]:  # rederive._sources, as it was
    if record.type is RecordType.FACT:
        return fact_sources(record)
    if record.type is RecordType.CLUSTER:
        members = record.content.structured.get("members", [])
        return tuple(dict.fromkeys([*record.source_ids, *(str(m) for m in members)]))
    return record.source_ids


def _every(mem: Memory, scope: Scope, flt: Filters) -> list[MemoryRecord]:
    return [r for batch in mem.store.list_pages(scope, flt, batch_size=7) for r in batch]


def walk_derived(
    mem: Memory, scope: Scope, gone: set[str], everything: bool
) -> list[tuple[str, tuple[str, ...]]]:
    flt = Filters(include_deleted=everything, include_superseded=everything)
    out = []
    for r in _every(mem, scope, flt):
        if r.type in _NOT_DERIVED or r.id in gone:
            continue
        dropped = tuple(i for i in _sources(r) if i in gone)
        if dropped:
            out.append((r.id, dropped))
    return out


def walk_summaries(mem: Memory, scope: Scope, gone: set[str]) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for s in _every(mem, scope, Filters(types=frozenset({RecordType.SUMMARY}))):
        dropped = tuple(i for i in s.source_ids if i in gone)
        if dropped:
            out.append((s.id, dropped))
    return out


record = st.fixed_dictionaries(
    {
        "type": st.sampled_from(TYPES),
        "sources": st.lists(st.integers(0, 11), max_size=3),
        "members": st.lists(st.integers(0, 11), max_size=3),
        "conflicts": st.lists(st.lists(st.integers(0, 11), max_size=2), max_size=2),
        "then": st.sampled_from(["keep", "change", "forget", "supersede", "purge"]),
        "later": st.lists(st.integers(0, 11), max_size=2),
    }
)
stores = st.lists(record, min_size=1, max_size=8)
asks = st.lists(st.sets(st.integers(0, 19), max_size=4), min_size=1, max_size=3)


def _build(mem: Memory, specs: list[dict[str, Any]]) -> tuple[Scope, list[str]]:
    scope = Scope("acme", "u" + uuid.uuid4().hex[:8], session="s1")
    owner = scope.user_scope
    turns = mem.add_messages(
        scope, [Message(Role.USER, f"turn {i} says {i * 7}") for i in range(6)]
    )
    ids = [t.id for t in turns]  # 0..5 turns, then the derived records
    made: list[MemoryRecord] = []
    for n, spec in enumerate(specs):
        pick = [ids[i % len(ids)] for i in spec["sources"]]
        r = mem.add(
            owner, f"derived {n} {spec['type']}", type=spec["type"], source_ids=pick, dedup=False
        )
        structured: dict[str, Any] = {}
        if spec["members"]:
            structured["members"] = [ids[i % len(ids)] for i in spec["members"]]
        if spec["conflicts"]:
            structured["conflicts"] = [
                {"value": "v", "source_ids": [ids[i % len(ids)] for i in c]}
                for c in spec["conflicts"]
            ]
        if structured:
            new = replace(r, version=r.version + 1, content=Content(r.text, None, structured))
            mem.store.replace(owner, RecordWrite(new, None, ()), expected_version=r.version)
            r = new
        made.append(r)
        ids.append(r.id)
    for spec, r in zip(specs, made, strict=True):
        r = mem.store.get(owner, r.id, include_deleted=True)
        if spec["then"] == "change":
            later = tuple(ids[i % len(ids)] for i in spec["later"])
            new = replace(r, version=r.version + 1, source_ids=later, content=Content(r.text))
            mem.store.replace(owner, RecordWrite(new, None, ()), expected_version=r.version)
        elif spec["then"] == "forget":
            mem.forget(owner, [r.id])
        elif spec["then"] == "supersede":  # by a turn or a record (purged later, maybe)
            by = ids[spec["later"][0] % len(ids)] if spec["later"] else ids[0]
            new = replace(r, version=r.version + 1, superseded_by=by)
            mem.store.replace(owner, RecordWrite(new, None, ()), expected_version=r.version)
        elif spec["then"] == "purge":
            mem.store.purge(owner, [r.id])
    return owner, ids


def _check(mem: Memory, specs: list[dict[str, Any]], gone_sets: list[set[int]]) -> None:
    owner, ids = _build(mem, specs)
    ctx = mem._ctx
    for picks in gone_sets:
        gone = {ids[i % len(ids)] for i in picks if i < 18} | ({PURGED} if 18 in picks else set())
        for everything in (False, True):
            found = [(r.id, d) for r, d in stale_derived(ctx, owner, gone, everything=everything)]
            assert found == walk_derived(mem, owner, gone, everything)
        found = [(s.id, d) for s, d in stale_summaries(ctx, owner, gone)]
        assert found == walk_summaries(mem, owner, gone)
        facts = Filters(
            types=frozenset({RecordType.FACT}), include_deleted=True, include_superseded=True
        )
        ended = [r.id for r in citing(ctx, owner, gone, facts) if r.superseded_by in gone]
        assert ended == [r.id for r in _every(mem, owner, facts) if r.superseded_by in gone]


def test_the_lookup_finds_what_the_walk_found(url: str) -> None:
    examples = 12 if url.startswith("postgresql") else 40
    with Memory(url, embedder="hashing", background=False) as mem:

        @settings(
            max_examples=examples,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(stores, asks)
        def check(specs: list[dict[str, Any]], gone_sets: list[set[int]]) -> None:
            _check(mem, specs, gone_sets)

        check()


def test_a_fact_ended_by_a_purged_record_is_found_by_purged(url: str) -> None:
    """The store's purge makes the fact say ``superseded_by: [purged]`` (purged_reader.py):
    the index follows, and ``_orphans``' look-up finds it under ``[purged]``."""
    specs = [
        {"type": "fact", "sources": [1], "members": [], "conflicts": [], "then": "supersede"},
        {"type": "note", "sources": [2], "members": [], "conflicts": [], "then": "purge"},
    ]
    specs[0]["later"] = [7]  # ids[7]: the note (6 turns, then the fact, then the note)
    specs[1]["later"] = []
    with Memory(url, embedder="hashing", background=False) as mem:
        owner, ids = _build(mem, specs)
        fact = mem.store.get(owner, ids[6], include_deleted=True)
        assert fact.superseded_by == PURGED
        ctx = mem._ctx
        facts = Filters(
            types=frozenset({RecordType.FACT}), include_deleted=True, include_superseded=True
        )
        assert [r.id for r in citing(ctx, owner, {PURGED}, facts)] == [fact.id]
        assert citing(ctx, owner, {ids[7]}, facts) == []
        _check(mem, specs, [{18}, {7, 18}, {1, 2}])
