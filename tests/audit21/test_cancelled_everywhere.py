"""Every write of the async API cancelled at a spread of points (``asyncio.wait_for``
timing out), on SQLite, PostgreSQL and PostgreSQL behind Redis; afterwards:

- no half write: every live record is found by its vector and by its words, and its
  history ends at its version;
- the memory goes on: each call after a cancelled one returns (no lease, lock, job or
  connection left taken), and more calls at once than the pool has connections return;
- no noise: no "Task exception was never retrieved", no error logged by the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from aio.helpers import threads
from memstrata import AsyncMemory, Filters, Scope
from memstrata.quotas import Quota, Quotas

ALICE = Scope("acme", "alice", session="s1")
Op = Callable[[AsyncMemory, int], Awaitable[object]]


async def _add(mem: AsyncMemory, i: int) -> object:
    return await mem.add(ALICE, f"Alice noted fact {i}: the kettle number {i * 13} is blue")


async def _add_messages(mem: AsyncMemory, i: int) -> object:
    turns = [
        {"role": "user", "content": f"turn {i}: I bought {i} lemons at the market"},
        {"role": "assistant", "content": f"reply {i}: {i} lemons make a fine lemonade"},
    ]
    return await mem.add_messages(Scope("acme", "alice", session=f"s{i % 3}"), turns)  # type: ignore[arg-type]


async def _update(mem: AsyncMemory, i: int) -> object:
    rec = (await mem.list(ALICE, filters={"types": ["note"]}, limit=1))[0]
    return await mem.update(
        ALICE, rec.id, expected_version=rec.version, content=f"updated {i}: the lamp is green"
    )


async def _upsert(mem: AsyncMemory, i: int) -> object:
    fact = {"category": "identity", "key": "city", "value": f"City{i}", "confidence": 0.9}
    return await mem.facts.upsert(ALICE, fact)  # type: ignore[arg-type]


async def _ingest(mem: AsyncMemory, i: int) -> object:
    text = " ".join(f"Paragraph {i}.{k} of the manual explains valve {k}." for k in range(12))
    return await mem.knowledge.ingest(ALICE, text, qa_id="manual")


async def _key(mem: AsyncMemory, i: int) -> object:
    return await mem.key.set(ALICE, f"Always greet Alice in Portuguese ({i})")


async def _delete_restore(mem: AsyncMemory, i: int) -> object:
    rec = await mem.add(ALICE, f"a note {i} to delete and restore: the vase is red")
    await mem.delete(ALICE, rec.id)
    return await mem.restore(ALICE, rec.id)


async def _purge(mem: AsyncMemory, i: int) -> object:
    rec = await mem.add(ALICE, f"a note {i} to purge: the spoon is silver")
    return await mem.purge(ALICE, [rec.id])


async def _import(mem: AsyncMemory, i: int) -> object:
    source = Scope("acme", f"source{i}")
    await mem.add(source, f"imported note {i}: the rug is orange")
    out = io.StringIO()
    await mem.export_records(source, out)
    out.seek(0)
    return await mem.import_records(out, into=Scope("acme", "alice"))


async def _end_session(mem: AsyncMemory, i: int) -> object:
    await _add_messages(mem, i)
    return await mem.end_session(Scope("acme", "alice", session=f"s{i % 3}"))


async def _flush(mem: AsyncMemory, i: int) -> object:
    await _add_messages(mem, i)
    return await mem.flush()


OPS: list[Op] = [
    _add,
    _add_messages,
    _update,
    _upsert,
    _ingest,
    _key,
    _delete_restore,
    _purge,
    _import,
    _end_session,
    _flush,
]


async def _live(mem: AsyncMemory) -> list[Any]:
    flt = Filters()
    out: list[Any] = []
    for user in ("alice",):
        out += await mem.list(Scope("acme", user), filters=flt, limit=10_000)
    return out


async def _whole(mem: AsyncMemory) -> list[str]:
    """What is wrong with the live records (empty: nothing)."""
    wrong = []
    for rec in await _live(mem):
        only = {"ids": [rec.id]}
        for mode in ("dense", "lexical"):
            hits = await mem.search(rec.scope, rec.text, 1, filters=only, mode=mode)
            if [h.id for h in hits] != [rec.id]:
                wrong.append(f"{rec.id} ({rec.type.value}) not found by {mode} search")
        versions = await mem.history(rec.scope, rec.id)
        if versions and versions[-1].version != rec.version:
            wrong.append(f"{rec.id}: history ends at v{versions[-1].version}, not v{rec.version}")
    return wrong


def _run(url: str, buffer: str | None, background: bool) -> tuple[list[str], list[str], list[str]]:
    noise: list[str] = []

    async def main() -> tuple[list[str], list[str]]:
        asyncio.get_running_loop().set_exception_handler(
            lambda _loop, context: noise.append(str(context.get("message")))
        )
        hung: list[str] = []
        quotas = Quotas(per_user=Quota(max_records=100_000))
        async with AsyncMemory(
            url, embedder="hashing", background=background, buffer=buffer, quotas=quotas
        ) as mem:
            await _add(mem, 0)
            for i in range(66):
                op = OPS[i % len(OPS)]
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(op(mem, i), timeout=0.0005 * (i % 6 + 1) ** 2)
                try:  # the next call returns: nothing was left taken
                    await asyncio.wait_for(_add(mem, 1000 + i), timeout=10)
                except TimeoutError:
                    hung.append(f"the add after a cancelled {op.__name__} ({i})")
                    break
            # more calls at once than the pool has connections
            await asyncio.wait_for(
                asyncio.gather(*(mem.search(ALICE, "kettle", 5) for _ in range(24))), timeout=20
            )
            await asyncio.wait_for(mem.flush(), timeout=30)
            wrong = await _whole(mem)
        return hung, wrong

    hung, wrong = asyncio.run(main())
    return hung, wrong, noise


@pytest.mark.parametrize("background", [False, True], ids=["inline", "background"])
@pytest.mark.parametrize("store", ["sqlite", "postgresql", "postgresql+redis"])
def test_writes_cancelled_anywhere_leave_whole_records(
    store: str, background: bool, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    if store.startswith("postgresql"):
        url = request.getfixturevalue("pg_url")
    buffer = request.getfixturevalue("redis_buffer_url") if "redis" in store else None
    hung, wrong, noise = _run(url, buffer, background)
    assert hung == []
    assert wrong == []
    assert noise == []


@pytest.mark.parametrize("store", ["sqlite", "postgresql+redis"])
def test_closing_right_after_a_cancelled_write(
    store: str, request: pytest.FixtureRequest, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Each write cancelled, then the memory closed at once: closing returns, nothing is
    logged as failed, no thread is left, and the store, opened again, holds whole records
    only."""
    url = f"sqlite:///{tmp_path / 'm.db'}"
    if store.startswith("postgresql"):
        url = request.getfixturevalue("pg_url")
    buffer = request.getfixturevalue("redis_buffer_url") if "redis" in store else None

    async def main() -> list[str]:
        for i in range(22):
            op = OPS[i % len(OPS)]
            mem = AsyncMemory(url, embedder="hashing", background=bool(i % 2), buffer=buffer)
            await mem.open()
            await _add(mem, i)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(op(mem, i), timeout=0.0005 * (i % 6 + 1) ** 2)
            await asyncio.wait_for(mem.aclose(), timeout=30)
        async with AsyncMemory(url, embedder="hashing", background=False, buffer=buffer) as mem:
            await asyncio.wait_for(mem.flush(), timeout=30)
            return await _whole(mem)

    before = threads()
    with caplog.at_level("ERROR"):
        assert asyncio.run(main()) == []
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []
    assert threads() == before  # no thread of a closed memory outlives it
