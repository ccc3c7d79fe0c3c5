"""A search's counter and cache writes run behind it on PostgreSQL (store/postgres/behind.py):
the store that made them reads them at once, other stores once they are written, and none
is lost or counted twice under concurrent use."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from memstrata.scope import Scope
from memstrata.store import open_store
from memstrata.store.postgres import PostgresStore
from store.conftest import Maker

ME = Scope("t1", "u1")
AT = datetime(2026, 2, 1, tzinfo=UTC)


def test_writes_behind_are_read_by_their_store_and_written_for_others(pg_url: str) -> None:
    store = open_store(pg_url)
    other = open_store(pg_url)
    assert isinstance(store, PostgresStore)
    maker = Maker(rng=np.random.default_rng(1))
    try:
        w = maker.write()
        store.insert([w])
        rid = w.record.id
        store.touch(ME, [rid], AT)
        store.cache_vectors(ME, "m", {"q:1": np.ones(4, dtype=np.float32)})
        assert store.get(ME, rid).access_count == 1  # its own store: at once
        assert set(store.cached_vectors(ME, "m", ["q:1"])) == {"q:1"}
        store.touch(ME, [rid], AT)
        store.flush_counters()
        assert other.get(ME, rid).access_count == 2  # written once flushed
        assert other.get(ME, rid).last_accessed_at == AT
        store.touch(ME, [rid], AT)
        store.close()  # close writes what is pending
        assert other.get(ME, rid).access_count == 3
        assert other.get(ME, rid).version == 1  # counters are never versions
    finally:
        other.close()


def test_concurrent_touches_and_reads_lose_nothing(pg_url: str) -> None:
    store = open_store(pg_url)
    maker = Maker(rng=np.random.default_rng(2))
    writes = [maker.write() for _ in range(5)]
    store.insert(writes)
    ids = [w.record.id for w in writes]
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            for i in range(20):
                store.touch(ME, [ids[(n + i) % 5], ids[(n + i + 1) % 5]], AT)
                seen = store.get(ME, ids[(n + i) % 5]).access_count
                assert seen >= 1
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    try:
        assert not errors, errors
        assert not any(t.is_alive() for t in threads)
        total = sum(r.access_count for r in store.get_many(ME, ids))
        assert total == 6 * 20 * 2
    finally:
        store.close()


def test_a_unit_of_work_holding_a_row_does_not_wait_for_a_touch_of_it(pg_url: str) -> None:
    """A touch of a row queued while another thread's transaction locks that row: the
    transaction's own nested reads must not wait for the touch (it waits for the lock)."""
    store = open_store(pg_url)
    assert isinstance(store, PostgresStore)
    maker = Maker(rng=np.random.default_rng(3))
    w = maker.write()
    store.insert([w])
    rid = w.record.id
    done = threading.Event()

    def transaction() -> None:
        with store._write() as c:
            c.execute("SELECT 1 FROM records WHERE id = %s FOR UPDATE", (rid,))
            store.touch(ME, [rid], AT)  # queued behind; blocked on our row lock
            with store._read() as r:  # nested: must not wait for the touch
                r.execute("SELECT 1").fetchone()
        done.set()

    t = threading.Thread(target=transaction)
    t.start()
    t.join(timeout=30)
    try:
        assert done.is_set(), "a nested read waited for a write blocked on its own lock"
        store.flush_counters()
        assert store.get(ME, rid).access_count == 1
    finally:
        store.close()


