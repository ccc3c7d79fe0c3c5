"""An import of a record of a name (a fact key, a document) takes the name's turn.

An import writes its records in one transaction and then settles each name it brought a
live record of (``facts.settle``: a key with a live fact of the store's own keeps one).
Until session 31 neither took the name's turn: a first writer or a restore of the name
that had checked the name (``FirstVersion.check``, ``NameRead.check``, holding its turn)
before the import committed, and committed after the import's settle read the name, left
two live records (PostgreSQL: the import's insert waits for no such writer; SQLite and
memory:// let one writer at a time in, so there the import came after). And an import of
a document version whose name had a live version of the store's own left both live,
whatever the order. Now the import's settle takes the name's turn first (it waits for
every writer in it), then reads and decides, and its transaction checks the name again;
a document keeps one version too (the one written last; the other soft-deleted,
restorable).

Each race holds the other writer inside its transaction, just after it took the name's
turn, ``HOLD`` seconds, while the import runs. Threads, coroutines and processes;
SQLite, PostgreSQL and memory://."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import io
import multiprocessing
import threading
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata import FixedClock, Memory
from memstrata.llm.models import ExtractedFact
from restore30.test_restore_takes_the_turn import NO_GATE, URLS, _url
from test_concurrent_services import (
    ALICE,
    KINDS,
    Writer,
    _chunks,
    _current_facts,
    _fact,
    _no_errors,
    _text,
    _values_in_history,
    race,
)
from test_quota_services import Mem

HOLD = 2.0  # the other writer stays in its transaction, holding the name's turn, this long
# the file's records were written before the store's (a backup made earlier)
FILE_CLOCK = FixedClock(datetime(2026, 1, 1, 12, 0, tzinfo=UTC))


def _file(tmp: Path, what: str) -> str:
    """An export of ALICE holding a live fact ``location: Lyon`` or a version of the
    document ``ferries`` (another store's: other ids)."""
    with Memory(
        f"sqlite:///{tmp / f'file-{what}.db'}",
        embedder="hashing",
        background=False,
        clock=FILE_CLOCK,
    ) as source:
        if what == "fact":
            source.facts.upsert(ALICE, ExtractedFact(**_fact("Lyon", 0.8)))
        else:
            source.knowledge.ingest(ALICE, _text(7), "ferries")
        out = io.StringIO()
        source.export_records(ALICE.user_scope, out, include_embeddings=True)
        return out.getvalue()


_holding: contextvars.ContextVar[Any] = contextvars.ContextVar("holding", default=None)


class _Turn:
    """Where the holding writer is: ``checked`` once it took the name's turn."""

    def __init__(self, kind: str, checked: Any = None) -> None:
        self.kind = kind
        self.sync_checked = checked or threading.Event()  # a process's Event: given
        self.async_checked = asyncio.Event() if kind == "async" else None
        self.passed = False

    def set(self) -> None:
        self.sync_checked.set()
        if self.async_checked is not None:
            self.async_checked.set()

    async def wait(self) -> None:
        if self.kind == "sync":
            assert await asyncio.to_thread(self.sync_checked.wait, 30)
        else:
            assert self.async_checked is not None
            await asyncio.wait_for(self.async_checked.wait(), 30)


def _hold_in_turn(m: Mem, turn: _Turn) -> None:
    """The writer of this context, in its first transaction's first ``key_versions`` (the
    name's turn): ``HOLD`` seconds after it, its turn held, the import running."""
    _holding.set(turn)
    store: Any = m.memory.store
    if "transaction" in vars(store):
        return  # a shared memory (memory://): wrapped already
    call = store.transaction
    transaction: Any

    if isinstance(m.memory, Memory):

        class SyncTx:
            def __init__(self, tx: Any) -> None:
                self._tx = tx

            def __getattr__(self, name: str) -> Any:
                return getattr(self._tx, name)

            def key_versions(self, *args: Any) -> Any:
                found = self._tx.key_versions(*args)
                held = _holding.get()
                if held is not None and not held.passed:
                    held.passed = True
                    held.set()
                    time.sleep(HOLD)
                return found

        @contextlib.contextmanager
        def sync_transaction(*args: Any, **kwargs: Any) -> Iterator[Any]:
            with call(*args, **kwargs) as tx:
                yield SyncTx(tx) if _holding.get() is not None else tx

        transaction = sync_transaction
    else:

        class AsyncTx:
            def __init__(self, tx: Any) -> None:
                self._tx = tx

            def __getattr__(self, name: str) -> Any:
                return getattr(self._tx, name)

            async def key_versions(self, *args: Any) -> Any:
                found = await self._tx.key_versions(*args)
                held = _holding.get()
                if held is not None and not held.passed:
                    held.passed = True
                    held.set()
                    await asyncio.sleep(HOLD)
                return found

        @contextlib.asynccontextmanager
        async def async_transaction(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            async with call(*args, **kwargs) as tx:
                yield AsyncTx(tx) if _holding.get() is not None else tx

        transaction = async_transaction
    store.transaction = transaction


def _writers(kind: str, other: Writer, text: str) -> list[Writer]:
    """``other``, held in its turn; the import of ``text``, once ``other`` holds it."""
    turn = _Turn(kind)

    async def holder(m: Mem) -> Any:
        _hold_in_turn(m, turn)
        return await other(m)

    async def importer(m: Mem) -> Any:
        await turn.wait()
        return await m("import_records", io.StringIO(text))

    return [holder, importer]


async def _deleted(m: Mem, made: dict[str, str], what: str) -> None:
    if what == "fact":
        record = (await m("facts.upsert", ALICE, _fact("Paris", 0.8))).record
    else:
        [record] = await m("knowledge.ingest", ALICE, _text(0), "ferries")
    await m("delete", ALICE.user_scope, record.id)
    made["deleted"] = record.id


async def _one_live(m: Mem, what: str) -> None:
    if what == "fact":
        live = await _current_facts(m)
        assert len(live) == 1, [r.content.structured["value"] for r in live]
        assert "Lyon" in await _values_in_history(m)  # the file's value: stored
    else:
        live = await _chunks(m, deleted=False)
        assert len(live) == 1, [r.text for r in live]
        stored = {r.text for r in await _chunks(m, deleted=True)}
        assert _text(7) in stored  # the file's version: stored


def _other(what: str, job: str, made: dict[str, str]) -> Writer:
    if job == "restore":
        return lambda m: m("restore", ALICE.user_scope, made["deleted"])
    if what == "fact":
        return lambda m: m("facts.upsert", ALICE, _fact("Oslo", 0.8))
    return lambda m: m("knowledge.ingest", ALICE, _text(1), "ferries")


@pytest.mark.parametrize("job", ["first", "restore"])
@pytest.mark.parametrize("what", ["fact", "document"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("store", URLS)
def test_an_import_beside_a_writer_in_its_turn_leaves_one_live_record(
    request: pytest.FixtureRequest, tmp_path: Path, store: str, kind: str, what: str, job: str
) -> None:
    text = _file(tmp_path, what)
    url, sharing = _url(request, store)
    made: dict[str, str] = {}

    async def setup(m: Mem) -> None:
        if job == "restore":
            await _deleted(m, made, what)

    async def check(m: Mem) -> None:
        await _one_live(m, what)

    writers = _writers(kind, _other(what, job, made), text)
    results = race(kind, url, sharing, NO_GATE, writers, setup, check)
    _no_errors(results)
    assert results[1].imported == 1, results[1]


def test_an_import_of_a_version_of_a_stored_document_keeps_one(tmp_path: Path) -> None:
    """No race: the store's own live version written after the file's stays live, the
    file's version is stored soft-deleted (restorable); before, both were live."""
    text = _file(tmp_path, "document")
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", background=False) as mem:
        [mine] = mem.knowledge.ingest(ALICE, _text(1), "ferries")
        assert mem.import_records(io.StringIO(text)).imported == 1
        assert [r.id for r in mem.knowledge.chunks(ALICE, "ferries")] == [mine.id]
        stored = asyncio.run(_chunks(Mem(mem), deleted=True))
        [theirs] = [r for r in stored if r.text == _text(7)]
        assert not theirs.is_active
        mem.restore(ALICE.user_scope, theirs.id)  # restorable: it replaces the other
        assert [r.id for r in mem.knowledge.chunks(ALICE, "ferries")] == [theirs.id]


# --- processes -----------------------------------------------------------------------------
def _process_writer(url: str, job: str, what: str, arg: str, turn: Any, out: Any) -> None:
    """The holding writer (``job``) or the import (``arg`` its file's text)."""
    memory = Memory(url, embedder="hashing", background=False)
    try:
        if job == "import":
            assert turn.wait(60)
            out.put(("import", memory.import_records(io.StringIO(arg)).imported))
            return
        _hold_in_turn(Mem(memory), _Turn("sync", turn))
        if job == "restore":
            memory.restore(ALICE.user_scope, arg)
        elif what == "fact":
            memory.facts.upsert(ALICE, ExtractedFact(**_fact("Oslo", 0.8)))
        else:
            memory.knowledge.ingest(ALICE, _text(1), "ferries")
        out.put((job, None))
    except BaseException as exc:  # noqa: BLE001 - reported to the test
        out.put((job, repr(exc)))
    finally:
        memory.close()


@pytest.mark.parametrize("job", ["first", "restore"])
@pytest.mark.parametrize("what", ["fact", "document"])
def test_an_import_beside_a_writer_process_in_its_turn(
    url: str, tmp_path: Path, what: str, job: str
) -> None:
    text = _file(tmp_path, what)
    memory = Memory(url, embedder="hashing", background=False)
    try:
        made: dict[str, str] = {}
        if job == "restore":
            asyncio.run(_deleted(Mem(memory), made, what))
        spawn = multiprocessing.get_context("spawn")
        turn, out = spawn.Event(), spawn.Queue()
        procs = [
            spawn.Process(
                target=_process_writer,
                args=(url, job, what, made.get("deleted", ""), turn, out),
            ),
            spawn.Process(target=_process_writer, args=(url, "import", what, text, turn, out)),
        ]
        for p in procs:
            p.start()
        results = dict(out.get(timeout=300) for _ in procs)
        for p in procs:
            p.join(60)
        assert results == {job: None, "import": 1}, results
        asyncio.run(_one_live(Mem(memory), what))
    finally:
        memory.close()
