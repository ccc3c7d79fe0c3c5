"""An import holds a page, not the file: its lines are checked a page at a time onto disk,
then written a page an insert in one transaction, so a bad line anywhere (or a write that
fails on a late page) leaves nothing written, on every store of the ``mem`` fixture.

Before: ``read_jsonl`` parsed the whole file into a list of records and a dict of vectors,
every missing vector was embedded in one call, and all of it was inserted at once."""

from __future__ import annotations

import asyncio
import io
import json
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from memstrata import AsyncMemory, Memory, Message, Scope
from memstrata.embedder import hashing
from memstrata.embedder.cache_types import LRUEmbeddingCache
from memstrata.errors import ImportFormatError, StoreError

ALICE, CAROL = Scope("acme", "alice"), Scope("acme", "carol")
PAGE = 10  # records a page in the tests that need several pages of a small file


def _export(mem: Memory, n: int, *, embeddings: bool = False) -> list[str]:
    for start in range(0, n, 1000):
        mem.add_messages(
            ALICE,
            [
                Message(role="user", content=f"note {i} about topic {i * 7}, said in passing")
                for i in range(start, min(n, start + 1000))
            ],
        )
    buf = io.StringIO()
    mem.export_records(ALICE, buf, include_embeddings=embeddings)
    return buf.getvalue().splitlines(keepends=True)


def _nothing_in(mem: Memory, scope: Scope) -> bool:
    return mem.list(scope, limit=10) == [] and mem.stats(scope)["records"] == 0


@pytest.mark.parametrize("into", [None, CAROL], ids=["same-ids", "remapped"])
def test_a_bad_line_near_the_end_of_a_large_file_writes_nothing(
    mem: Memory, monkeypatch: pytest.MonkeyPatch, into: Scope | None
) -> None:
    monkeypatch.setattr("memstrata.portability.EXPORT_PAGE", PAGE)
    lines = _export(mem, 5 * PAGE + 3)
    mem.purge(ALICE)
    bad = [*lines[:-3], '{"record": {"id": "x"}}\n', *lines[-2:]]  # 2nd-to-last record
    with pytest.raises(ImportFormatError, match=f"line {len(lines) - 2}:"):
        mem.import_records(io.StringIO("".join(bad)), into=into)
    assert _nothing_in(mem, into or ALICE)
    cut = lines[:-1]  # no end line: the whole file read before that is known
    with pytest.raises(ImportFormatError, match="does not end with its end line"):
        mem.import_records(io.StringIO("".join(cut)), into=into)
    assert _nothing_in(mem, into or ALICE)
    twice = [*lines[:-2], lines[1], lines[-2], lines[-1].replace(str(5 * PAGE + 3), "54")]
    with pytest.raises(ImportFormatError, match="appears twice"):
        mem.import_records(io.StringIO("".join(twice)), into=into)
    assert _nothing_in(mem, into or ALICE)


class _FailingOnPage:
    """A unit of work whose insert of the ``nth`` page fails (a disk that filled up)."""

    def __init__(self, tx: Any, nth: int) -> None:
        self._tx, self._left = tx, nth

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)

    def insert(self, writes: Any) -> None:
        self._left -= 1
        if self._left == 0:
            raise StoreError("the disk is full")
        self._tx.insert(writes)


