"""The async PostgreSQL store (``memstrata._async.store.postgres``) against a real server.

Each test writes the same records to a sync :class:`PostgresStore` and an
:class:`AsyncPostgresStore` on schemas of their own and compares their answers: the async
store is the source the sync one is generated from, so both must answer alike. The last
test shows that the async store does not block the event loop: a slow query of one
coroutine does not hold up another's.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import numpy as np
import pytest

from memstrata._async.store.base import AsyncStore
from memstrata._async.store.postgres.store import AsyncPostgresStore
from memstrata.aio.pg_store import open_postgres
from memstrata.audit import AuditEvent, AuditQuery
from memstrata.errors import ConflictError
from memstrata.filters import Filters
from memstrata.jobs import Job
from memstrata.records import RecordStatus, RecordType
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize
from memstrata.store.base import RecordWrite
from memstrata.store.postgres import PostgresStore
from memstrata.store.quota_counters import Take
from servers import PgServer
from store.conftest import DIMS, Maker, unit

T = TypeVar("T")

ME = Scope("t1", "u1")
OTHER = Scope("t1", "u2")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def urls(pg_server: PgServer) -> Iterator[tuple[str, str]]:
    """Two empty schemas: one for the sync store, one for the async store."""
    schemas = ["t_" + uuid.uuid4().hex[:16] for _ in range(2)]
    yield pg_server.url(schemas[0]), pg_server.url(schemas[1])
    for schema in schemas:
        pg_server.drop(schema)


def _writes() -> list[RecordWrite]:
    """The same records every call (a fixed-seed maker)."""
    m = Maker()
    texts = [
        "the cat sat on the mat",
        "dogs chase cats around the garden",
        "a quiet evening with a good book",
        "the garden needs water in summer",
        "cats and dogs can be friends",
        "summer holidays by the sea",
    ]
    out = [m.write(m.record(t)) for t in texts]
    out += [m.write(m.record(f"other user's note {i} about cats", user="u2")) for i in range(3)]
    out.append(m.write(m.record("a turn about the garden", type=RecordType.MESSAGE)))
    return out


def _both(
    urls: tuple[str, str],
    sync_part: Callable[[PostgresStore], T],
    async_part: Callable[[AsyncPostgresStore], Awaitable[T]],
) -> tuple[T, T]:
    """``sync_part`` on a sync store and ``async_part`` on an async store, each on the
    same records (inserted first), each on a schema of its own."""
    writes = _writes()
    sync_store = PostgresStore(urls[0])
    try:
        sync_store.insert(writes)
        got_sync = sync_part(sync_store)
    finally:
        sync_store.close()

    async def main() -> T:
        store = await AsyncPostgresStore(urls[1]).open()
        try:
            await store.insert(writes)
            return await async_part(store)
        finally:
            await store.aclose()

    return got_sync, asyncio.run(main())


def test_the_async_store_is_an_async_store(urls: tuple[str, str]) -> None:
    async def main() -> tuple[bool, str]:
        store = await open_postgres(urls[1])
        typed: AsyncStore = store  # mypy checks the whole protocol here
        try:
            return isinstance(typed, AsyncStore), repr(store)
        finally:
            await store.aclose()

    is_store, text = asyncio.run(main())
    assert is_store
    assert text.startswith("AsyncPostgresStore(PostgreSQL at ")
    assert asyncio.iscoroutinefunction(AsyncPostgresStore.get)
    assert not asyncio.iscoroutinefunction(PostgresStore.get)


def test_reads_answer_as_the_sync_store(urls: tuple[str, str]) -> None:
    ids = [w.record.id for w in _writes()]

    def sync_part(s: PostgresStore) -> dict[str, Any]:
        return {
            "get": s.get(ME, ids[0]),
            "missing": _error(lambda: s.get(OTHER, ids[0])),
            "many": s.get_many(ME, [ids[3], ids[0], "nope", ids[3]]),
            "list": s.list(ME, Filters(), limit=4, offset=1),
            "oldest": s.list(ME, Filters(types=frozenset({RecordType.NOTE})), newest_first=False),
            "count": s.count(ME, Filters()),
            "count_other": s.count(OTHER, Filters()),
            "hash": s.find_by_hash(ME, _writes()[2].record.content_hash, ["note"]),
            "turns": s.recent_turns(Scope("t1", "u1", session=None), 5),
            "stats": s.stats(ME),
            "scan": [r.id for batch in s.scan(batch_size=3) for r in batch],
        }

    async def async_part(s: AsyncPostgresStore) -> dict[str, Any]:
        return {
            "get": await s.get(ME, ids[0]),
            "missing": await _aerror(s.get(OTHER, ids[0])),
            "many": await s.get_many(ME, [ids[3], ids[0], "nope", ids[3]]),
            "list": await s.list(ME, Filters(), limit=4, offset=1),
            "oldest": await s.list(
                ME, Filters(types=frozenset({RecordType.NOTE})), newest_first=False
            ),
            "count": await s.count(ME, Filters()),
            "count_other": await s.count(OTHER, Filters()),
            "hash": await s.find_by_hash(ME, _writes()[2].record.content_hash, ["note"]),
            "turns": await s.recent_turns(Scope("t1", "u1", session=None), 5),
            "stats": await s.stats(ME),
            "scan": [r.id for batch in [b async for b in s.scan(batch_size=3)] for r in batch],
        }

    got_sync, got_async = _both(urls, sync_part, async_part)
    assert got_sync["get"].id == ids[0]
    assert got_sync["missing"] == "NotFoundError"
    assert len(got_sync["scan"]) == len(ids)
    assert got_async == got_sync


def test_search_candidates_are_the_sync_stores(urls: tuple[str, str]) -> None:
    query = unit(np.random.default_rng(3))
    terms = tuple(tokenize("cats in the garden"))
    filters = Filters(tags_any=None, min_importance=0.0)

    def sync_part(s: PostgresStore) -> list[Any]:
        return [
            s.lexical_search(ME, terms, 5, Filters()),
            s.lexical_search(ME, terms, 2, filters),
            s.lexical_search(OTHER, terms, 5, Filters()),
            s.vector_search(ME, query, 4, Filters()),
            s.vector_search(ME, query, 3, Filters(ids=frozenset({"r0001", "r0002", "r0005"}))),
            s.vector_search(OTHER, query, 10, Filters()),
        ]

    async def async_part(s: AsyncPostgresStore) -> list[Any]:
        return [
            await s.lexical_search(ME, terms, 5, Filters()),
            await s.lexical_search(ME, terms, 2, filters),
            await s.lexical_search(OTHER, terms, 5, Filters()),
            await s.vector_search(ME, query, 4, Filters()),
            await s.vector_search(
                ME, query, 3, Filters(ids=frozenset({"r0001", "r0002", "r0005"}))
            ),
            await s.vector_search(OTHER, query, 10, Filters()),
        ]

    got_sync, got_async = _both(urls, sync_part, async_part)
    assert got_sync[0] and got_sync[3] and got_sync[5]  # the searches found something
    assert [[(c.id, c.score) for c in r] for r in got_async] == [
        [(c.id, c.score) for c in r] for r in got_sync
    ]


def test_replace_and_version_conflicts_as_the_sync_store(urls: tuple[str, str]) -> None:
    w = _writes()[0]
    v2 = replace(w.record, version=2, content=replace(w.record.content, raw="the dog sat"))
    new = RecordWrite(v2, unit(np.random.default_rng(9), DIMS), tuple(tokenize(v2.text)))
    stale = RecordWrite(replace(v2, version=3), None, new.terms)

    def sync_part(s: PostgresStore) -> list[Any]:
        s.replace(ME, new, expected_version=1)
        return [
            _error(lambda: s.replace(ME, stale, expected_version=1)),
            _error(lambda: s.replace(OTHER, stale, expected_version=2)),
            s.get(ME, w.record.id),
            s.history(ME, w.record.id),
            s.lexical_search(ME, tuple(tokenize("dog")), 3, Filters()),
            s.set_status(ME, [w.record.id, "nope"], RecordStatus.DELETED, NOW),
            s.get(ME, w.record.id, include_deleted=True).status,
        ]

    async def async_part(s: AsyncPostgresStore) -> list[Any]:
        await s.replace(ME, new, expected_version=1)
        return [
            await _aerror(s.replace(ME, stale, expected_version=1)),
            await _aerror(s.replace(OTHER, stale, expected_version=2)),
            await s.get(ME, w.record.id),
            await s.history(ME, w.record.id),
            await s.lexical_search(ME, tuple(tokenize("dog")), 3, Filters()),
            await s.set_status(ME, [w.record.id, "nope"], RecordStatus.DELETED, NOW),
            (await s.get(ME, w.record.id, include_deleted=True)).status,
        ]

    got_sync, got_async = _both(urls, sync_part, async_part)
    assert got_sync[0] == "ConflictError" and got_sync[1] == "NotFoundError"
    assert [r.version for r in got_sync[3]] == [1, 2]
    assert got_async == got_sync


def test_a_failed_transaction_writes_nothing(urls: tuple[str, str]) -> None:
    m = Maker(n=100)
    fresh = m.write(m.record("written inside a transaction that fails"))
    job = _job(1)

    def sync_part(s: PostgresStore) -> list[Any]:
        with pytest.raises(RuntimeError), s.transaction() as uow:
            uow.insert([fresh])
            uow.enqueue([job])
            raise RuntimeError("boom")
        with pytest.raises(ConflictError), s.transaction() as uow:
            got = uow.get(ME, "r0002")
            uow.replace(ME, RecordWrite(replace(got, version=2), None, ()), expected_version=1)
            uow.replace(ME, RecordWrite(replace(got, version=3), None, ()), expected_version=1)
        with s.transaction() as uow:
            uow.insert([replace(fresh, record=replace(fresh.record, id="r9999"))])
        return [
            _error(lambda: s.get(ME, fresh.record.id)),
            s.get(ME, "r0002").version,
            s.count_open_jobs(),
            s.get(ME, "r9999").text,
        ]

    async def async_part(s: AsyncPostgresStore) -> list[Any]:
        with pytest.raises(RuntimeError):
            async with s.transaction() as uow:
                await uow.insert([fresh])
                await uow.enqueue([job])
                raise RuntimeError("boom")
        with pytest.raises(ConflictError):
            async with s.transaction() as uow:
                got = await uow.get(ME, "r0002")
                await uow.replace(
                    ME, RecordWrite(replace(got, version=2), None, ()), expected_version=1
                )
                await uow.replace(
                    ME, RecordWrite(replace(got, version=3), None, ()), expected_version=1
                )
        async with s.transaction() as uow:
            await uow.insert([replace(fresh, record=replace(fresh.record, id="r9999"))])
        return [
            await _aerror(s.get(ME, fresh.record.id)),
            (await s.get(ME, "r0002")).version,
            await s.count_open_jobs(),
            (await s.get(ME, "r9999")).text,
        ]

    got_sync, got_async = _both(urls, sync_part, async_part)
    assert got_sync == ["NotFoundError", 1, 0, fresh.record.text]
    assert got_async == got_sync


def test_jobs_are_claimed_as_on_the_sync_store(urls: tuple[str, str]) -> None:
    jobs = [_job(n) for n in range(4)] + [_job(10, user="u2")]

    def sync_part(s: PostgresStore) -> list[Any]:
        s.enqueue(jobs)
        first = s.claim_jobs(NOW + timedelta(seconds=1), limit=2, lease_seconds=30)
        held = s.claim_jobs(NOW + timedelta(seconds=1), limit=5, lease_seconds=30, user="u1")
        other = s.claim_jobs(NOW + timedelta(seconds=1), limit=5, lease_seconds=30)
        s.finish_job(first[0].id, first[0].lease_token)
        s.fail_job(first[1].id, "no", None, first[1].lease_token)
        return [
            [j.id for j in first],
            [j.id for j in held],
            [j.id for j in other],
            _error(lambda: s.finish_job(first[0].id, "not-the-token")),
            s.count_open_jobs(tenant="t1"),
            [(j.id, j.status, j.attempts) for j in s.list_jobs("t1", "u1")],
        ]

    async def async_part(s: AsyncPostgresStore) -> list[Any]:
        await s.enqueue(jobs)
        first = await s.claim_jobs(NOW + timedelta(seconds=1), limit=2, lease_seconds=30)
        held = await s.claim_jobs(NOW + timedelta(seconds=1), limit=5, lease_seconds=30, user="u1")
        other = await s.claim_jobs(NOW + timedelta(seconds=1), limit=5, lease_seconds=30)
        await s.finish_job(first[0].id, first[0].lease_token)
        await s.fail_job(first[1].id, "no", None, first[1].lease_token)
        return [
            [j.id for j in first],
            [j.id for j in held],
            [j.id for j in other],
            await _aerror(s.finish_job(first[0].id, "not-the-token")),
            await s.count_open_jobs(tenant="t1"),
            [(j.id, j.status, j.attempts) for j in await s.list_jobs("t1", "u1")],
        ]

    got_sync, got_async = _both(urls, sync_part, async_part)
    assert got_sync[0] == ["j0000", "j0001"] and got_sync[1] == []
    assert got_sync[2] == ["j0010"]
    assert got_async == got_sync


def test_purge_user_reports_as_the_sync_store(urls: tuple[str, str]) -> None:
    query = unit(np.random.default_rng(5))

    def sync_part(s: PostgresStore) -> list[Any]:
        s.enqueue([_job(1)])
        s.cache_vectors(ME, "m", {"k1": query})
        s.add_counts(ME, "shown", {"r0001": 2})
        report = s.purge_user("t1", "u1")
        return [
            report,
            s.count(ME, Filters()),
            s.count(OTHER, Filters()),
            s.vector_search(ME, query, 5, Filters()),
            s.cached_vectors(ME, "m", ["k1"]),
            s.lexical_search(OTHER, tuple(tokenize("cats")), 5, Filters()),
        ]

    async def async_part(s: AsyncPostgresStore) -> list[Any]:
        await s.enqueue([_job(1)])
        await s.cache_vectors(ME, "m", {"k1": query})
        await s.add_counts(ME, "shown", {"r0001": 2})
        report = await s.purge_user("t1", "u1")
        return [
            report,
            await s.count(ME, Filters()),
            await s.count(OTHER, Filters()),
            await s.vector_search(ME, query, 5, Filters()),
            await s.cached_vectors(ME, "m", ["k1"]),
            await s.lexical_search(OTHER, tuple(tokenize("cats")), 5, Filters()),
        ]

    got_sync, got_async = _both(urls, sync_part, async_part)
    assert got_sync[0].records == 7 and got_sync[0].remaining == 0
    assert got_sync[1] == 0 and got_sync[2] == 3
    assert got_async[:5] == got_sync[:5]
    assert [(c.id, c.score) for c in got_async[5]] == [(c.id, c.score) for c in got_sync[5]]


def test_counters_cache_and_meta_as_the_sync_store(urls: tuple[str, str]) -> None:
    vec = unit(np.random.default_rng(11))

    def sync_part(s: PostgresStore) -> list[Any]:
        s.touch(ME, ["r0001", "r0002", "nope"], NOW)
        s.flush_counters()
        s.add_counts(ME, "hits", {"r0001": 3, "r0002": 1})
        s.add_counts(ME, "hits", {"r0001": 1})
        s.cache_vectors(ME, "model", {"a": vec})
        s.set_meta("k", "v")
        return [
            s.get(ME, "r0001").access_count,
            s.counts(ME, "hits", ["r0001", "r0002", "r0003"]),
            {k: v.tolist() for k, v in s.cached_vectors(ME, "model", ["a", "b"]).items()},
            s.get_meta("k"),
            s.get_meta("nope"),
        ]

    async def async_part(s: AsyncPostgresStore) -> list[Any]:
        await s.touch(ME, ["r0001", "r0002", "nope"], NOW)
        await s.flush_counters()
        await s.add_counts(ME, "hits", {"r0001": 3, "r0002": 1})
        await s.add_counts(ME, "hits", {"r0001": 1})
        await s.cache_vectors(ME, "model", {"a": vec})
        await s.set_meta("k", "v")
        return [
            (await s.get(ME, "r0001")).access_count,
            await s.counts(ME, "hits", ["r0001", "r0002", "r0003"]),
            {k: v.tolist() for k, v in (await s.cached_vectors(ME, "model", ["a", "b"])).items()},
            await s.get_meta("k"),
            await s.get_meta("nope"),
        ]

    got_sync, got_async = _both(urls, sync_part, async_part)
    assert got_sync[0] == 1 and got_sync[1] == {"r0001": 4, "r0002": 1, "r0003": 0}
    assert got_async == got_sync


def test_writes_queued_behind_a_search_commit_together_as_on_the_sync_store(
    urls: tuple[str, str],
) -> None:
    """Touches and cache entries queued while the write-behind is busy are made in one
    transaction on both stores (statements per transaction: the lock timeout and four)."""
    from contextlib import asynccontextmanager, contextmanager

    vec = unit(np.random.default_rng(12))

    def sync_part(s: PostgresStore) -> list[Any]:
        made: list[int] = []
        original = s._behind._batches._transaction
        assert original is not None

        @contextmanager
        def counting() -> Iterator[Any]:
            with original() as conn:
                execute, calls = conn.execute, [0]

                def counted(*a: Any, **k: Any) -> Any:
                    calls[0] += 1
                    return execute(*a, **k)

                conn.execute = counted
                yield conn
                made.append(calls[0])

        s._behind._batches._transaction = counting
        release = threading.Event()
        s._behind.submit(lambda: release.wait(60) and None)
        s.touch(ME, ["r0001"], NOW)
        s.touch(ME, ["r0001", "r0002"], NOW)
        s.cache_vectors(ME, "model", {"a": vec})
        s.touch(ME, ["r0002"], NOW)
        release.set()
        s.flush_counters()
        return [made, s.get(ME, "r0001").access_count, s.get(ME, "r0002").access_count]

    async def async_part(s: AsyncPostgresStore) -> list[Any]:
        made: list[int] = []
        original = s._behind._batches._transaction
        assert original is not None

        @asynccontextmanager
        async def counting() -> Any:
            async with original() as conn:
                execute, calls = conn.execute, [0]

                async def counted(*a: Any, **k: Any) -> Any:
                    calls[0] += 1
                    return await execute(*a, **k)

                conn.execute = counted
                yield conn
                made.append(calls[0])

        s._behind._batches._transaction = counting
        release = asyncio.Event()

        async def busy() -> None:
            await release.wait()

        await s._behind.submit(busy)
        await s.touch(ME, ["r0001"], NOW)
        await s.touch(ME, ["r0001", "r0002"], NOW)
        await s.cache_vectors(ME, "model", {"a": vec})
        await s.touch(ME, ["r0002"], NOW)
        release.set()
        await s.flush_counters()
        return [
            made,
            (await s.get(ME, "r0001")).access_count,
            (await s.get(ME, "r0002")).access_count,
        ]

    got_sync, got_async = _both(urls, sync_part, async_part)
    assert got_sync == [[5], 2, 2]
    assert got_async == got_sync


def test_a_duplicate_insert_is_refused_as_on_the_sync_store(urls: tuple[str, str]) -> None:
    again = _writes()[:1]
    got_sync, got_async = _both(
        urls,
        lambda s: _error(lambda: s.insert(again)),
        lambda s: _aerror(s.insert(again)),
    )
    assert got_sync == got_async == "ValidationError"


def test_dump_load_and_compact_as_the_sync_store(
    urls: tuple[str, str], pg_server: PgServer
) -> None:
    """The bulk copy (memstrata migrate) and compaction; the async store's dump loaded
    into a third, sync store answers as the original."""

    def sync_part(s: PostgresStore) -> list[Any]:
        s.enqueue([_job(1)])
        s.cache_vectors(ME, "m", {"k": unit(np.random.default_rng(1))})
        report = s.compact(lock_timeout=5.0)
        return [
            [d.record for batch in s.dump_records(batch_size=4) for d in batch],
            [e.key for batch in s.dump_cache() for e in batch],
            [j.id for batch in s.dump_jobs() for j in batch],
            sorted(report.rewritten),
        ]

    async def async_part(s: AsyncPostgresStore) -> list[Any]:
        await s.enqueue([_job(1)])
        await s.cache_vectors(ME, "m", {"k": unit(np.random.default_rng(1))})
        report = await s.compact(lock_timeout=5.0)
        dumps = [d async for batch in s.dump_records(batch_size=4) for d in batch]
        return [
            [d.record for d in dumps],
            [e.key async for batch in s.dump_cache() for e in batch],
            [j.id async for batch in s.dump_jobs() for j in batch],
            sorted(report.rewritten),
            dumps,
        ]

    got_sync, got_async = _both(urls, sync_part, async_part)
    assert len(got_sync[0]) == 10 and got_sync[1] == ["k"] and got_sync[2] == ["j0001"]
    assert "records" in got_sync[3]
    assert got_async[:4] == got_sync
    schema = "t_" + uuid.uuid4().hex[:16]
    copy = PostgresStore(pg_server.url(schema))
    try:
        assert copy.load_records(got_async[4]) == 10
        assert copy.load_records(got_async[4]) == 0  # what is there already is skipped
        assert copy.get_many(ME, ["r0001", "r0004"]) == [got_sync[0][0], got_sync[0][3]]
    finally:
        copy.close()
        pg_server.drop(schema)


def test_wait_for_jobs_wakes_on_an_enqueue(urls: tuple[str, str]) -> None:
    async def main() -> tuple[bool, bool, float]:
        store = await AsyncPostgresStore(urls[1]).open()
        try:
            idle = await store.wait_for_jobs(0.2)

            async def enqueue_soon() -> None:
                await asyncio.sleep(0.2)
                await store.enqueue([_job(1)])

            start = time.monotonic()
            woken, _ = await asyncio.gather(store.wait_for_jobs(5.0), enqueue_soon())
            return idle, woken, time.monotonic() - start
        finally:
            await store.aclose()

    idle, woken, waited = asyncio.run(main())
    assert not idle and woken
    assert waited < 4.0


def test_quotas_audit_vectors_and_purge_as_the_sync_store(urls: tuple[str, str]) -> None:
    takes = [Take("q:a", 3, 5), Take("q:b", 1)]
    event = AuditEvent("e1", "t1", "agent:u1", "forget", NOW, "u1", ("r0001",), "asked")
    vec = unit(np.random.default_rng(21))
    terms = {"r0002": ("garden", "roses"), "r0003": ("quiet", "book")}

    def sync_part(s: PostgresStore) -> list[Any]:
        s.set_vectors([(s.get(ME, "r0003"), vec)], "test", DIMS)
        s.append_audit([event])
        out = [
            s.take_counters(takes),
            s.take_counters(takes),
            s.counter_values(["q:a", "q:b", "q:c"]),
            s.lease("l", "tok1", 1000, 2000),
            s.lease("l", "tok2", 1500, 2500),
            s.lease("l", "tok1", 1500, 2500),
        ]
        s.release("l", "tok1")
        s.forget_counters(["q:a"])
        return out + [
            s.lease("l", "tok2", 1500, 2500),
            s.counter_values(["q:a"]),
            s.count_tenant_records("t1"),
            s.views(ME, ["r0001", "r0002", "nope"]),
            _error(lambda: s.append_turns(_writes()[:1])),
            s.vector_search(ME, vec, 1, Filters()),
            s.query_audit("t1", AuditQuery(user="u1")),
            s.purge(ME, ["r0001", "nope"], reterm=terms),
            s.lexical_search(ME, ("roses",), 3, Filters()),
            s.redact_subject("t1", "u1"),
            s.query_audit("t1", AuditQuery()),
            s.meta_items(),
        ]

    async def async_part(s: AsyncPostgresStore) -> list[Any]:
        await s.set_vectors([(await s.get(ME, "r0003"), vec)], "test", DIMS)
        await s.append_audit([event])
        out = [
            await s.take_counters(takes),
            await s.take_counters(takes),
            await s.counter_values(["q:a", "q:b", "q:c"]),
            await s.lease("l", "tok1", 1000, 2000),
            await s.lease("l", "tok2", 1500, 2500),
            await s.lease("l", "tok1", 1500, 2500),
        ]
        await s.release("l", "tok1")
        await s.forget_counters(["q:a"])
        return out + [
            await s.lease("l", "tok2", 1500, 2500),
            await s.counter_values(["q:a"]),
            await s.count_tenant_records("t1"),
            await s.views(ME, ["r0001", "r0002", "nope"]),
            await _aerror(s.append_turns(_writes()[:1])),
            await s.vector_search(ME, vec, 1, Filters()),
            await s.query_audit("t1", AuditQuery(user="u1")),
            await s.purge(ME, ["r0001", "nope"], reterm=terms),
            await s.lexical_search(ME, ("roses",), 3, Filters()),
            await s.redact_subject("t1", "u1"),
            await s.query_audit("t1", AuditQuery()),
            await s.meta_items(),
        ]

    got_sync, got_async = _both(urls, sync_part, async_part)
    assert got_sync[0] is None and got_sync[1] is not None  # the second take is refused
    assert got_sync[3:7] == [True, False, True, True]  # tok1 renews; tok2 once released
    assert got_sync[10] == "ValidationError"  # append_turns of a note
    assert got_sync[11][0].id == "r0003" and got_sync[13].records == 1
    assert [c.id for c in got_sync[14]] == ["r0002"]  # purge's reterm indexed "roses"
    assert got_async == got_sync


def test_large_users_are_searched_through_hnsw(pg_server: PgServer) -> None:
    """Past ``exact_below`` vectors the async store builds the user's HNSW index and
    searches through it, as the sync store does."""
    schema = "t_" + uuid.uuid4().hex[:16]

    async def main() -> tuple[list[str], bool]:
        store = await AsyncPostgresStore(pg_server.url(schema, exact_below=5)).open()
        try:
            await store.insert(_writes())
            query = _writes()[1].vector
            assert query is not None
            hits = await store.vector_search(ME, query, 3, Filters())
            async with store._read() as c:
                found = await (
                    await c.execute(
                        "SELECT count(*) AS n FROM pg_indexes WHERE schemaname = %s "
                        "AND indexname LIKE 'vectors_hnsw_%%'",
                        (schema,),
                    )
                ).fetchone()
            return [h.id for h in hits], found["n"] == 1
        finally:
            await store.aclose()

    try:
        ids, indexed = asyncio.run(main())
    finally:
        pg_server.drop(schema)
    assert indexed
    assert ids and ids[0] == _writes()[1].record.id


def test_slow_queries_of_one_coroutine_do_not_block_another(urls: tuple[str, str]) -> None:
    """A query waiting on the server (pg_sleep) leaves the loop free: another coroutine's
    reads run and finish meanwhile, on another connection of the pool."""

    async def main() -> tuple[float, float, float, int]:
        store = await AsyncPostgresStore(urls[1]).open()
        try:
            await store.insert(_writes())
            start = time.monotonic()
            done: dict[str, float] = {}

            async def slow() -> None:
                async with store._read() as c:
                    await c.execute("SELECT pg_sleep(1.0)")
                done["slow"] = time.monotonic() - start

            async def quick() -> int:
                await asyncio.sleep(0.05)  # the slow query is on the server by now
                n = 0
                for _ in range(5):
                    n += await store.count(ME, Filters())
                    await store.lexical_search(ME, ("cats",), 3, Filters())
                done["quick"] = time.monotonic() - start
                return n

            _, n = await asyncio.gather(slow(), quick())
            return done["slow"], done["quick"], time.monotonic() - start, n
        finally:
            await store.aclose()

    slow, quick, total, n = asyncio.run(main())
    assert n == 5 * 7
    assert slow >= 1.0
    assert quick < 0.9, f"the quick coroutine waited for the slow query ({quick:.2f} s)"
    assert total < 1.9  # they overlapped


def test_many_coroutines_share_a_small_pool(pg_server: PgServer) -> None:
    """Sixteen coroutines writing, searching, touching and caching at once on a pool of
    three connections: every write lands once, every read sees its own writes."""
    schema = "t_" + uuid.uuid4().hex[:16]

    async def main() -> tuple[list[int], int, int]:
        store = await AsyncPostgresStore(pg_server.url(schema, pool_max=3)).open()
        try:

            async def worker(n: int) -> int:
                m = Maker(rng=np.random.default_rng(n), n=1000 * n)
                scope = Scope("t1", f"w{n}")
                writes = [
                    m.write(m.record(f"worker {n} note {i}", user=scope.user)) for i in range(5)
                ]
                await store.insert(writes)
                hits = await store.lexical_search(scope, ("worker",), 10, Filters())
                await store.touch(scope, [h.id for h in hits], NOW)
                await store.cache_vectors(scope, "m", {f"k{n}": unit(m.rng)})
                async with store.transaction() as uow:
                    got = await uow.get(scope, writes[0].record.id)
                    await uow.replace(
                        scope, RecordWrite(replace(got, version=2), None, ()), expected_version=1
                    )
                assert (await store.get(scope, writes[0].record.id)).version == 2
                assert len(await store.cached_vectors(scope, "m", [f"k{n}"])) == 1
                return len(hits)

            found = await asyncio.gather(*(worker(n) for n in range(16)))
            touched = 0
            for n in range(16):
                touched += sum(
                    r.access_count for r in await store.list(Scope("t1", f"w{n}"), Filters())
                )
            async with store._read() as c:
                row = await (await c.execute("SELECT count(*) AS n FROM records")).fetchone()
            return list(found), touched, int(row["n"])
        finally:
            await store.aclose()

    try:
        found, touched, rows = asyncio.run(main())
    finally:
        pg_server.drop(schema)
    assert found == [5] * 16
    assert touched == 16 * 5
    assert rows == 16 * 5


def test_a_missing_server_is_a_clear_error_when_opening() -> None:
    from memstrata.errors import StoreError

    async def main() -> None:
        await AsyncPostgresStore("postgresql://nobody@127.0.0.1:1/nothing").open()

    with pytest.raises(StoreError, match="cannot connect to PostgreSQL"):
        asyncio.run(main())


# --- helpers ------------------------------------------------------------------------------
def _job(n: int, user: str = "u1") -> Job:
    return Job(
        id=f"j{n:04d}",
        kind="ingest",
        tenant="t1",
        user=user,
        payload={"n": n},
        created_at=NOW,
        run_after=NOW + timedelta(microseconds=n),
    )


def _error(call: Callable[[], object]) -> str:
    """The name of the error ``call`` raises (a memstrata error is expected)."""
    try:
        call()
    except Exception as exc:
        return type(exc).__name__
    return "no error"


async def _aerror(call: Awaitable[object]) -> str:
    try:
        await call
    except Exception as exc:
        return type(exc).__name__
    return "no error"
