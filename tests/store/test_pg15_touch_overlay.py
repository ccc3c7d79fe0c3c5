"""A read of a record whose touch is still queued behind the searches adds it instead of
waiting for it (PostgreSQL, store.py ``_fresh``), and counts every access exactly once.

A touch no transaction has taken cannot be in the database, so the read may add it to the
row it read; one taken while the read ran may or may not be in it, and the row is read
again once written (as every pending touch was before). A replace keeps the stored counters,
as SQLite does, so a copy read with a queued touch added does not count that touch twice.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np

from memstrata.filters import Filters
from memstrata.records import RecordType
from memstrata.scope import Scope
from memstrata.store import RecordWrite, open_store
from memstrata.store.postgres import PostgresStore
from store.conftest import Maker

ME = Scope("t1", "u1")
AT = datetime(2026, 2, 1, tzinfo=UTC)


def test_reads_add_a_queued_touch_without_waiting(pg_url: str) -> None:
    store = open_store(pg_url)
    other = open_store(pg_url)
    assert isinstance(store, PostgresStore)
    maker = Maker(rng=np.random.default_rng(11))
    w = maker.write(maker.record(type=RecordType.NOTE))
    store.insert([w])
    rid = w.record.id
    release = threading.Event()
    store._behind.submit(lambda: release.wait(60) and None)  # the write-behind is busy
    store.touch(ME, [rid], AT)  # queued behind it
    store.touch(ME, [rid], AT + timedelta(hours=1))
    seen: dict[str, object] = {}

    def reads() -> None:
        seen["get"] = store.get(ME, rid).access_count
        many = store.get_many(ME, [rid])
        seen["get_many"] = [(r.access_count, r.last_accessed_at) for r in many]
        seen["list"] = [r.access_count for r in store.list(ME, Filters(), limit=5)]

    reader = threading.Thread(target=reads)
    reader.start()
    reader.join(timeout=30)
    try:
        assert not reader.is_alive(), "a read waited for touches no transaction had taken"
        assert seen == {
            "get": 2,
            "get_many": [(2, AT + timedelta(hours=1))],
            "list": [2],
        }
        assert other.get(ME, rid).access_count == 0  # not written yet
        release.set()
        store.flush_counters()
        assert other.get(ME, rid).access_count == 2  # written once, not added twice
        assert store.get(ME, rid).access_count == 2
    finally:
        release.set()
        store.close()
        other.close()


def test_every_read_counts_each_access_once_while_touches_are_written(pg_url: str) -> None:
    """Touches taken by the write-behind while a read runs: the read of each row still
    counts exactly the accesses made before it (read again when it cannot tell)."""
    store = open_store(pg_url)
    assert isinstance(store, PostgresStore)
    maker = Maker(rng=np.random.default_rng(12))
    writes = [maker.write() for _ in range(3)]
    store.insert(writes)
    ids = [w.record.id for w in writes]
    try:
        for i in range(150):
            store.touch(ME, ids, AT + timedelta(seconds=i))
            got = store.get_many(ME, ids)
            assert [r.access_count for r in got] == [i + 1] * 3
            assert {r.last_accessed_at for r in got} == {AT + timedelta(seconds=i)}
            assert store.get(ME, ids[i % 3]).access_count == i + 1
        store.flush_counters()
        assert [r.access_count for r in store.get_many(ME, ids)] == [150] * 3
    finally:
        store.close()


def test_a_replace_keeps_the_stored_counters(pg_url: str) -> None:
    store = open_store(pg_url)
    other = open_store(pg_url)
    maker = Maker(rng=np.random.default_rng(13))
    w = maker.write()
    store.insert([w])
    rid = w.record.id
    try:
        copy = store.get(ME, rid)  # read before the accesses
        store.touch(ME, [rid], AT)
        store.flush_counters()
        changed = replace(copy, importance=0.9, version=copy.version + 1)
        store.replace(ME, RecordWrite(changed, w.vector, w.terms), expected_version=copy.version)
        got = other.get(ME, rid)
        assert (got.version, got.importance) == (copy.version + 1, 0.9)
        assert (got.access_count, got.last_accessed_at) == (1, AT)  # the writer's 0 lost it
    finally:
        store.close()
        other.close()


def test_the_async_store_adds_a_queued_touch_without_waiting(pg_url: str) -> None:
    """The server's store: its write-behind runs as tasks of the loop; a read of a row whose
    touch waits behind a busy task returns the access at once, and it is written once."""
    import asyncio

    from memstrata.aio.pg_store import open_postgres

    maker = Maker(rng=np.random.default_rng(14))
    w = maker.write()

    async def main() -> tuple[int, bool, int]:
        store = await open_postgres(pg_url)
        try:
            await store.insert([w])
            release = asyncio.Event()
            await store._behind.submit(release.wait)  # the write-behind is busy
            await store.touch(ME, [w.record.id], AT)  # queued behind it
            read = asyncio.ensure_future(store.get_many(ME, [w.record.id]))
            done, _ = await asyncio.wait([read], timeout=10)
            seen = read.result()[0].access_count if done else -1
            release.set()
            await store.flush_counters()
            return seen, bool(done), (await store.get(ME, w.record.id)).access_count
        finally:
            await store.aclose()

    seen, done, written = asyncio.run(main())
    assert done, "the read waited for a touch no transaction had taken"
    assert (seen, written) == (1, 1)
