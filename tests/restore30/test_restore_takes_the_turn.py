"""A restore of a fact or a document's chunk takes the name's turn (``layers/races.py``).

Until session 30 a restore read the name's live records, then in its transaction checked
only the record it restores: a first writer (a random id, ``FirstVersion.check``) that
committed between the restore's read and its transaction was not seen, and the name was
left with two live records (the restored one and the first writer's), as were two restores
of two deleted records of one name. Now the restore's transaction reads the name again
first (``NameRead.check``, through ``UnitOfWork.key_versions``, one transaction of the name
at a time): when a record of it was stored or made live since the read, the restore reads
again and decides on it (it ends the other live record, as a restore does).

Each race holds the writers at their transaction until both have read; the restore then
waits ``LATE`` seconds more, so the other writer commits first (the order that left two live
records). Threads, coroutines and processes; SQLite, PostgreSQL and memory://. Before the
fix every race here ended with two live records."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import multiprocessing
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from memstrata import Memory, SystemClock
from memstrata.llm.models import ExtractedFact
from memstrata.records import RecordType
from test_concurrent_services import (
    ALICE,
    GATE_SECONDS,
    KINDS,
    Gate,
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

LATE = 0.5  # the restore enters its transaction this long after the other writer
# race()'s own gate, left out: these writers are held at their transaction (below)
NO_GATE = Gate("count", lambda args: False)


@dataclass
class Held:
    """A writer's place at the gate: whether it got there, and whether it then waits."""

    barrier: Any
    late: bool
    passed: bool = False


_held: contextvars.ContextVar[Held | None] = contextvars.ContextVar("held", default=None)


