"""What a caller (``Scope.as_caller``: carol reading what bob shared with her) is shown of a
shared record, through every read path, on every store, sync, async, HTTP and MCP.

Before session 27 a caller read the record as stored: who else bob shares it with
(``access.allowed_users``, other users' ids), bob's roles list, bob's access count and last
access, and ``source_ids`` naming bob's unshared records. Now a caller is shown
:func:`memstrata.records.caller_view`: the caller alone among the readers, only the roles it
holds, no count, last access or decay, and only ids it may read. Applied in one place
(``store/caller_view.py``, the store every read of ``Memory`` goes through). The owner still
reads everything as stored. Each test here fails before the change."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from io import StringIO
from typing import Any

import anyio
import httpx

from memstrata import AsyncMemory, Memory, Scope
from memstrata.records import (
    AccessControl,
    Content,
    MemoryRecord,
    RecordType,
    Relation,
)

from .conftest import live_server, served  # noqa: F401

BOB = Scope("acme", "bob")
CAROL = BOB.as_caller("carol", {"viewer"})
TEXT = "the harbour ferry leaves at nine"


@dataclass
class Shared:
    rid: str
    private: str  # an unshared record of bob's that the shared one names
    readable: str  # a record shared with carol too, that the shared one names


def _shared(mem: Memory) -> Shared:
    private = mem.add(BOB, "private: dave's clinic visit on tuesday")
    other = mem.add(BOB, "the ferry timetable changed in may")
    mem.set_access(BOB, other.id, visibility="shared", allowed_users=["carol"])
    rec = mem.add(BOB, TEXT, source_ids=[private.id, other.id], metadata={"pier": "north"})
    mem.set_access(
        BOB,
        rec.id,
        visibility="shared",
        allowed_users=["dave", "carol", "erin"],
        allowed_roles=["admin", "viewer"],
    )
    mem.search(BOB, "harbour ferry")  # the owner's reads count
    mem.search(BOB, "harbour ferry")
    mem.store.flush_counters()
    return Shared(rec.id, private.id, other.id)


def _check(seen: Any, s: Shared) -> None:
    """A record (or its JSON) as carol must be shown it."""
    d = seen if isinstance(seen, dict) else _as_dict(seen)
    assert d["access"]["allowed_users"] == ["carol"], d
    assert d["access"]["allowed_roles"] == ["viewer"], d
    assert d["access_count"] == 0 and d["last_accessed_at"] is None, d
    assert s.private not in d["source_ids"] and s.readable in d["source_ids"], d
    assert d["metadata"].get("pier") == "north"  # the content's own data stays


def _as_dict(r: MemoryRecord) -> dict[str, Any]:
    return {
        "access": {
            "allowed_users": list(r.access.allowed_users),
            "allowed_roles": list(r.access.allowed_roles),
        },
        "access_count": r.access_count,
        "last_accessed_at": r.last_accessed_at,
        "source_ids": list(r.source_ids),
        "metadata": dict(r.metadata),
    }


def _dicts(x: Any) -> list[dict[str, Any]]:
    """Every JSON object in ``x``, nested ones included."""
    if isinstance(x, list):
        return [d for v in x for d in _dicts(v)]
    if not isinstance(x, dict):
        return []
    return [x, *(d for v in x.values() for d in _dicts(v))]


def test_the_owner_reads_the_record_as_stored(mem: Memory) -> None:
    s = _shared(mem)
    rec = mem.get(BOB, s.rid)
    assert rec.access.allowed_users == ("dave", "carol", "erin")
    assert rec.access.allowed_roles == ("admin", "viewer")
    assert rec.access_count == 2 and rec.last_accessed_at is not None
    assert s.private in rec.source_ids


def test_get_and_list_show_the_callers_view(mem: Memory) -> None:
    s = _shared(mem)
    _check(mem.get(CAROL, s.rid), s)
    listed = {r.id: r for r in mem.list(CAROL)}
    assert set(listed) == {s.rid, s.readable}
    _check(listed[s.rid], s)


def test_search_hits_show_the_callers_view(mem: Memory) -> None:
    s = _shared(mem)
    for mode in ("hybrid", "lexical", "dense"):
        hits = {h.id: h for h in mem.search(CAROL, "harbour ferry nine", mode=mode)}
        _check(hits[s.rid].record, s)


def test_history_and_export_show_the_callers_view(mem: Memory) -> None:
    s = _shared(mem)
    versions = mem.history(CAROL, s.rid)
    assert versions
    for v in versions:
        _check(v, s)
    out = StringIO()
    mem.export_records(CAROL, out)
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    mine = [d for x in lines for d in _dicts(x) if d.get("id") == s.rid and "access" in d]
    assert mine, lines
    for line in mine:
        _check(line, s)
    assert s.private not in out.getvalue() and "dave" not in out.getvalue()
    assert "erin" not in out.getvalue() and "admin" not in out.getvalue()


def test_a_context_names_no_unshared_source(mem: Memory) -> None:
    s = _shared(mem)
    built = mem.build_context(CAROL, "when does the harbour ferry leave?", 2000)
    (item,) = [i for i in built.items if i.record_id == s.rid]
    assert s.private not in item.source_ids


def test_the_async_memory_shows_the_callers_view(url: str) -> None:
    async def main() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as amem:
            private = await amem.add(BOB, "private: dave's clinic visit on tuesday")
            rec = await amem.add(BOB, TEXT, source_ids=[private.id])
            await amem.set_access(BOB, rec.id, visibility="shared", allowed_users=["dave", "carol"])
            await amem.search(BOB, "harbour ferry")
            await amem.store.flush_counters()
            seen = [await amem.get(CAROL, rec.id), *await amem.list(CAROL)]
            seen += [h.record for h in await amem.search(CAROL, "harbour ferry")]
            seen += await amem.history(CAROL, rec.id)
            for r in seen:
                assert r.access.allowed_users == ("carol",)
                assert (r.access_count, r.last_accessed_at) == (0, None)
                assert private.id not in r.source_ids
            assert (await amem.get(BOB, rec.id)).access_count == 1

    asyncio.run(main())


def test_http_with_a_key_bound_to_the_caller(served) -> None:  # noqa: F811
    s = _shared(served.memory)
    h = served.h(served.keys.create("acme", user="carol", roles=["viewer"]).secret)
    c = served.client
    got = c.get(f"/v1/users/bob/memories/{s.rid}", headers=h)
    assert got.status_code == 200, got.text
    _check(got.json(), s)
    listed = c.get("/v1/users/bob/memories", headers=h)
    assert listed.status_code == 200, listed.text
    for item in listed.json()["items"]:
        if item["id"] == s.rid:
            _check(item, s)
    found = c.post("/v1/users/bob/search", json={"query": "harbour ferry"}, headers=h)
    assert found.status_code == 200 and s.rid in found.text, found.text
    history = c.get(f"/v1/users/bob/memories/{s.rid}/history", headers=h)
    exported = c.get("/v1/users/bob/export", headers=h)
    for r in (found, history, exported):
        assert r.status_code == 200, r.text
        for secret in ("dave", "erin", "admin", s.private):
            assert secret not in r.text, (secret, r.text)
    owner = served.h(served.keys.create("acme", user="bob").secret)
    mine = c.get(f"/v1/users/bob/memories/{s.rid}", headers=owner).json()
    assert "dave" in mine["access"]["allowed_users"] and mine["access_count"] == 2


def test_mcp_with_a_key_bound_to_the_caller(live_server) -> None:  # noqa: F811
    from audit20.test_mcp_probes import _call, _text

    s = _shared(live_server.memory)
    carol = live_server.keys.create("acme", user="carol", roles=["viewer"]).secret
    for tool, args in (
        ("memory_get", {"id": s.rid}),
        ("memory_list", {}),
        ("memory_search", {"query": "harbour ferry"}),
    ):
        r = anyio.run(_call, live_server.url, carol, "bob", tool, args)
        text = _text(r)
        assert not r.is_error and s.rid in text, text
        for secret in ("dave", "erin", "admin", s.private):
            assert secret not in text, (tool, secret, text)
    bob = live_server.keys.create("acme", user="bob").secret
    got = httpx.get(
        f"{live_server.url}/v1/users/bob/memories/{s.rid}", headers=live_server.h(bob), timeout=30
    )
    assert "dave" in got.text


def test_caller_view_keeps_only_readable_ids() -> None:
    from memstrata.records import caller_view  # new in session 27

    at = datetime(2026, 1, 1, tzinfo=UTC)
    rec = MemoryRecord(
        "r1",
        "acme",
        "bob",
        RecordType.FACT,
        Content("x"),
        at,
        at,
        at,
        access_count=7,
        last_accessed_at=at,
        decay_score=0.3,
        superseded_by="hidden2",
        relations=(Relation("similar_to", "shown"), Relation("similar_to", "hidden")),
        access=AccessControl("shared", ("dave", "carol"), ("admin", "viewer")),
        source_ids=("r1", "shown", "hidden"),
    )
    seen = caller_view(rec, CAROL, frozenset({"r1", "shown"}))
    assert seen.access == AccessControl("shared", ("carol",), ("viewer",))
    assert (seen.access_count, seen.last_accessed_at, seen.decay_score) == (0, None, 1.0)
    assert seen.source_ids == ("r1", "shown")
    assert seen.relations == (Relation("similar_to", "shown"),)
    assert seen.superseded_by is None
    assert caller_view(rec, BOB, frozenset()) is rec
    cluster = replace(
        rec,
        type=RecordType.CLUSTER,
        content=Content("c", structured={"hits": 9, "promoted_key": "hidden", "count": 3}),
        metadata={"cluster_id": "hidden"},  # not a field of a cluster's layer: the user's
    )
    shown = caller_view(cluster, CAROL, frozenset())
    assert shown.content.structured == {"hits": 0, "promoted_key": None, "count": 3}
    assert shown.metadata == {"cluster_id": "hidden"}
    key = replace(rec, type=RecordType.KEY, metadata={"cluster_id": "hidden", "priority": 2})
    assert caller_view(key, CAROL, frozenset()).metadata == {"cluster_id": None, "priority": 2}
    assert caller_view(key, CAROL, frozenset({"hidden"})).metadata["cluster_id"] == "hidden"
    assert caller_view(rec, CAROL, frozenset({"hidden2"})).superseded_by == "hidden2"


def test_a_callers_ranking_and_explanation_hold_no_owner_usage(mem: Memory) -> None:
    """The access term of a hit's score (``access_heat`` of the access count) showed the
    owner's count to a caller in ``explain`` (invertible) and, with ``access_weight``,
    ordered a caller's hits by how often the owner read them."""
    from memstrata import SearchConfig

    cold = mem.add(BOB, "ferry schedule one")
    hot = mem.add(BOB, "ferry schedule two")
    for rid in (cold.id, hot.id):
        mem.set_access(BOB, rid, visibility="shared", allowed_users=["carol"])
    for _ in range(6):
        mem.search(BOB, "schedule two", top_k=1)
    mem.store.flush_counters()
    cfg = SearchConfig(access_weight=5.0)

    def seen(scope: Scope) -> list[tuple[str, float]]:
        hits = mem.search(scope, "ferry schedule", explain=True, mode="lexical", config=cfg)
        return [(h.id, (h.explanation or {})["access"]) for h in hits]

    assert dict(seen(BOB))[hot.id] > 0.5  # the owner's own
    theirs = seen(CAROL)
    assert [a for _, a in theirs] == [0.0, 0.0], theirs
    # a tie: the fused order (the store's, the first written first), not the owner's reads
    # (the hot record first); since session 31 equal scores keep that order, not the ids'
    assert [i for i, _ in seen(BOB)][0] == hot.id
    assert [i for i, _ in theirs] == [cold.id, hot.id]