def test_a_search_reads_without_waiting_for_writes_behind_earlier_searches(pg_url: str) -> None:
    """The candidate reads (lexical, dense), a cached query embedding still being written
    and records no pending write changes are read while the background thread is busy;
    only a read of a record a pending touch changes waits (and then sees the touch)."""
    from memstrata.filters import Filters
    from memstrata.search.tokenize import tokenize

    store = open_store(pg_url)
    assert isinstance(store, PostgresStore)
    maker = Maker(rng=np.random.default_rng(4))
    touched, other = maker.write(text="alpha river"), maker.write(text="alpha mountain")
    store.insert([touched, other])
    release = threading.Event()
    store._behind.submit(lambda: release.wait(60) and None)  # the thread is busy
    store.touch(ME, [touched.record.id], AT)  # queued behind it
    store.cache_vectors(ME, "m", {"q:2": np.ones(4, dtype=np.float32)})  # queued too
    seen: dict[str, object] = {}

    def search_reads() -> None:
        seen["lexical"] = {c.id for c in store.lexical_search(ME, tokenize("alpha"), 5, Filters())}
        vec = other.vector
        assert vec is not None
        seen["dense"] = [c.id for c in store.vector_search(ME, vec, 1, Filters())]
        seen["cache"] = set(store.cached_vectors(ME, "m", ["q:2"]))
        seen["other"] = [r.access_count for r in store.get_many(ME, [other.record.id])]
        seen["views"] = sorted(store.views(ME, [touched.record.id]))  # no counters read

    reader = threading.Thread(target=search_reads)
    reader.start()
    reader.join(timeout=30)
    try:
        assert not reader.is_alive(), "a search's reads waited for the writes behind it"
        assert seen == {
            "lexical": {touched.record.id, other.record.id},
            "dense": [other.record.id],
            "cache": {"q:2"},
            "other": [0],
            "views": [touched.record.id],
        }
        waiting: list[int] = []
        late = threading.Thread(
            target=lambda: waiting.append(store.get(ME, touched.record.id).access_count)
        )
        late.start()
        release.set()
        late.join(timeout=30)
        assert waiting == [1]  # waited for the touch it reads
    finally:
        release.set()
        store.close()


