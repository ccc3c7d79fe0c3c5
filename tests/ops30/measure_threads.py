"""Live threads of the threaded store around 200 transactions at once (ops30,
docs/measurements.md)."""

from __future__ import annotations

import asyncio
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memstrata.aio.stores import open_store  # noqa: E402
from memstrata.scope import Scope  # noqa: E402
from store.conftest import Maker  # noqa: E402


async def main(url: str) -> None:
    store = await open_store(url)
    maker = Maker()
    writes = [maker.write() for _ in range(200)]
    barrier = asyncio.Barrier(200)
    peak: list[int] = []

    async def one(i: int) -> None:
        async with store.transaction() as tx:
            await barrier.wait()
            await tx.insert([writes[i]])
            await tx.get(Scope("t1", "u1"), writes[i].record.id)
            peak.append(threading.active_count())

    base = threading.active_count()
    await asyncio.gather(*(one(i) for i in range(200)))
    await asyncio.sleep(1.0)
    after = threading.active_count()
    print(url[:6], "threads before", base, "peak", max(peak), "1 s after", after)
    await store.aclose()


if __name__ == "__main__":
    asyncio.run(main(f"sqlite:///{tempfile.mkdtemp()}/t.db"))
    asyncio.run(main("memory://"))