def test_a_shared_cluster_and_key_name_only_what_the_caller_reads(mem: Memory) -> None:
    """A cluster's promoted key and a promoted key's cluster are ids the layers write into
    the content (``structured["promoted_key"]``, ``metadata["cluster_id"]``), and a
    cluster keeps the owner's recall hits there: shown to a caller as ``None`` (unless it
    reads that record) and 0."""
    s1 = BOB.with_session("s1")
    for i in range(8):
        mem.add_message(s1, "user", f"I love sailing the ferry to the harbour {i}")
    mem.end_session(s1)
    mem.flush()
    (vector,) = mem.embedder.embed_batch(["sailing the ferry"], query=True)
    for _ in range(mem.layers.ctx.config.promote_hits + 2):
        mem.layers.mid_term.recall(BOB, vector, k=3)
    mem.flush()
    promoted = [
        c for c in mem.layers.mid_term.clusters(BOB) if c.content.structured.get("promoted_key")
    ]
    assert promoted, "no cluster was promoted"
    cluster = promoted[0]
    key_id = cluster.content.structured["promoted_key"]
    assert mem.get(BOB, key_id).metadata.get("cluster_id") == cluster.id
    mem.set_access(BOB, cluster.id, visibility="shared", allowed_users=["carol"])
    seen = mem.get(CAROL, cluster.id).content.structured
    assert seen["promoted_key"] is None, seen
    mem.set_access(BOB, key_id, visibility="shared", allowed_users=["carol"])
    assert mem.get(CAROL, cluster.id).content.structured["promoted_key"] == key_id
    mem.set_access(BOB, cluster.id, visibility="private", allowed_users=[])
    assert mem.get(CAROL, key_id).metadata.get("cluster_id") is None
    assert mem.get(BOB, key_id).metadata.get("cluster_id") == cluster.id


