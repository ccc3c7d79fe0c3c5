"""A store purge rewrites what it rewrote when it scanned the user's rows (purge31b).

The store's purge gives ``[purged]`` for a purged id in what the user's other records say
of it, in every version (store/purged_reader.py): it now finds those records by the index
of links (SQLite: link rows in ``rr``; PostgreSQL: step 29's indexes; memory://: a dict),
not by a scan of the user's rows (old_scan.py keeps that code). On random stores —
records of every type whose versions name one another in ``source_ids``, ``superseded_by``,
a fact's ``replaces``/``carries_out``, a layer's id field, a cluster's ``members``, a
refreshed note's ``dropped_sources`` (a later note replacing an earlier one) and a
relation's target — two users are built alike; random records of each are purged, one
user's by today's code, the other's by the scan; every version of every record left is
the same (ids read as their place in the build), and so is each purge's report."""

from __future__ import annotations

import types
import uuid
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Memory, Message, Scope
from memstrata.records import Content, MemoryRecord, Relation, Role
from memstrata.store.types import RecordWrite

from . import old_scan

TYPES = ["note", "procedure", "summary", "cluster", "fact", "episode", "key", "task"]
TURNS = 3
ref = st.integers(0, 11)  # a turn or a record (modulo how many there are)
version = st.fixed_dictionaries(
    {
        "sources": st.lists(ref, max_size=2),
        "superseded_by": st.none() | ref,
        "links": st.dictionaries(
            st.sampled_from(["replaces", "carries_out", "promoted_key", "episode_id"]),
            ref,
            max_size=2,
        ),
        "members": st.lists(ref, max_size=2),
        "cluster_id": st.none() | ref,
        "dropped": st.none() | st.lists(ref, min_size=1, max_size=2),
        "related": st.lists(ref, max_size=2),
    }
)
record = st.fixed_dictionaries(
    {"type": st.sampled_from(TYPES), "versions": st.lists(version, max_size=3)}
)
stores = st.lists(record, min_size=1, max_size=7)
purges = st.lists(st.sets(ref, min_size=1, max_size=3), min_size=1, max_size=2)


def _version(r: MemoryRecord, spec: dict[str, Any], ids: list[str]) -> MemoryRecord:
    def at(i: int) -> str:
        return ids[i % len(ids)]

    structured: dict[str, Any] = {k: at(v) for k, v in spec["links"].items()}
    if spec["members"]:
        structured["members"] = [at(i) for i in spec["members"]]
    metadata: dict[str, Any] = {}
    if spec["cluster_id"] is not None:
        metadata["cluster_id"] = at(spec["cluster_id"])
    if spec["dropped"] is not None:
        metadata["refreshed"] = {"dropped_sources": [at(i) for i in spec["dropped"]]}
    sup = spec["superseded_by"]
    return replace(
        r,
        version=r.version + 1,
        source_ids=tuple(at(i) for i in spec["sources"]),
        superseded_by=None if sup is None else at(sup),
        content=Content(r.text, None, structured),
        metadata=metadata,
        relations=tuple(Relation("similar_to", at(i)) for i in spec["related"]),
    )


def _build(mem: Memory, specs: list[dict[str, Any]], user: str) -> tuple[Scope, list[str]]:
    scope = Scope("acme", user, session="s1")
    owner = scope.user_scope
    turns = mem.add_messages(scope, [Message(Role.USER, f"turn {i}") for i in range(TURNS)])
    ids = [t.id for t in turns]
    for n, spec in enumerate(specs):
        ids.append(mem.add(owner, f"record {n}", type=spec["type"], dedup=False, importance=0.5).id)
    for n, spec in enumerate(specs):  # the versions name records made before or after
        for v in spec["versions"]:
            r = mem.store.get(owner, ids[TURNS + n], include_deleted=True)
            new = _version(r, v, ids)
            mem.store.replace(owner, RecordWrite(new, None, ()), expected_version=r.version)
    return owner, ids


def _named(value: Any, place: dict[str, str]) -> Any:
    if isinstance(value, str):
        return place.get(value, value)
    if isinstance(value, list | tuple):
        return [_named(v, place) for v in value]
    if isinstance(value, dict):
        return {k: _named(v, place) for k, v in value.items()}
    return value


