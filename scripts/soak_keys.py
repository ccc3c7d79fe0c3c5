"""What a long-running process keeps per user, tenant, API key and session (session 29).

Sends requests with distinct keys, tenants, users and sessions through the real HTTP app
(``create_app`` over an ``AsyncMemory`` on SQLite, as ``memstrata serve`` builds it, driven
in-process through httpx's ASGI transport on one event loop, lifespan included) or through
the library (``AsyncMemory`` calls), and prints the process's memory after each block of
``--block`` distinct keys: RSS (``/proc/self/status``) and, with ``--trace``, what
tracemalloc holds, with the source lines that grew most between the first and the last
checkpoint. A structure kept per key shows up as a steady growth per block; a bounded one
flattens once its cap is reached.

    PYTHONPATH=src python scripts/soak_keys.py http --keys 50000
    PYTHONPATH=src python scripts/soak_keys.py library --keys 50000 --trace
    PYTHONPATH=src python scripts/soak_keys.py mcp --keys 20000

Each distinct key sends one search for a user of its own (a user with no records: the
cheapest request that still reaches the store's per-user state), and every ``--write-every``
th key first stores a note (so the background worker runs a job for that user too). ``mcp``
sends the search as a ``memory_search`` tool call to the app's MCP endpoint (stateless
streamable HTTP), with a key bound to the user.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Recorder:
    def __init__(self, trace: bool) -> None:
        self.trace = trace
        self.rows: list[tuple[int, float, float]] = []
        self.first: tracemalloc.Snapshot | None = None
        self.last: tracemalloc.Snapshot | None = None

    def checkpoint(self, done: int) -> None:
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0] / 2**20 if self.trace else float("nan")
        self.rows.append((done, rss_mib(), traced))
        if self.trace:
            snap = tracemalloc.take_snapshot().filter_traces(
                (tracemalloc.Filter(False, tracemalloc.__file__),)
            )
            if self.first is None:
                self.first = snap
            self.last = snap
        print(f"  {done:>8} keys  rss {self.rows[-1][1]:8.1f} MiB  traced {traced:8.1f} MiB")
        sys.stdout.flush()

    def report(self, block: int) -> None:
        (k0, r0, t0), (k1, r1, t1) = self.rows[0], self.rows[-1]
        blocks = max(1, (k1 - k0) / block)
        print(
            f"growth after warm-up: rss {r1 - r0:+.1f} MiB ({(r1 - r0) / blocks:+.2f} per "
            f"{block} keys), traced {t1 - t0:+.1f} MiB ({(t1 - t0) / blocks:+.2f} per {block})"
        )
        if self.first is not None and self.last is not None:
            print("largest growth by line (traced):")
            for stat in self.last.compare_to(self.first, "lineno")[:12]:
                print(
                    f"  {stat.size_diff / 1024:+10.1f} KiB  {stat.count_diff:+8d}  "
                    f"{stat.traceback[0]}"
                )


async def run_blocks(
    keys: int,
    block: int,
    warmup: int,
    one: Callable[[int], Awaitable[None]],
    rec: Recorder,
    concurrency: int,
) -> None:
    async def span(lo: int, hi: int) -> None:
        it = iter(range(lo, hi))

        async def lane() -> None:
            for i in it:
                await one(i)

        await asyncio.gather(*(lane() for _ in range(concurrency)))

    await span(0, warmup)
    rec.checkpoint(0)
    done = 0
    while done < keys:
        hi = min(keys, done + block)
        await span(warmup + done, warmup + hi)
        done = hi
        rec.checkpoint(done)


def bound_vectors(mem: Any, args: argparse.Namespace) -> None:
    """A smaller vector cache than the default (to see it flatten within a short run)."""
    if args.vector_cache_rows:
        store = getattr(mem.store, "sync", mem.store)  # the SQLite store under its threads
        store._vectors.max_rows = args.vector_cache_rows


async def soak_http(args: argparse.Namespace, db: Path, rec: Recorder) -> None:
    import httpx

    from memstrata import AsyncMemory
    from memstrata.server import create_app
    from memstrata.server.app import Limits
    from memstrata.server.key_cache import CachedKeys
    from memstrata.server.keys import InMemoryKeyStore

    total = args.keys + args.warmup
    store = InMemoryKeyStore()
    t = time.perf_counter()
    # one service key per tenant: every request is a new key, tenant and user
    secrets = [store.create(f"t{i}").secret for i in range(total)]
    print(f"made {total} keys in {time.perf_counter() - t:.1f} s")
    mem = AsyncMemory(f"sqlite:///{db}", embedder="hashing", background=True)
    keys = CachedKeys(store, 1.0)
    limits = Limits(rate=50.0, burst=100, tenant_rate=100.0)
    app = create_app(mem, keys, limits=limits, on_close=mem.aclose, mcp=False)
    transport = httpx.ASGITransport(app=app)
    statuses: dict[int, int] = {}

    client = httpx.AsyncClient(transport=transport, base_url="http://soak")
    async with app.router.lifespan_context(app), client:

        async def one(i: int) -> None:
            h = {"Authorization": f"Bearer {secrets[i]}"}
            u = f"/v1/users/u{i}"
            if args.write_every and i % args.write_every == 0:
                r = await client.post(
                    f"{u}/memories", headers=h, json={"content": f"user {i} keeps bees"}
                )
                statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
            r = await client.post(f"{u}/search", headers=h, json={"query": f"topic {i}"})
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1

        bound_vectors(mem, args)
        await run_blocks(args.keys, args.block, args.warmup, one, rec, args.concurrency)
    print("statuses:", dict(sorted(statuses.items())))


async def soak_mcp(args: argparse.Namespace, db: Path, rec: Recorder) -> None:
    import httpx

    from memstrata import AsyncMemory
    from memstrata.server import create_app
    from memstrata.server.app import Limits
    from memstrata.server.key_cache import CachedKeys
    from memstrata.server.keys import InMemoryKeyStore

    total = args.keys + args.warmup
    store = InMemoryKeyStore()
    secrets = [store.create(f"t{i}", user=f"u{i}").secret for i in range(total)]
    mem = AsyncMemory(f"sqlite:///{db}", embedder="hashing", background=True)
    app = create_app(
        mem, CachedKeys(store, 1.0), limits=Limits(rate=50.0, burst=100), on_close=mem.aclose
    )
    statuses: dict[int, int] = {}
    # the MCP SDK's DNS-rebinding protection accepts 127.0.0.1 (the app's default host)
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8000"
    )
    async with app.router.lifespan_context(app), client:

        async def one(i: int) -> None:
            h = {
                "Authorization": f"Bearer {secrets[i]}",
                "Accept": "application/json, text/event-stream",
                "x-memstrata-session": f"s{i}",
            }
            call = {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "memory_search", "arguments": {"query": f"topic {i}"}},
            }
            r = await client.post("/mcp", json=call, headers=h)
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1

        bound_vectors(mem, args)
        await run_blocks(args.keys, args.block, args.warmup, one, rec, args.concurrency)
    print("statuses:", dict(sorted(statuses.items())))


async def soak_library(args: argparse.Namespace, db: Path, rec: Recorder) -> None:
    from memstrata import AsyncMemory, Scope

    async with AsyncMemory(f"sqlite:///{db}", embedder="hashing", background=True) as mem:
        bound_vectors(mem, args)

        async def one(i: int) -> None:
            scope = Scope(f"t{i % 100}", f"u{i}", session=f"s{i}")
            if args.write_every and i % args.write_every == 0:
                await mem.add_message(scope, "user", f"user {i} keeps bees")
            await mem.search(scope, f"topic {i}", top_k=5)

        await run_blocks(args.keys, args.block, args.warmup, one, rec, args.concurrency)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("path", choices=["http", "library", "mcp"])
    p.add_argument("--keys", type=int, default=50_000, help="distinct keys after warm-up")
    p.add_argument("--block", type=int, default=10_000, help="keys between checkpoints")
    p.add_argument("--warmup", type=int, default=2_000)
    p.add_argument("--write-every", type=int, default=10, help="0: searches only")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--trace", action="store_true", help="tracemalloc (slower)")
    p.add_argument(
        "--vector-cache-rows",
        type=int,
        default=0,
        help="the store's vector cache bound (0: the default, 500,000 rows)",
    )
    args = p.parse_args()
    if args.trace:
        tracemalloc.start(1)
    rec = Recorder(args.trace)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "soak.db"
        t = time.perf_counter()
        run: Any = {"http": soak_http, "library": soak_library, "mcp": soak_mcp}[args.path]
        asyncio.run(run(args, db, rec))
        took = time.perf_counter() - t
        print(f"{args.path}: {args.keys} keys in {took:.0f} s, pid {os.getpid()}")
    rec.report(args.block)


if __name__ == "__main__":
    main()
