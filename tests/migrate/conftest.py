"""A non-trivial store to migrate: three tenants, several users, every status and kind."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memstrata import FixedClock, Memory, Scope
from memstrata.filters import Filters
from memstrata.jobs import Job

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
ALICE = Scope("acme", "alice", session="s1")
BOB = Scope("acme", "bob", session="s2")
CAROL = Scope("globex", "carol", agent="planner", session="s9")
ZHANG = Scope("示例公司", "张伟", session="会话1")
GONE = Scope("acme", "mallory", session="s1")


def populate(url: str) -> dict[str, int]:
    """Fill the store at ``url``; returns a few counts the tests check."""
    mem = Memory(url, embedder="hashing", clock=FixedClock(NOW), background=False)
    try:
        return _fill(mem)
    finally:
        mem.close()


def _fill(mem: Memory) -> dict[str, int]:
    store = mem.store
    mem.add_messages(
        ALICE,
        [
            {"role": "user", "content": "I'm allergic to peanuts."},
            {"role": "assistant", "content": "Noted: no peanuts."},
            {"role": "user", "content": "My sister lives in Porto.", "observed_at": "0001-01-01"},
            {
                "role": "user",
                "content": "Remind me in the year 9999.",
                "observed_at": datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            },
        ],
    )
    fact = mem.add(
        ALICE,
        "Alice is allergic to peanuts",
        type="fact",
        importance=0.9,
        tags=["health"],
        metadata={"topic": "food", "year": 2024},
    )
    fact = mem.update(
        ALICE,
        fact.id,
        content="Alice is allergic to peanuts and cashews",
        expected_version=fact.version,
    )
    fact = mem.update(ALICE, fact.id, tags=["health", "allergy"], expected_version=fact.version)
    note = mem.add(ALICE, "Alice prefers window seats", importance=0.4)
    mem.delete(ALICE, note.id)
    gone = mem.add(ALICE, "a note purged for real")
    mem.purge(ALICE.user_scope, [gone.id])
    deleted_then_restored = mem.add(ALICE, "Alice collects stamps")
    mem.delete(ALICE, deleted_then_restored.id)
    mem.restore(ALICE, deleted_then_restored.id)
    mem.key.set(ALICE, "Always answer in British English", priority=5)
    mem.tasks.start(ALICE, "Plan the Porto trip", ["book flights", "book hotel"])
    mem.tasks.update_step(ALICE, 0, "done")
    mem.search(ALICE.user_scope, "what is she allergic to?")  # counters, query cache
    mem.build_context(ALICE, "peanuts")

    mem.add_messages(
        BOB, [{"role": "user", "content": f"Bob's message number {i}"} for i in range(30)]
    )
    mem.add(BOB, "Bob's birthday is on 1 March", type="fact", observed_at="1999-03-01")
    mem.add(CAROL, "The plan has three phases", type="note", visibility="private")
    mem.add(CAROL, "Shared with every agent", type="knowledge", visibility="shared")
    mem.add_messages(
        ZHANG,
        [
            {"role": "user", "content": "我对花生过敏。"},
            {"role": "user", "content": "我住在上海，喜欢喝茶。"},
        ],
    )
    zh = mem.add(ZHANG, "张伟对花生过敏", type="fact")
    mem.update(ZHANG, zh.id, content="张伟对花生和腰果过敏", expected_version=zh.version)
    mem.search(ZHANG.user_scope, "花生")
    mem.add(GONE, "mallory's secret")
    mem.purge(GONE.user_scope)
    # One finished job run, then jobs in every state: pending (from the writes above),
    # running under a lease, failed with attempts.
    mem.flush(BOB)
    t = NOW + timedelta(hours=1)
    store.enqueue(
        [
            Job(
                id=f"extra-{i}",
                kind="refine_importance",
                tenant="acme",
                user="alice",
                payload={"n": i},
                created_at=t,
                run_after=t,
            )
            for i in range(3)
        ]
    )
    store.enqueue(
        [
            Job(
                id="doomed",
                kind="refine_importance",
                tenant="globex",
                user="carol",
                payload={"why": "fails"},
                created_at=t,
                run_after=t,
            )
        ]
    )
    claimed = store.claim_jobs(
        t + timedelta(seconds=1), limit=1, lease_seconds=600, tenant="acme", user="alice"
    )
    failed = store.claim_jobs(
        t + timedelta(hours=2), limit=10, lease_seconds=1, tenant="globex", user="carol"
    )
    for j in failed:
        store.fail_job(j.id, "boom: gave up", None, lease_token=j.lease_token)
    store.add_counts(ALICE.user_scope, "hits", {fact.id: 3, note.id: 1})
    store.flush_counters()
    return {
        "running": len(claimed),
        "failed": len(failed),
        "alice_records": store.count(ALICE.user_scope, Filters(include_deleted=True)),
    }


def bulk(url: str, records: int, *, text_chars: int = 60) -> None:
    """``records`` records of one tenant in four users, every tenth updated twice, every
    twentieth deleted, with cache entries: quick to build (straight into the store)."""
    from dataclasses import replace

    from memstrata.store import open_store
    from store.conftest import Maker

    maker = Maker()
    store = open_store(url)
    try:
        pad = "x" * max(0, text_chars - 30)
        for start in range(0, records, 500):
            writes = [
                maker.write(text=f"record {n} about rivers and tea {pad}", user=f"u{n % 4}")
                for n in range(start, min(records, start + 500))
            ]
            store.insert(writes)
            for w in writes[::10]:
                r = w.record
                scope = Scope(r.tenant, r.user)
                for v in (2, 3):
                    r = replace(r, version=v, importance=v / 10)
                    store.replace(scope, maker.write(r), expected_version=v - 1)
            for w in writes[::20]:
                store.set_status(
                    Scope(w.record.tenant, w.record.user), [w.record.id], "deleted", NOW
                )
            store.cache_vectors(
                Scope("t1", f"u{start % 4}"), "test", {f"q:{start}": writes[0].vector}
            )  # type: ignore[dict-item]
    finally:
        store.close()
