"""A caller's reads change nothing of the owner's: the access counts and last-access times
that retention and forgetting read of the owner's records (and a cluster's hits, which
promote it to key memory) stay as they were, however often another user reads what was
shared with them — through ``search``, ``build_context``, ``get``, over HTTP and MCP.

Found by audit26, left for session 27: carol searching bob's shared notes raised their
access counts (and kept them alive, and raised their importance). Fixed: a caller's scope
counts nothing (``search``: no touch; the context's ``shown``: no touch, no hit; every
store's ``touch`` ignores a caller's scope). The owner's own reads still count."""

from __future__ import annotations

import asyncio

import anyio
import httpx

from memstrata import AsyncMemory, Memory, Scope

from .conftest import live_server, served  # noqa: F401

BOB = Scope("acme", "bob")
CAROL = BOB.as_caller("carol")


def _shared(mem: Memory) -> str:
    rec = mem.add(BOB, "the harbour ferry leaves at nine")
    mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol"])
    return rec.id


def _counts(mem: Memory, rid: str) -> tuple[int, object]:
    mem.store.flush_counters()
    rec = mem.get(BOB, rid)
    return rec.access_count, rec.last_accessed_at


def test_a_callers_reads_leave_the_owners_counts(mem: Memory) -> None:
    rid = _shared(mem)
    for _ in range(3):
        assert [h.id for h in mem.search(CAROL, "harbour ferry")] == [rid]
        built = mem.build_context(CAROL, "when does the ferry leave?", 2000)
        assert rid in {i.record_id for i in built.items}
        mem.get(CAROL, rid)
    assert _counts(mem, rid) == (0, None)
    mem.store.touch(CAROL, [rid], mem.clock.now())  # the store ignores it too
    assert _counts(mem, rid) == (0, None)


def test_the_owners_own_reads_still_count(mem: Memory) -> None:
    rid = _shared(mem)
    mem.search(BOB, "harbour ferry")
    mem.build_context(BOB, "when does the ferry leave?", 2000)
    count, last = _counts(mem, rid)
    assert count == 2 and last is not None


def test_a_callers_search_hit_shows_no_count(mem: Memory) -> None:
    """The owner's count is the owner's usage: a caller is shown 0 (view27's caller view;
    until then it was shown as stored)."""
    rid = _shared(mem)
    mem.search(BOB, "harbour ferry")
    hits = mem.search(CAROL, "harbour ferry")
    assert [(h.id, h.record.access_count) for h in hits] == [(rid, 0)]
    assert _counts(mem, rid)[0] == 1


def test_the_async_memory_counts_nothing_for_a_caller(url: str) -> None:
    async def main() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as mem:
            rec = await mem.add(BOB, "the harbour ferry leaves at nine")
            await mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol"])
            await mem.search(CAROL, "harbour ferry")
            await mem.build_context(CAROL, "ferry", 2000)
            await mem.store.flush_counters()
            got = await mem.get(BOB, rec.id)
            assert (got.access_count, got.last_accessed_at) == (0, None)

    asyncio.run(main())


def test_a_key_bound_to_another_user_counts_nothing(served) -> None:  # noqa: F811
    mem: Memory = served.memory
    rid = _shared(mem)
    h = served.h(served.keys.create("acme", user="carol").secret)
    c = served.client
    for _ in range(2):
        found = c.post("/v1/users/bob/search", json={"query": "harbour ferry"}, headers=h)
        assert found.status_code == 200 and rid in found.text, found.text
        built = c.post("/v1/users/bob/context", json={"query": "ferry"}, headers=h)
        assert built.status_code == 200 and rid in built.text, built.text
    owner = served.h(served.keys.create("acme", user="bob").secret)
    got = c.get(f"/v1/users/bob/memories/{rid}", headers=owner).json()
    assert (got["access_count"], got["last_accessed_at"]) == (0, None), got


def test_mcp_reads_by_another_users_key_count_nothing(live_server) -> None:  # noqa: F811
    """Over MCP: a key bound to carol naming bob in ``X-Memstrata-User`` is a caller."""
    from audit20.test_mcp_probes import _call, _text

    rid = _shared(live_server.memory)
    carol = live_server.keys.create("acme", user="carol").secret
    for tool, args in (("memory_search", {"query": "harbour ferry"}), ("memory_context", {})):
        r = anyio.run(_call, live_server.url, carol, "bob", tool, {**args})
        assert not r.is_error and (tool == "memory_context" or rid in _text(r)), _text(r)
    bob = live_server.keys.create("acme", user="bob").secret
    got = httpx.get(
        f"{live_server.url}/v1/users/bob/memories/{rid}", headers=live_server.h(bob), timeout=30
    )
    assert (got.json()["access_count"], got.json()["last_accessed_at"]) == (0, None), got.text


def test_a_callers_cluster_recall_counts_no_hit(mem: Memory) -> None:
    """``layers.mid_term.recall`` through a caller counted a hit on the owner's cluster at
    each call (and failed at the promotion the hits made due). Fails before the fix."""
    s1 = BOB.with_session("s1")
    for i in range(8):
        mem.add_message(s1, "user", f"I love sailing the ferry to the harbour {i}")
    mem.end_session(s1)
    mem.flush()
    clusters = mem.layers.mid_term.clusters(BOB)
    assert clusters
    for c in clusters:
        mem.set_access(BOB, c.id, visibility="shared", allowed_users=["carol"])
    (vector,) = mem.embedder.embed_batch(["sailing the ferry"], query=True)
    for _ in range(mem.layers.ctx.config.promote_hits + 1):
        found = mem.layers.mid_term.recall(CAROL, vector, k=3)
        assert {c.id for c, _ in found} <= {c.id for c in clusters} and found
    ids = [c.id for c in clusters]
    assert set(mem.layers.mid_term.hits(BOB, ids).values()) == {0}
    assert mem.key.list(BOB) == []
    mem.layers.mid_term.recall(BOB, vector, k=3)  # the owner's recall still counts
    assert sum(mem.layers.mid_term.hits(BOB, ids).values()) >= 1
