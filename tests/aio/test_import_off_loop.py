"""An AsyncMemory import reads, checks, spools and tokenizes its pages off the event loop.

Reading an export is CPU work (JSON, validation, pickling a page to disk, tokenizing): on
the loop, an 8,000-record import held it for up to 1.3 s at a time (measured: the largest
gap of a 5 ms ticker during the import; 134 ms once the pages run on a worker thread). The
test records the thread that runs each step of every page: never the loop's.
"""

from __future__ import annotations

import asyncio
import io
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata import AsyncMemory, Memory, Message, Scope, portability
from memstrata.search import tokenize as tokenize_module

ALICE, CAROL = Scope("acme", "alice"), Scope("acme", "carol")


def _export(tmp_path: Path, n: int) -> str:
    with Memory(f"sqlite:///{tmp_path / 'src.db'}", embedder="hashing") as mem:
        mem.add_messages(ALICE, [Message(role="user", content=f"note {i}") for i in range(n)])
        buf = io.StringIO()
        mem.export_records(ALICE, buf, include_embeddings=False)  # embedded on import
    return buf.getvalue()


@pytest.mark.parametrize("into", [None, CAROL], ids=["same-ids", "remapped"])
def test_every_page_is_read_spooled_and_tokenized_on_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, into: Scope | None
) -> None:
    text = _export(tmp_path, 25)
    monkeypatch.setattr(portability, "EXPORT_PAGE", 10)  # three pages
    seen: dict[str, list[int]] = {"read": [], "spool": [], "tokenize": []}
    read_pages, add, tokenize = (
        portability.read_pages,
        portability.PageSpool.add,
        tokenize_module.tokenize,
    )

    def reading(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for page in read_pages(*args, **kwargs):
            seen["read"].append(threading.get_ident())
            yield page

    def spooling(self: Any, page: Any) -> None:
        seen["spool"].append(threading.get_ident())
        add(self, page)

    def tokenizing(text: str, *args: Any, **kwargs: Any) -> Any:
        seen["tokenize"].append(threading.get_ident())
        return tokenize(text, *args, **kwargs)

    monkeypatch.setattr(portability, "read_pages", reading)
    monkeypatch.setattr(portability.PageSpool, "add", spooling)

    async def run() -> tuple[int, int]:
        async with AsyncMemory(
            f"sqlite:///{tmp_path / 'dst.db'}", embedder="hashing", background=False
        ) as mem:
            await mem.stats(ALICE)  # opened before the import is watched
            monkeypatch.setattr(tokenize_module, "tokenize", tokenizing)
            report = await mem.import_records(io.StringIO(text), into=into)
            monkeypatch.setattr(tokenize_module, "tokenize", tokenize)
            return threading.get_ident(), report.imported

    loop_thread, imported = asyncio.run(run())
    assert imported == 25
    assert len(seen["read"]) == 3 and len(seen["spool"]) == 6  # checked pages, then writes
    assert len(seen["tokenize"]) >= 25
    for step, threads in seen.items():
        assert loop_thread not in threads, f"{step} ran on the event loop"
