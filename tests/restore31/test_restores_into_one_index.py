"""Two restores at once into one free chunk index of a document's live version.

The live version of ``timetable`` lacks its chunk 1 (deleted); an older version of the same
``chunk_count`` is deleted whole. Restoring the older version's chunk 1 and the live one's
own chunk 1 each joins the live version at that free index. Until session 31 neither
restore changed what the other checked in its transaction (the name's turn sees a live
document and no record inserted; the live chunks each read stay live), so both committed
and the live version had two chunks at index 1. Likewise a restore into the free index and
a restore of the older version whole (which ends the live chunks it read, not the one the
other restore brought back): both committed, two chunks at index 1. Now a restore's
transaction also checks that no chunk that could take the place it decided on (a deleted
chunk of the live version's ``chunk_count`` at a free index) was made live since its read:
the second to commit reads again and decides on what the first restored, as a restore
after it would (``knowledge.py``). Nothing is lost: every chunk stays stored, and the
losing restore's chunk is live when it returns.

Each race holds both restores at their transaction until both have read; the second
enters it ``LATE`` seconds after the first (the order that left two chunks at one index).
Threads, coroutines and processes; SQLite, PostgreSQL and memory://."""

from __future__ import annotations

import multiprocessing
from typing import Any

import pytest

from memstrata import Filters, Memory, SystemClock
from memstrata.filters import MetadataCondition
from memstrata.layers.types import LayerConfig
from memstrata.records import MemoryRecord, RecordType
from restore30.test_restore_takes_the_turn import (
    NO_GATE,
    URLS,
    _held_writers,
    _hold,
    _restoring,
    _timetable,
    _url,
)
from test_concurrent_services import ALICE, KINDS, _no_errors, race
from test_quota_services import Mem

SMALL = LayerConfig(chunk_tokens=40, chunk_overlap_tokens=5)


async def _setup(m: Mem, made: dict[str, str]) -> None:
    """An older version deleted whole (replaced), the live one without its chunk 1."""
    older = await m("knowledge.ingest", ALICE, _timetable("ships"), "timetable")
    live = await m("knowledge.ingest", ALICE, _timetable("boats"), "timetable")
    assert len(older) == len(live) > 2
    await m("delete", ALICE.user_scope, live[1].id)
    made["older"], made["older 1"], made["gap"] = older[0].id, older[1].id, live[1].id
    made["live 0"] = live[0].id


async def _one_chunk_an_index(m: Mem, made: dict[str, str], late: str) -> None:
    live = await m("knowledge.chunks", ALICE, "timetable")
    indexes = [r.metadata["chunk_index"] for r in live]
    assert len(indexes) == len(set(indexes)), indexes  # one version: one chunk an index
    assert len({r.metadata["chunk_count"] for r in live}) == 1, live
    # the restore that committed last brought its chunk back: it is live
    assert made[late] in {r.id for r in live}, (late, [r.id for r in live])
    stored = {r.id for r in await _every_chunk(m)}
    assert {made[k] for k in made} <= stored  # nothing purged: a deleted one is restorable


async def _every_chunk(m: Mem) -> list[MemoryRecord]:
    every = Filters(
        types=frozenset({RecordType.KNOWLEDGE}),
        metadata=(MetadataCondition("qa_id", "eq", "timetable"),),
        include_deleted=True,
    )
    return list(await m("store.list", ALICE.user_scope, every, limit=1000))


# (the restore that commits first, the one that enters its transaction LATE seconds after)
ORDERS = [
    ("older 1", "gap"),  # two chunks into the one free index, either way round
    ("gap", "older 1"),
    ("gap", "older"),  # into the free index, then the older version whole
]


@pytest.mark.parametrize("order", ORDERS, ids="-then-".join)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("store", URLS)
def test_two_restores_into_one_free_index_leave_one_chunk_there(
    request: pytest.FixtureRequest, store: str, kind: str, order: tuple[str, str]
) -> None:
    first, late = order
    made: dict[str, str] = {}
    writers = _held_writers(kind, _restoring(made, first), _restoring(made, late))
    url, sharing = _url(request, store)

    async def setup(m: Mem) -> None:
        await _setup(m, made)

    async def check(m: Mem) -> None:
        await _one_chunk_an_index(m, made, late)

    # a clock that moves: a version is the chunks deleted at one moment
    results = race(
        kind,
        url,
        sharing,
        NO_GATE,
        writers,
        setup,
        check,
        layer_config=SMALL,
        clock=SystemClock(),
    )
    _no_errors(results)
    assert [r.id for r in results] == [made[first], made[late]]
    assert all(r.is_active for r in results), results


# --- processes -----------------------------------------------------------------------------
def _process_restore(url: str, record_id: str, late: bool, barrier: Any, out: Any) -> None:
    """One restore in a process of its own, held at its first transaction until the other
    got there; the late one ``LATE`` seconds more."""
    memory = Memory(url, embedder="hashing", background=False, layer_config=SMALL)
    try:
        _hold(Mem(memory), barrier, late=late)
        out.put(memory.restore(ALICE.user_scope, record_id).id)
    except BaseException as exc:  # noqa: BLE001 - reported to the test
        out.put(repr(exc))
    finally:
        memory.close()


@pytest.mark.parametrize("order", ORDERS, ids="-then-".join)
def test_two_restore_processes_into_one_free_index(url: str, order: tuple[str, str]) -> None:
    import asyncio

    memory = Memory(url, embedder="hashing", background=False, layer_config=SMALL)
    try:
        made: dict[str, str] = {}
        asyncio.run(_setup(Mem(memory), made))
        spawn = multiprocessing.get_context("spawn")
        barrier, out = spawn.Barrier(2), spawn.Queue()
        procs = [
            spawn.Process(target=_process_restore, args=(url, made[name], i == 1, barrier, out))
            for i, name in enumerate(order)
        ]
        for p in procs:
            p.start()
        results = {out.get(timeout=300) for _ in procs}
        for p in procs:
            p.join(60)
        assert results == {made[order[0]], made[order[1]]}, results
        asyncio.run(_one_chunk_an_index(Mem(memory), made, order[1]))
    finally:
        memory.close()