def test_the_layer_routes_show_the_callers_view(served) -> None:  # noqa: F811
    """The layers' read routes (key memory, facts, a fact's history, the inspector) read
    through the layer services, whose store is the same caller view."""
    from memstrata.llm.models import ExtractedFact

    mem: Memory = served.memory
    key = mem.key.set(BOB, "bob prefers the window seat on the ferry", priority=2)
    fact = mem.facts.upsert(
        BOB, ExtractedFact(category="preference", key="seat", value="window", confidence=0.9)
    ).record
    for rid in (key.id, fact.id):
        mem.set_access(BOB, rid, visibility="shared", allowed_users=["carol", "dave"])
    mem.search(BOB, "window seat ferry")
    h = served.h(served.keys.create("acme", user="carol").secret)
    c = served.client
    for path in (
        "/v1/users/bob/key-memory",
        "/v1/users/bob/facts",
        "/v1/users/bob/facts/seat",
        "/v1/users/bob/facts/seat/history",
        "/v1/users/bob/layers",
    ):
        got = c.get(path, headers=h)
        assert got.status_code == 200, (path, got.text)
        assert (key.id in got.text or fact.id in got.text) and "dave" not in got.text, (
            path,
            got.text,
        )
        assert '"access_count":0' in got.text.replace(" ", ""), (path, got.text)