def _state(mem: Memory, owner: Scope, ids: list[str]) -> list[Any]:
    """Every version of every record left, its ids read as their place in the build."""
    place = {rid: f"#{n}" for n, rid in enumerate(ids)}
    left = mem.store.get_many(owner, ids)  # deleted and superseded ones too
    found = {r.id: r for r in left}
    out: list[Any] = []
    for n, rid in enumerate(ids):
        if rid not in found:
            out.append((n, None))
            continue
        versions = [*mem.store.history(owner, rid), found[rid]]
        out.append(
            (
                n,
                [
                    (
                        v.version,
                        _named(v.superseded_by, place),
                        _named(v.content.structured, place),
                        _named(dict(v.metadata), place),
                        _named(v.source_ids, place),
                        [(x.kind, _named(x.target_id, place)) for x in v.relations],
                    )
                    for v in versions
                ],
            )
        )
    return out


def _scan(store: Any) -> Any:
    """``store``'s ``_unlink_superseded`` as it was before purge31b."""
    name = type(store).__name__
    old: Any = {
        "SQLiteStore": old_scan.sqlite_scan,
        "PostgresStore": old_scan.postgres_scan,
        "InMemoryStore": old_scan.memory_scan,
    }[name]
    return types.MethodType(old, store)


def _check(mem: Memory, specs: list[dict[str, Any]], rounds: list[set[int]]) -> None:
    tag = uuid.uuid4().hex[:8]
    (new_owner, new_ids), (old_owner, old_ids) = (
        _build(mem, specs, f"n{tag}"),
        _build(mem, specs, f"o{tag}"),
    )
    assert _state(mem, new_owner, new_ids) == _state(mem, old_owner, old_ids)
    store: Any = mem.store
    for picks in rounds:
        new_report = store.purge(new_owner, [new_ids[i % len(new_ids)] for i in sorted(picks)])
        store._unlink_superseded = _scan(store)
        try:
            old_report = store.purge(old_owner, [old_ids[i % len(old_ids)] for i in sorted(picks)])
        finally:
            del store._unlink_superseded
        assert new_report == old_report
        assert _state(mem, new_owner, new_ids) == _state(mem, old_owner, old_ids)


def test_the_index_rewrites_what_the_scan_rewrote(url: str) -> None:
    examples = 15 if url.startswith("postgresql") else 50
    with Memory(url, embedder="hashing", background=False) as mem:

        @settings(
            max_examples=examples,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(stores, purges)
        def check(specs: list[dict[str, Any]], rounds: list[set[int]]) -> None:
            _check(mem, specs, rounds)

        check()


def test_an_earlier_note_names_the_purged_record(url: str) -> None:
    """A refreshed record whose earlier note dropped a record, replaced by a later note:
    the purge of that record marks the earlier note (found by the index); one whose
    earlier version cited it, its note naming another: the earlier version cites it no
    more (the index keeps an id a write takes out of the citations as a link)."""
    blank: dict[str, Any] = {
        "sources": [],
        "superseded_by": None,
        "links": {},
        "members": [],
        "cluster_id": None,
        "dropped": None,
        "related": [],
    }
    specs = [
        {"type": "note", "versions": [{**blank, "sources": [0, 4]}]},
        {
            "type": "summary",
            "versions": [
                {**blank, "sources": [3, 0]},
                {**blank, "sources": [0], "dropped": [3]},
                {**blank, "sources": [0], "dropped": [1]},
            ],
        },
        {  # an earlier version cited it; no note names it
            "type": "note",
            "versions": [{**blank, "sources": [3, 1]}, {**blank, "sources": [1], "dropped": [2]}],
        },
    ]
    with Memory(url, embedder="hashing", background=False) as mem:
        _check(mem, specs, [{3}])
        owner, ids = _build(mem, specs, "solo")
        mem.store.purge(owner, [ids[3]])
        versions = mem.store.history(owner, ids[4])
        notes = [v.metadata.get("refreshed") for v in versions]
        assert {"dropped_sources": ["[purged]"]} in notes, notes
        assert all(ids[3] not in v.source_ids for v in versions)
        assert all(ids[3] not in v.source_ids for v in mem.store.history(owner, ids[5]))