def test_cache_entries_are_written_in_one_statement(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An add_messages batch caches one embedding per message: they are written by one
    statement, not one execution each (counted at the driver), and all arrive."""
    import psycopg

    runs: list[int] = []
    real_execute, real_many = psycopg.Cursor.execute, psycopg.Cursor.executemany

    def execute(self: Any, query: Any, params: Any = None, **kw: Any) -> Any:
        if "INTO embedding_cache" in str(query):
            runs.append(1)
        return real_execute(self, query, params, **kw)

    def executemany(self: Any, query: Any, params_seq: Any, **kw: Any) -> Any:
        params_seq = list(params_seq)
        if "INTO embedding_cache" in str(query):
            runs.append(len(params_seq))
        return real_many(self, query, params_seq, **kw)

    monkeypatch.setattr(psycopg.Cursor, "execute", execute)
    monkeypatch.setattr(psycopg.Cursor, "executemany", executemany)
    store = open_store(pg_url)
    other = open_store(pg_url)
    rng = np.random.default_rng(5)
    entries = {f"h{i}": rng.standard_normal(8).astype(np.float32) for i in range(50)}
    try:
        store.cache_vectors(ME, "m", entries)
        store.flush_counters()
        assert runs == [1]
        got = other.cached_vectors(ME, "m", list(entries))
        assert set(got) == set(entries)
        assert all(np.array_equal(got[k], v) for k, v in entries.items())
    finally:
        store.close()
        other.close()


def test_statistics_are_refreshed_off_the_writing_thread(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large insert refreshes the planner's statistics (VACUUM/ANALYZE) on a thread of its
    own: the insert does not wait for it, and the refresh happens."""
    import psycopg

    ran: list[str] = []
    real_execute = psycopg.Cursor.execute

    def execute(self: Any, query: Any, params: Any = None, **kw: Any) -> Any:
        if str(query).startswith(("VACUUM", "ANALYZE")):
            ran.append(threading.current_thread().name)
        return real_execute(self, query, params, **kw)

    monkeypatch.setattr(psycopg.Cursor, "execute", execute)
    store = open_store(pg_url)
    assert isinstance(store, PostgresStore)
    maker = Maker(rng=np.random.default_rng(6))
    try:
        store.insert([maker.write() for _ in range(600)])
        store.wait_for_statistics()
        assert ran and threading.current_thread().name not in ran
        with store._read() as c:
            row = c.execute(
                "SELECT analyze_count + autoanalyze_count AS n FROM pg_stat_user_tables "
                "WHERE schemaname = current_schema() AND relname = 'records'"
            ).fetchone()
        assert row is not None and row["n"] >= 1
    finally:
        store.close()


def test_a_list_waits_only_for_the_rows_it_returns(pg_url: str) -> None:
    """``list`` (build_context's recent turns and layers) reads without waiting for the
    writes behind a search, and reads again, once written, the rows a pending touch
    changes: the store still reads its own counts."""
    from memstrata.filters import Filters
    from memstrata.records import RecordType

    store = open_store(pg_url)
    assert isinstance(store, PostgresStore)
    maker = Maker(rng=np.random.default_rng(7))
    note = maker.write()
    fact = maker.write(maker.record(type=RecordType.FACT))
    store.insert([note, fact])
    release = threading.Event()
    store._behind.submit(lambda: release.wait(60) and None)  # the thread is busy
    store.touch(ME, [note.record.id], AT)  # queued behind it
    seen: list[list[tuple[str, int]]] = []

    def read(types: frozenset[RecordType] | None) -> None:
        rows = store.list(ME, Filters(types=types), limit=10)
        seen.append([(r.id, r.access_count) for r in rows])

    facts = threading.Thread(target=read, args=(frozenset({RecordType.FACT}),))
    facts.start()
    facts.join(timeout=30)
    try:
        assert not facts.is_alive(), "a list of rows no pending write changes waited"
        assert seen == [[(fact.record.id, 0)]]
        every = threading.Thread(target=read, args=(None,))
        every.start()
        release.set()
        every.join(timeout=30)
        assert sorted(seen[1]) == sorted([(note.record.id, 1), (fact.record.id, 0)])
    finally:
        release.set()
        store.close()


def _count_transactions(store: PostgresStore) -> list[int]:
    """Wrap the write-behind's transaction: each element is the statements one made."""
    made: list[int] = []
    original = store._behind._batches._transaction
    assert original is not None

    @contextlib.contextmanager
    def counting() -> Iterator[Any]:
        with original() as conn:
            calls = [0]
            execute = conn.execute

            def counted(*args: Any, **kwargs: Any) -> Any:
                calls[0] += 1
                return execute(*args, **kwargs)

            conn.execute = counted
            try:
                yield conn
            finally:
                conn.execute = execute
                made.append(calls[0])

    store._behind._batches._transaction = counting
    return made


def test_writes_queued_together_are_made_in_one_transaction(pg_url: str) -> None:
    """Touches and cache entries queued behind a busy write-behind commit together (one
    transaction, not one each); every count still lands once, in order after the write
    they were queued behind."""
    store = open_store(pg_url)
    other = open_store(pg_url)
    assert isinstance(store, PostgresStore)
    maker = Maker(rng=np.random.default_rng(8))
    a, b = maker.write(), maker.write()
    store.insert([a, b])
    made = _count_transactions(store)
    release = threading.Event()
    try:
        store._behind.submit(lambda: release.wait(60) and None)  # the thread is busy
        store.touch(ME, [a.record.id], AT)
        store.touch(ME, [a.record.id, b.record.id], AT)
        store.cache_vectors(ME, "m", {"q:b": np.ones(4, dtype=np.float32)})
        store.touch(ME, [b.record.id], AT)
        release.set()
        store.flush_counters()
        # the lock timeout, then the four statements
        assert made == [5]
        assert {r.id: r.access_count for r in other.get_many(ME, [a.record.id, b.record.id])} == {
            a.record.id: 2,
            b.record.id: 2,
        }
        assert set(other.cached_vectors(ME, "m", ["q:b"])) == {"q:b"}
        store.touch(ME, [a.record.id], AT)  # nothing queued with it: alone
        store.flush_counters()
        assert made == [5, 1]
    finally:
        release.set()
        store.close()
        other.close()


def test_a_failing_statement_of_a_batch_loses_no_other(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    from memstrata.store.postgres.behind import Statement

    store = open_store(pg_url)
    assert isinstance(store, PostgresStore)
    maker = Maker(rng=np.random.default_rng(9))
    a = maker.write()
    store.insert([a])
    made = _count_transactions(store)
    release = threading.Event()
    seen: list[str] = []
    try:
        store._behind.submit(lambda: release.wait(60) and None)
        store.touch(ME, [a.record.id], AT)
        store._behind.submit(
            Statement("UPDATE no_such_table SET x = 1", [], lambda: seen.append("done"))
        )
        store.touch(ME, [a.record.id], AT)
        release.set()
        store.flush_counters()
        assert store.get(ME, a.record.id).access_count == 2
        assert seen == ["done"]  # told, though it failed
        assert "no_such_table" in caplog.text
        assert made == [4, 1, 1, 1]  # the batch (rolled back), then one at a time
    finally:
        release.set()
        store.close()


def test_two_stores_batching_touches_of_the_same_rows_lose_nothing(pg_url: str) -> None:
    """Two stores (two server processes) touch overlapping rows in different orders from
    several threads each, so their batches lock the same rows in different orders: every
    touch is counted once, and none waits PostgreSQL's one-second deadlock check (a batch
    gives up a row lock after 100 ms and goes one statement at a time)."""
    import time

    stores = [open_store(pg_url), open_store(pg_url)]
    maker = Maker(rng=np.random.default_rng(10))
    writes = [maker.write() for _ in range(6)]
    stores[0].insert(writes)
    ids = [w.record.id for w in writes]
    errors: list[BaseException] = []

    def run(store: Any, n: int) -> None:
        try:
            for i in range(30):
                first = ids[(n + i) % 6]
                second = ids[(n + 3 * i + 1) % 6]
                store.touch(ME, [first], AT)
                store.touch(ME, [second, first], AT)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(stores[n % 2], n)) for n in range(6)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    for store in stores:
        store.flush_counters()
    elapsed = time.monotonic() - start
    try:
        assert not errors, errors
        total = sum(r.access_count for r in stores[1].get_many(ME, ids))
        assert total == 6 * 30 * 3
        assert elapsed < 30
    finally:
        for store in stores:
            store.close()


def test_a_batch_in_a_lock_cycle_gives_way_within_its_lock_timeout(pg_url: str) -> None:
    """Another process's transaction holds row X and then wants row Y, while this store's
    batch (touch Y, touch X) holds Y and waits for X: a deadlock. The batch gives up its
    locks after 100 ms (before PostgreSQL's one-second deadlock check would cancel one of
    the two), the other transaction goes on, and both touches still land, one at a time."""
    import time

    import psycopg

    from memstrata.store.postgres.connection import parse_url

    store = open_store(pg_url)
    assert isinstance(store, PostgresStore)
    maker = Maker(rng=np.random.default_rng(11))
    x, y = maker.write(), maker.write()
    store.insert([x, y])
    options = parse_url(pg_url)
    release = threading.Event()
    waited: list[float] = []
    try:
        with psycopg.connect(options.conninfo) as other:
            other.execute(f'SET search_path TO "{options.schema}", public')
            other.execute("SELECT 1 FROM records WHERE id = %s FOR UPDATE", (x.record.id,))
            store._behind.submit(lambda: release.wait(60) and None)  # the thread is busy
            store.touch(ME, [y.record.id], AT)  # queued: one batch, Y first, then X
            store.touch(ME, [x.record.id], AT)
            release.set()
            time.sleep(0.05)  # the batch has taken Y and waits for X
            start = time.monotonic()
            other.execute("SELECT 1 FROM records WHERE id = %s FOR UPDATE", (y.record.id,))
            waited.append(time.monotonic() - start)
            other.commit()
        store.flush_counters()
        assert waited[0] < 0.9  # the batch gave way; no deadlock error on either side
        assert store.get(ME, x.record.id).access_count == 1
        assert store.get(ME, y.record.id).access_count == 1
    finally:
        release.set()
        store.close()
