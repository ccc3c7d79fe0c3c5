"""``AsyncMemory``'s export of a long history in parts (the async source: PostgreSQL's
natively async ``history_parts``, SQLite's and memory://'s on a thread of their own,
``aio/threaded.py``): the same bytes as the sync memory writes from the same store, a
caller's too."""

from __future__ import annotations

import asyncio
import io
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata import AsyncMemory, FixedClock, Memory, Scope
from memstrata.records import MemoryRecord

from .conftest import PART, SECRET, USER, export_text, write_shared_late

T = FixedClock(datetime(2026, 2, 1, tzinfo=UTC))  # one exported_at for both exports


async def _export(url: str, scope: Scope) -> str:
    async with AsyncMemory(url, embedder="hashing", clock=T, background=False) as mem:
        buf = io.StringIO()
        await mem.export_records(scope, buf)
        chunks = [c async for c in mem.export_chunks(scope)]
    assert "".join(chunks) == buf.getvalue()
    return buf.getvalue()


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_the_async_export_in_parts_is_the_sync_one(
    store: str,
    base: MemoryRecord,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    url = (
        f"sqlite:///{tmp_path / 'm.db'}" if store == "sqlite" else request.getfixturevalue("pg_url")
    )
    n, private = 3 * PART + 7, PART + 3
    with Memory(url, embedder="hashing", clock=T, background=False) as mem:
        with write_shared_late(tmp_path / "long.jsonl", base, n, private).open() as fp:
            mem.import_records(fp)
        monkeypatch.setattr("memstrata.portability.HISTORY_PAGE", PART)
        owner, caller = export_text(mem), export_text(mem, USER.as_caller("carol"))
    assert asyncio.run(_export(url, USER)) == owner
    assert asyncio.run(_export(url, USER.as_caller("carol"))) == caller
    assert SECRET in owner and SECRET not in caller
    assert owner.count('"past_version"') == n and caller.count('"past_version"') == n - private