def _hold(m: Mem, barrier: Any, *, late: bool) -> None:
    """Hold this writer at its first transaction until every writer got to its own (each
    read the name), then, when ``late``, ``LATE`` seconds more. Only in the writer's own
    context: a memory:// store is shared by both writers and the check."""
    _held.set(Held(barrier, late))
    store: Any = m.memory.store
    if "transaction" in vars(store):
        return  # the other writer's memory (memory://): held already
    call = store.transaction

    def wait(held: Held) -> bool:
        held.passed = True
        return held.late

    transaction: Any
    if isinstance(m.memory, Memory):

        def transaction(*args: Any, **kwargs: Any) -> Any:
            held = _held.get()
            if held is not None and not held.passed:
                with contextlib.suppress(threading.BrokenBarrierError):
                    held.barrier.wait(GATE_SECONDS)
                if wait(held):
                    time.sleep(LATE)
            return call(*args, **kwargs)

    else:

        @contextlib.asynccontextmanager
        async def held_transaction(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            held = _held.get()
            if held is not None and not held.passed:
                with contextlib.suppress(TimeoutError, asyncio.BrokenBarrierError):
                    await asyncio.wait_for(held.barrier.wait(), GATE_SECONDS)
                if wait(held):
                    await asyncio.sleep(LATE)
            async with call(*args, **kwargs) as tx:
                yield tx

        transaction = held_transaction

    store.transaction = transaction


def _barrier(kind: str) -> Any:
    return threading.Barrier(2) if kind == "sync" else asyncio.Barrier(2)


def _held_writers(kind: str, first: Writer, restore: Writer) -> list[Writer]:
    """``first`` and ``restore``, held at their transaction; the restore enters it last."""
    barrier = _barrier(kind)

    async def one(m: Mem) -> Any:
        _hold(m, barrier, late=False)
        return await first(m)

    async def two(m: Mem) -> Any:
        _hold(m, barrier, late=True)
        return await restore(m)

    return [one, two]


def _restoring(made: dict[str, str], name: str) -> Writer:
    return lambda m: m("restore", ALICE.user_scope, made[name])


URLS = ["sqlite", "postgresql", "memory"]


def _url(request: pytest.FixtureRequest, store: str) -> tuple[str, str]:
    if store == "memory":
        return "memory://", "shared"
    if store == "sqlite":
        return f"sqlite:///{request.getfixturevalue('tmp_path') / 'm.db'}", "own"
    return request.getfixturevalue("pg_url"), "own"


async def _deleted_paris(m: Mem, made: dict[str, str]) -> None:
    paris = (await m("facts.upsert", ALICE, _fact("Paris", 0.8))).record
    await m("delete", ALICE.user_scope, paris.id)
    made["paris"] = paris.id


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("store", URLS)
def test_a_restore_after_a_first_fact_leaves_one_live_fact(
    request: pytest.FixtureRequest, store: str, kind: str
) -> None:
    url, sharing = _url(request, store)
    made: dict[str, str] = {}

    async def setup(m: Mem) -> None:
        await _deleted_paris(m, made)

    writers = _held_writers(
        kind, lambda m: m("facts.upsert", ALICE, _fact("Oslo", 0.8)), _restoring(made, "paris")
    )

    async def check(m: Mem) -> None:
        live = await _current_facts(m)
        # the restore found Oslo (stored first) and ended it: Paris, the restored value
        assert [r.content.structured["value"] for r in live] == ["Paris"], live
        assert await _values_in_history(m) == {"Paris", "Oslo"}

    results = race(kind, url, sharing, NO_GATE, writers, setup, check)
    _no_errors(results)
    assert results[1].id == made["paris"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("store", URLS)
def test_two_restores_of_one_key_leave_one_live_fact(
    request: pytest.FixtureRequest, store: str, kind: str
) -> None:
    url, sharing = _url(request, store)
    made: dict[str, str] = {}

    async def setup(m: Mem) -> None:
        await _deleted_paris(m, made)
        oslo = (await m("facts.upsert", ALICE, _fact("Oslo", 0.8))).record
        await m("delete", ALICE.user_scope, oslo.id)
        made["oslo"] = oslo.id

    async def first(m: Mem) -> Any:
        return await m("restore", ALICE.user_scope, made["oslo"])

    writers = _held_writers(kind, first, _restoring(made, "paris"))

    async def check(m: Mem) -> None:
        live = await _current_facts(m)
        assert [r.content.structured["value"] for r in live] == ["Paris"], live

    _no_errors(race(kind, url, sharing, NO_GATE, writers, setup, check))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("store", URLS)
def test_a_restore_after_a_first_version_of_a_document_leaves_one_live_version(
    request: pytest.FixtureRequest, store: str, kind: str
) -> None:
    url, sharing = _url(request, store)
    made: dict[str, str] = {}

    async def setup(m: Mem) -> None:
        [chunk] = await m("knowledge.ingest", ALICE, _text(0), "ferries")
        await m("delete", ALICE.user_scope, chunk.id)
        made["v0"] = chunk.id

    writers = _held_writers(
        kind, lambda m: m("knowledge.ingest", ALICE, _text(1), "ferries"), _restoring(made, "v0")
    )

    async def check(m: Mem) -> None:
        live = await _chunks(m, deleted=False)
        # the restore found version 1 (stored first) and put version 0 back in its place
        assert [r.text for r in live] == [_text(0)], [r.text for r in live]
        stored = sorted(r.text for r in await _chunks(m, deleted=True))
        assert stored == [_text(0), _text(1)]

    _no_errors(race(kind, url, sharing, NO_GATE, writers, setup, check))


# --- processes -----------------------------------------------------------------------------
def _process_writer(url: str, job: str, record_id: str, barrier: Any, out: Any) -> None:
    """One writer process on the shared store, held at its first transaction until the
    other got there; the restore ``LATE`` seconds more."""
    memory = Memory(url, embedder="hashing", background=False)
    try:
        _hold(Mem(memory), barrier, late=job == "restore")
        if job == "restore":
            memory.restore(ALICE.user_scope, record_id)
        elif job == "fact":
            memory.facts.upsert(ALICE, ExtractedFact(**_fact("Oslo", 0.8)))
        else:
            memory.knowledge.ingest(ALICE, _text(1), "ferries")
        out.put(None)
    except BaseException as exc:  # noqa: BLE001 - reported to the test
        out.put(repr(exc))
    finally:
        memory.close()


@pytest.mark.parametrize("job", ["fact", "document"])
def test_restore_and_first_writer_processes_leave_one_live_record(url: str, job: str) -> None:
    memory = Memory(url, embedder="hashing", background=False)
    try:
        if job == "fact":
            record = memory.facts.upsert(ALICE, ExtractedFact(**_fact("Paris", 0.8))).record
        else:
            [record] = memory.knowledge.ingest(ALICE, _text(0), "ferries")
        memory.delete(ALICE.user_scope, record.id)
        spawn = multiprocessing.get_context("spawn")
        barrier, out = spawn.Barrier(2), spawn.Queue()
        procs = [
            spawn.Process(target=_process_writer, args=(url, j, record.id, barrier, out))
            for j in (job, "restore")
        ]
        for p in procs:
            p.start()
        results = [out.get(timeout=300) for _ in procs]
        for p in procs:
            p.join(60)
        assert results == [None, None], results
        if job == "fact":
            live = asyncio.run(_current_facts(Mem(memory)))
            assert [r.content.structured["value"] for r in live] == ["Paris"]
        else:
            live = asyncio.run(_chunks(Mem(memory), deleted=False))
            assert [r.text for r in live] == [_text(0)]
        assert [r.id for r in live] == [record.id]
        assert live[0].type is (RecordType.FACT if job == "fact" else RecordType.KNOWLEDGE)
    finally:
        memory.close()


# --- a restore into the live version ---------------------------------------------------------
def _timetable(word: str) -> str:
    return " ".join(f"{word} line {i} of the timetable." for i in range(30))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("store", URLS)
def test_a_restore_into_the_live_version_beside_a_restore_of_another_version(
    request: pytest.FixtureRequest, store: str, kind: str
) -> None:
    """A chunk restored into the live version (its index free there) while another restore
    brings an older version back in the live one's place: the name's turn sees a live
    document either way and no record inserted, so the restore's transaction also checks
    that the live chunks it read are still live at their versions; before, both versions'
    chunks were live (two at one index)."""
    from memstrata.layers.types import LayerConfig

    made: dict[str, str] = {}

    async def setup(m: Mem) -> None:
        older = await m("knowledge.ingest", ALICE, _timetable("ships"), "timetable")
        live = await m("knowledge.ingest", ALICE, _timetable("boats"), "timetable")
        assert len(older) == len(live) > 2
        await m("delete", ALICE.user_scope, live[1].id)  # one chunk of the live version
        made["older"], made["gap"] = older[0].id, live[1].id

    async def check(m: Mem) -> None:
        live = await m("knowledge.chunks", ALICE, "timetable")
        indexes = [r.metadata["chunk_index"] for r in live]
        assert len(indexes) == len(set(indexes)), indexes  # one version: one chunk an index

    writers = _held_writers(kind, _restoring(made, "older"), _restoring(made, "gap"))
    small = LayerConfig(chunk_tokens=40, chunk_overlap_tokens=5)
    url, sharing = _url(request, store)
    # a clock that moves: a version is the chunks deleted at one moment (a fixed clock
    # would make every deleted chunk one version)
    _no_errors(
        race(
            kind,
            url,
            sharing,
            NO_GATE,
            writers,
            setup,
            check,
            layer_config=small,
            clock=SystemClock(),
        )
    )