def test_a_write_that_fails_on_a_late_page_rolls_back_the_earlier_pages(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memstrata.portability.EXPORT_PAGE", PAGE)
    text = "".join(_export(mem, 4 * PAGE + 5))
    store = mem.store
    original = store.transaction
    inserts: list[int] = []

    @contextmanager
    def failing() -> Iterator[Any]:
        with original() as tx:
            yield _FailingOnPage(tx, 5)

    monkeypatch.setattr(store, "transaction", failing)
    with pytest.raises(StoreError, match="the disk is full"):
        mem.import_records(io.StringIO(text), into=CAROL)
    assert _nothing_in(mem, CAROL)  # pages 1-4 were inserted, then rolled back

    @contextmanager
    def counting() -> Iterator[Any]:
        with original() as tx:
            real = tx.insert

            def insert(writes: Any) -> None:
                inserts.append(len(writes))
                real(writes)

            tx.insert = insert
            yield tx

    monkeypatch.setattr(store, "transaction", counting)
    report = mem.import_records(io.StringIO(text), into=CAROL)
    assert (report.imported, report.skipped) == (4 * PAGE + 5, 0)
    assert inserts == [PAGE] * 4 + [5]  # one transaction, one insert a page


SMALL, LARGE = 2_000, 8_000


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Exports of a small and a 4x larger user, with and without embeddings, on disk."""
    root = tmp_path_factory.mktemp("imports")
    out = {}
    for n in (SMALL, LARGE):
        for embeddings in (False, True):
            with Memory(f"sqlite:///{root / f'{n}.db'}", embedder="hashing") as mem:
                path = root / f"{n}-{embeddings}.jsonl"
                path.write_text("".join(_export(mem, n, embeddings=embeddings)))
                mem.purge(ALICE)
            out[f"{n}-{embeddings}"] = path
    return out


def _peak(tmp_path: Path, path: Path, name: str) -> tuple[int, int]:
    """(peak bytes traced during the import of ``path`` into a fresh store, records)."""
    with Memory(f"sqlite:///{tmp_path / name}", embedder="hashing", background=False) as mem:
        mem._embedder._lru = LRUEmbeddingCache(16)  # the memory's vector LRU is not the import's
        mem.stats(ALICE)  # opened and migrated before the measure
        with path.open(encoding="utf-8") as fp:
            tracemalloc.start()
            try:
                report = mem.import_records(fp)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
    return peak, report.imported


@pytest.mark.parametrize("embeddings", [False, True], ids=["embedded-on-import", "from-file"])
def test_import_peak_memory_does_not_grow_with_the_file(
    files: dict[str, Path], tmp_path: Path, embeddings: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hashing, "_WORD_CACHE_MAX", 0)  # the embedder's word cache is not ours
    small, n_small = _peak(tmp_path, files[f"{SMALL}-{embeddings}"], "small.db")
    large, n_large = _peak(tmp_path, files[f"{LARGE}-{embeddings}"], "large.db")
    assert (n_small, n_large) == (SMALL, LARGE)
    # Before: every record (and vector) of the file was held at once: ~4x the peak.
    assert large < 1.35 * small, f"peak {small / 1e6:.1f} MB -> {large / 1e6:.1f} MB"


def _async_peak(tmp_path: Path, path: Path, name: str) -> tuple[int, int]:
    """:func:`_peak` for an ``AsyncMemory`` (SQLite on its store threads)."""

    async def run() -> tuple[int, int]:
        url = f"sqlite:///{tmp_path / name}"
        async with AsyncMemory(url, embedder="hashing", background=False) as mem:
            mem._embedder._lru = LRUEmbeddingCache(16)
            await mem.stats(ALICE)
            with path.open(encoding="utf-8") as fp:
                tracemalloc.start()
                try:
                    report = await mem.import_records(fp)
                    peak = tracemalloc.get_traced_memory()[1]
                finally:
                    tracemalloc.stop()
        return peak, report.imported

    return asyncio.run(run())


def test_an_async_import_on_sqlite_holds_a_page_of_writes(
    files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store's async adapter runs a unit of work's queued inserts once a page waits
    (before: all of them were queued until the commit, every vector included)."""
    monkeypatch.setattr(hashing, "_WORD_CACHE_MAX", 0)
    small, n_small = _async_peak(tmp_path, files[f"{SMALL}-True"], "small.db")
    large, n_large = _async_peak(tmp_path, files[f"{LARGE}-True"], "large.db")
    assert (n_small, n_large) == (SMALL, LARGE)
    assert large < 1.35 * small, f"peak {small / 1e6:.1f} MB -> {large / 1e6:.1f} MB"


def test_the_report_counts_what_was_there_and_what_was_embedded(mem: Memory) -> None:
    lines = _export(mem, 30, embeddings=True)
    head = json.loads(lines[0])
    text = "".join(lines)
    again = mem.import_records(io.StringIO(text))
    assert (again.imported, again.skipped, again.reembedded) == (0, 30, 0)
    other_model = text.replace(head["embedding_model"], "another-model", 1)
    report = mem.import_records(io.StringIO(other_model), into=CAROL)
    assert (report.imported, report.skipped, report.reembedded) == (30, 0, 30)
