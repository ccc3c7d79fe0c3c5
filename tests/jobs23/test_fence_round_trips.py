"""On PostgreSQL a job's write transaction costs no round trip more than any other: the
fence's check (``SELECT … FOR SHARE`` of the job's row) goes to the server with the
``BEGIN`` (pipeline mode), not after it.

Counted between psycopg and the server by a proxy on a Unix socket: a round trip is the
client speaking again after the server answered. A transaction of one statement is
``BEGIN``, the statement, ``COMMIT``: 3 round trips with or without a job's fence (before
session 23, 4 under one)."""

from __future__ import annotations

import asyncio
import os
import statistics
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata.jobs import Fence, Job, JobRevokedError, fenced
from memstrata.store import open_store


class _CountingProxy:
    """Forwards a Unix socket to the server's, counting the client's round trips."""

    def __init__(self, server_dir: str, directory: Path) -> None:
        self.dir = str(directory)
        self._target = os.path.join(server_dir, ".s.PGSQL.5432")
        self.round_trips = 0
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self._thread.start()
        assert ready.wait(10)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._stop = asyncio.Event()
        tasks: set[asyncio.Task[None]] = set()

        async def pipe(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client: bool, last: list
        ) -> None:
            try:
                while data := await reader.read(65536):
                    if client and last[0] != "client":
                        self.round_trips += 1
                    last[0] = "client" if client else "server"
                    writer.write(data)
                    await writer.drain()
            finally:
                writer.close()

        async def handle(cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
            sr, sw = await asyncio.open_unix_connection(self._target)
            last = ["server"]
            for task in (pipe(cr, sw, True, last), pipe(sr, cw, False, last)):
                tasks.add(asyncio.ensure_future(task))

        async def main() -> None:
            server = await asyncio.start_unix_server(
                handle, os.path.join(self.dir, ".s.PGSQL.5432")
            )
            ready.set()
            await self._stop.wait()
            server.close()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        self._loop.run_until_complete(main())
        self._loop.close()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


def test_a_jobs_write_transaction_takes_no_more_round_trips_than_another(pg_url: str) -> None:
    if "host=/" not in pg_url:
        pytest.skip("the test server is not on a Unix socket (MEMSTRATA_TEST_POSTGRES_URL)")
    host = pg_url.split("host=")[1].split("&")[0]
    directory = Path(f"/tmp/j23-{uuid.uuid4().hex[:8]}")  # a socket path stays short
    directory.mkdir()
    proxy = _CountingProxy(host, directory)
    store = open_store(pg_url.replace(host, proxy.dir))
    try:
        now = datetime.now(UTC)
        store.enqueue([Job("j1", "k", "t", "u", {}, created_at=now, run_after=now)])
        (job,) = store.claim_jobs(now, limit=1, lease_seconds=600)
        assert job.lease_token is not None
        fence = Fence(job.id, job.lease_token, lambda: None)

        def round_trips(under: Fence | None) -> float:
            counts = []
            for _ in range(20):
                before = proxy.round_trips
                with fenced(under), store._tx() as conn:  # noqa: SLF001 - one bare transaction
                    conn.execute("SELECT 1")
                counts.append(proxy.round_trips - before)
            return statistics.median(counts)

        assert round_trips(None) == 3  # BEGIN, SELECT 1, COMMIT
        assert round_trips(fence) == 3  # the check went with the BEGIN
        store.purge_user("t", "u")  # and it still checks: the claim is gone
        with pytest.raises(JobRevokedError), fenced(fence), store._tx() as conn:  # noqa: SLF001
            conn.execute("SELECT 1")
    finally:
        store.close()
        proxy.close()
        for f in directory.iterdir():
            f.unlink()
        directory.rmdir()
