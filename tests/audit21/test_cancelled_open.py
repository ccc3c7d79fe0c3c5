"""``open()`` cancelled (``asyncio.wait_for(mem.open(), ...)``, or the first call of a
memory under a timeout) on PostgreSQL while the store opens its connection pool: the pool
stayed half open, its worker tasks pending and its connections held until the garbage
collector found them ("Task was destroyed but it is pending!" at exit). Now the pool is
closed before the cancellation goes on, and the memory opens on its next call."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import psycopg

from memstrata import AsyncMemory, Scope

ALICE = Scope("acme", "alice", session="s1")


def _connections(admin_url: str) -> int:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
        ).fetchone()
    assert row is not None
    return int(row[0]) - 1  # not this one


def test_a_cancelled_open_leaves_no_pool_behind(pg_url: str, pg_server: Any) -> None:
    noise: list[str] = []

    async def main() -> tuple[int, int]:
        asyncio.get_running_loop().set_exception_handler(
            lambda _loop, context: noise.append(str(context.get("message")))
        )
        async with AsyncMemory(pg_url, embedder="hashing", background=False):
            pass  # the schema exists: what follows times only the pool's opening
        before = await asyncio.to_thread(_connections, pg_server.admin_url)
        for i in range(10):
            mem = AsyncMemory(pg_url, embedder="hashing", background=False)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(mem.open(), timeout=0.002 * (i + 1))
            await mem.add(ALICE, f"note {i}")  # opens on the next call
            await mem.aclose()
        await asyncio.sleep(0.2)
        return before, await asyncio.to_thread(_connections, pg_server.admin_url)

    before, after = asyncio.run(main())
    assert after == before
    assert noise == []
