"""On PostgreSQL the writes made behind searches (counters, cache entries: ``_relaxed()``,
``synchronous_commit`` off) cost two round trips: ``BEGIN``, the ``SET LOCAL`` and the
statements go together (pipeline mode), then the ``COMMIT``. Before session 24 the
transaction was opened with ``conn.transaction()`` inside the pipeline, which syncs before
and after the ``BEGIN``: four round trips for a transaction of one statement.

Counted between psycopg and the server by jobs23's proxy (a round trip is the client speaking
again after the server answered)."""

from __future__ import annotations

import statistics
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jobs23.test_fence_round_trips import _CountingProxy
from memstrata import Scope
from memstrata.errors import StoreError
from memstrata.store import open_store
from store.conftest import Maker

SCOPE = Scope("t", "u")


@pytest.fixture
def proxied(pg_url: str) -> Iterator[tuple[Any, _CountingProxy]]:
    if "host=/" not in pg_url:
        pytest.skip("the test server is not on a Unix socket (MEMSTRATA_TEST_POSTGRES_URL)")
    host = pg_url.split("host=")[1].split("&")[0]
    directory = Path(f"/tmp/d24-{uuid.uuid4().hex[:8]}")  # a socket path stays short
    directory.mkdir()
    proxy = _CountingProxy(host, directory)
    store = open_store(pg_url.replace(host, proxy.dir))
    try:
        yield store, proxy
    finally:
        store.close()
        proxy.close()
        for f in directory.iterdir():
            f.unlink()
        directory.rmdir()


def _round_trips(proxy: _CountingProxy, make: Callable[[], None], n: int = 20) -> float:
    counts = []
    for _ in range(n):
        before = proxy.round_trips
        make()
        counts.append(proxy.round_trips - before)
    return statistics.median(counts)


def _meta(store: Any, key: str) -> str | None:
    value: str | None = store.get_meta(key)
    return value


def test_a_relaxed_write_takes_two_round_trips(proxied: tuple[Any, _CountingProxy]) -> None:
    store, proxy = proxied
    n = [0]

    def one_statement() -> None:
        n[0] += 1
        with store._relaxed() as conn:  # noqa: SLF001 - the transaction under test
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('d24', %s) ON CONFLICT (key) "
                "DO UPDATE SET value = excluded.value",
                (str(n[0]),),
            )

    def three_statements() -> None:
        with store._relaxed() as conn:  # noqa: SLF001
            for _ in range(3):
                conn.execute("UPDATE meta SET value = value || 'x' WHERE key = 'd24'")

    assert _round_trips(proxy, one_statement) == 2  # BEGIN..statement, then COMMIT (was 4)
    assert _meta(store, "d24") == "20"  # committed
    assert _round_trips(proxy, three_statements) == 2  # statements never wait on one another
    assert _meta(store, "d24") == "20" + "x" * 60

    def shown() -> str:
        with store._relaxed() as conn:  # noqa: SLF001
            row = conn.execute("SHOW synchronous_commit").fetchone()
        return str(row["synchronous_commit"])

    assert shown() == "off"  # still relaxed
    # a search's counters: a read of the rows (it waits for its answer), then the write
    maker = Maker()
    write = maker.write(tenant=SCOPE.tenant, user=SCOPE.user, vector=False)
    store.insert([write])
    rec = write.record.id
    counted = _round_trips(proxy, lambda: store.add_counts(SCOPE, "hits", {rec: 1}))
    assert counted == 3  # was 5
    assert store.counts(SCOPE, "hits", [rec]) == {rec: 20}


def test_a_relaxed_write_that_fails_writes_nothing(proxied: tuple[Any, _CountingProxy]) -> None:
    """A statement's error comes back before the ``COMMIT`` is sent: the transaction is
    rolled back (not committed without it) and the connection serves the next write."""
    store, _ = proxied
    with pytest.raises(StoreError), store._relaxed() as conn:  # noqa: SLF001
        conn.execute("INSERT INTO meta (key, value) VALUES ('d24-failed', 'x')")
        conn.execute("INSERT INTO no_such_table VALUES (1)")
    assert _meta(store, "d24-failed") is None
    for _ in range(3):  # every connection of the pool is usable afterwards
        with store._relaxed() as conn:  # noqa: SLF001
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('d24-after', 'y') ON CONFLICT (key) "
                "DO NOTHING"
            )
    assert _meta(store, "d24-after") == "y"
