"""Counts carried by the write (quota33) when a block runs two writes at once, or when a
``COMMIT``'s outcome is unknown (quota34).

Session 33 put a block's unlimited counts (a process without quotas on a store whose
quotas are in use; quotas that limit records only) in its next write transaction, claimed
when that transaction began. Two writes of one block at once (``asyncio.gather``): the one
that began first carried the count; if it failed, the other had already begun without it
and landed uncounted. And a ``COMMIT`` that raised (the connection lost while committing)
handed the count back to the block's next write even when that ``COMMIT`` had landed:
counted twice. Real PostgreSQL (the suite's server): a deferred constraint trigger fails a
``COMMIT``; a lost connection is injected at the driver boundary (psycopg's
``AsyncTransaction.__aexit__`` raises after the real ``COMMIT`` returned, or after a real
rollback)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from memstrata import Scope
from memstrata._async.quotas import IN_USE_KEY, AsyncQuotasInUse, admit_writes, count_embeddings
from memstrata.aio.stores import open_store
from memstrata.errors import StoreError
from memstrata.quota_types import day_key
from memstrata.quotas import Quota, Quotas

NOW = datetime(2026, 5, 4, 9, tzinfo=UTC)
ALICE = Scope("acme", "alice", session="s1")
N = 3  # embeddings the block admits


@asynccontextmanager
async def _store(pg_url: str) -> AsyncIterator[Any]:
    store: Any = await open_store(pg_url)
    try:
        await store.set_meta(IN_USE_KEY, "1")
        yield store
    finally:
        await store.aclose()


async def _used(store: Any, *, user: bool = True) -> int:
    key = day_key("emb", ALICE.tenant, ALICE.user if user else None, NOW)
    return int((await store.counter_values([key]))[key])


def _fail_boom_at_commit(store: Any) -> None:
    """A deferred constraint trigger: a transaction that wrote a ``meta`` key starting
    "q34boom" fails at its ``COMMIT``, after the count was added."""
    schema = store.options.schema
    with psycopg.connect(store.options.conninfo, autocommit=True) as conn:
        conn.execute(
            f"CREATE FUNCTION {schema}.q34_boom() RETURNS trigger LANGUAGE plpgsql AS $$ "
            "BEGIN IF NEW.key LIKE 'q34boom%%' THEN RAISE EXCEPTION 'boom at commit'; "
            "END IF; RETURN NULL; END $$"
        )
        conn.execute(
            f"CREATE CONSTRAINT TRIGGER q34_boom AFTER INSERT OR UPDATE ON {schema}.meta "
            "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
            f"EXECUTE FUNCTION {schema}.q34_boom()"
        )


def _block(kind: str, store: Any) -> Any:
    """The admitted block: a process without quotas, or quotas that limit records only."""
    if kind == "plain":
        return count_embeddings(store, AsyncQuotasInUse(store), ALICE, N, NOW)
    quotas = Quotas(per_user=Quota(max_records=50))
    return admit_writes(store, quotas, ALICE, N, NOW)


KINDS = ["plain", "records"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("failing_first", [True, False], ids=["boom-first", "boom-second"])
def test_two_writes_at_once_one_failing_at_commit(
    pg_url: str, kind: str, failing_first: bool
) -> None:
    """``asyncio.gather`` of a write that fails at its ``COMMIT`` and one that lands, the
    errors gathered: the block raises the failure. Before: the failing one (begun first)
    carried the count, the other landed without it, and the block's error gave it back:
    0 counted for a stored write (the boom-first cases fail before)."""

    async def main() -> None:
        async with _store(pg_url) as store:
            _fail_boom_at_commit(store)
            writes = [store.set_meta("q34boom", "x"), store.set_meta("q34ok", "y")]
            if not failing_first:
                writes.reverse()
            with pytest.raises(StoreError, match="boom at commit"):
                async with _block(kind, store):
                    results = await asyncio.gather(*writes, return_exceptions=True)
                    for r in results:
                        if isinstance(r, BaseException):
                            raise r
            assert await store.get_meta("q34ok") == "y"
            assert await store.get_meta("q34boom") is None
            assert await _used(store) == N
            assert await _used(store, user=False) == N

    asyncio.run(main())


@pytest.mark.parametrize("kind", KINDS)
def test_gather_raising_at_the_first_error(pg_url: str, kind: str) -> None:
    """Plain ``asyncio.gather``: it raises the failure while the sibling still runs (it
    lands after the block ended). The sibling carries the count: counted once."""

    async def main() -> None:
        async with _store(pg_url) as store:
            _fail_boom_at_commit(store)
            sibling: asyncio.Future[Any] | None = None

            async def slow_ok() -> None:
                await asyncio.sleep(0.3)  # begins after the failure was raised
                await store.set_meta("q34ok", "y")

            with pytest.raises(StoreError, match="boom at commit"):
                async with _block(kind, store):
                    sibling = asyncio.ensure_future(slow_ok())
                    await asyncio.gather(store.set_meta("q34boom", "x"), sibling)
            assert sibling is not None
            await sibling
            assert await store.get_meta("q34ok") == "y"
            assert await _used(store) == N

    asyncio.run(main())


@pytest.mark.parametrize("kind", KINDS)
def test_two_writes_at_once_both_landing(pg_url: str, kind: str) -> None:
    """Both land: counted once (guard)."""

    async def main() -> None:
        async with _store(pg_url) as store:
            async with _block(kind, store):
                await asyncio.gather(*(store.set_meta(f"q34ok{i}", "y") for i in range(4)))
            assert await _used(store) == N

    asyncio.run(main())


def _lose_the_connection_at_commit(
    monkeypatch: pytest.MonkeyPatch, *, landed: bool
) -> Callable[[], int]:
    """The next ``COMMIT`` (a transaction that ends without an error) raises psycopg's
    ``OperationalError`` as a lost connection does: after the real ``COMMIT`` returned
    (``landed``), or after rolling back instead. Returns how many were injected."""
    real = psycopg.AsyncTransaction.__aexit__
    armed = [1]

    async def lost(self: Any, et: Any, ev: Any, tb: Any) -> Any:
        if et is not None or not armed[0]:
            return await real(self, et, ev, tb)
        armed[0] = 0
        if landed:
            await real(self, None, None, None)
        else:
            gone = RuntimeError("connection lost before the COMMIT reached the server")
            await real(self, RuntimeError, gone, None)
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(psycopg.AsyncTransaction, "__aexit__", lost)
    return lambda: 1 - armed[0]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("landed", [True, False], ids=["commit-landed", "commit-lost"])
def test_a_commit_whose_outcome_is_unknown(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, kind: str, landed: bool
) -> None:
    """The first write's ``COMMIT`` raises a lost connection; the block retries the write
    (as a caller told "re-read before retrying" does) and ends. The store asks the server
    whether that transaction committed (``txid_status``): landed, the count was written
    with it and the retry carries none; lost, the retry carries it. Before: the count was
    always handed back, so a landed ``COMMIT`` counted it twice (commit-landed fails
    before)."""

    async def main() -> None:
        async with _store(pg_url) as store:
            async with _block(kind, store):
                injected = _lose_the_connection_at_commit(monkeypatch, landed=landed)
                with pytest.raises(StoreError, match="while committing"):
                    await store.set_meta("q34first", "x")
                assert injected() == 1
                assert (await store.get_meta("q34first") == "x") is landed
                await store.set_meta("q34first", "x")  # the retry
                monkeypatch.undo()
            assert await _used(store) == N
            assert await _used(store, user=False) == N

    asyncio.run(main())


@pytest.mark.parametrize("kind", KINDS)
def test_an_outcome_the_server_cannot_tell_keeps_the_count_pending(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """The decision where nothing can tell: the ``COMMIT`` landed but asking the server
    fails too (``txid_status`` raises, as an unreachable server does). The count is handed
    back and the retry carries it again: counted twice, never lost (nothing lost beats an
    exact count)."""
    real_execute = psycopg.AsyncConnection.execute

    async def execute(self: Any, query: Any, *a: Any, **k: Any) -> Any:
        if "txid_status" in str(query):
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        return await real_execute(self, query, *a, **k)

    async def main() -> None:
        async with _store(pg_url) as store:
            async with _block(kind, store):
                _lose_the_connection_at_commit(monkeypatch, landed=True)
                monkeypatch.setattr(psycopg.AsyncConnection, "execute", execute)
                with pytest.raises(StoreError, match="while committing"):
                    await store.set_meta("q34first", "x")
                monkeypatch.undo()
                await store.set_meta("q34first", "x")  # the retry
            assert await _used(store) == 2 * N

    asyncio.run(main())


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_sync_threads_sharing_the_block(kind: str, tmp_path: Any, request: Any) -> None:
    """The sync twin: two threads given the block's context (``copy_context``), one
    failing (PostgreSQL: at its ``COMMIT``, the deferred trigger; SQLite: a trigger on the
    key), the other landing: counted once, whichever ran first (a guard: the order is the
    threads')."""
    import contextvars
    import sqlite3
    import threading

    from memstrata.quotas import QuotasInUse
    from memstrata.quotas import count_embeddings as sync_count
    from memstrata.store import open_store as sync_open

    if kind == "postgresql":
        url = request.getfixturevalue("pg_url")
    else:
        url = f"sqlite:///{tmp_path / 'w.db'}"
    store: Any = sync_open(url)
    try:
        store.set_meta(IN_USE_KEY, "1")
        if kind == "postgresql":
            _fail_boom_at_commit(store)
        else:
            lite = sqlite3.connect(url.removeprefix("sqlite:///"))
            lite.execute(
                "CREATE TRIGGER q34_boom BEFORE INSERT ON meta WHEN NEW.key LIKE 'q34boom%' "
                "BEGIN SELECT RAISE(ABORT, 'boom at commit'); END"
            )
            lite.commit()
            lite.close()
        errors: list[BaseException] = []

        def run(key: str, ctx: contextvars.Context) -> None:
            try:
                ctx.run(store.set_meta, key, "x")
            except BaseException as exc:  # noqa: BLE001 - raised below
                errors.append(exc)

        with (
            pytest.raises(StoreError, match="boom"),
            sync_count(store, QuotasInUse(store), ALICE, N, NOW),
        ):
            threads = [
                threading.Thread(target=run, args=(k, contextvars.copy_context()))
                for k in ("q34boom", "q34ok")
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert len(errors) == 1
            raise errors[0]
        assert store.get_meta("q34ok") == "x"
        key = day_key("emb", ALICE.tenant, ALICE.user, NOW)
        assert int(store.counter_values([key])[key]) == N
    finally:
        store.close()
