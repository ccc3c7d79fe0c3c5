"""A pipelined write whose last statement is large completes while the server is busy.

psycopg 3.3.9's ``Pipeline.sync()`` sends what the socket takes at most twice after the
last command is queued, then waits for results. When that statement is larger (the
embedding-cache upsert of many vectors behind a search, or a write-behind batch) and the
server is still busy with an earlier statement of the pipeline, the server waits for the
rest of the statement and the client for its answer, forever: vec27 found ``memstrata bench
scale`` on PostgreSQL hung in the write-behind thread, 8 of 9 runs under load (session 27).
Here the store's pipelined write transaction (``_tx(pipeline=True)``, the one behind
``_relaxed``) holds a statement that keeps the server busy, then a 20 MB one; a real
process, so that a hang is a timeout, not a stuck test run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from memstrata.store.postgres.store import PostgresStore
    store = PostgresStore(sys.argv[1])
    for form in ("sync", "async"):
        started = time.perf_counter()
        if form == "sync":
            with store._tx(pipeline=True) as conn:
                conn.execute("SELECT pg_sleep(0.3)")
                conn.execute("SELECT length(%s)", ["x" * 20_000_000])
        else:
            import asyncio
            from memstrata._async.store.postgres.store import AsyncPostgresStore

            async def main():
                s = AsyncPostgresStore(sys.argv[1])
                await s.open()
                async with s._tx(pipeline=True) as conn:
                    await conn.execute("SELECT pg_sleep(0.3)")
                    await conn.execute("SELECT length(%s)", ["x" * 20_000_000])
                await s.aclose()

            asyncio.run(main())
        print(form, "committed in", round(time.perf_counter() - started, 2), "s", flush=True)
    store.close()
    """
)


def test_a_large_last_statement_does_not_hang_the_sync(pg_url: str) -> None:
    try:
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT, pg_url], capture_output=True, text=True, timeout=90
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("the pipelined write hung (a sync with bytes unsent)") from None
    assert done.returncode == 0, done.stderr[-2000:]
    assert "sync committed" in done.stdout and "async committed" in done.stdout, done.stdout
