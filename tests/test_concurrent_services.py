"""Concurrent writers of one fact or one document end as some serial order would leave them.

Several writers (threads on one ``Memory``, tasks on one ``AsyncMemory``, or each writer
with a ``Memory`` / ``AsyncMemory`` of its own on the same SQLite file or PostgreSQL schema)
write the same fact key or re-ingest the same ``qa_id`` at once. Every writer is held at
its first read of the facts (or chunks) until all of them have read, so all of them decide
on the same stored state: the race is forced, not hoped for. Afterwards:

- facts: no call raised, one current fact holds the key, and every value a writer gave is
  in the key's history (a version's value or a recorded conflict); the same value from
  every writer is one fact mentioned once per writer;
- documents: no call raised, one version of the document is live (one writer's chunks, all
  of them), and every other writer's version is stored, soft-deleted, restorable.

Before the fix each writer created its own record (two or more current facts, two live
documents) or the losers raised ``ConflictError`` after writing half of their change.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from memstrata import AsyncMemory, Filters, FixedClock, Memory, Scope
from memstrata.filters import MetadataCondition
from memstrata.quotas import Quota, Quotas
from memstrata.records import MemoryRecord, RecordType
from test_quota_services import Mem

ALICE = Scope("acme", "alice", session="s1")
WRITERS = 4
GATE_SECONDS = 20.0  # a writer that never reaches the gate (it failed first) frees the rest
KINDS = ["sync", "async"]
SHARING = ["shared", "own"]  # writers share one memory, or each opens its own on the store

Writer = Callable[[Mem], Awaitable[Any]]


@dataclass(frozen=True)
class Gate:
    """Where each writer is held: its first call of the store's ``method`` that ``wanted``
    (the call's positional arguments) accepts."""

    method: str
    wanted: Callable[[tuple[Any, ...]], bool]


def reads_of(rtype: RecordType) -> Gate:
    """Each writer's first listing of ``rtype`` records."""
    return Gate("list", lambda args: args[1].types is not None and rtype in args[1].types)


def _gate_sync(memory: Memory, gate: Gate, barrier: threading.Barrier) -> None:
    """Hold each thread after its first gated call until every writer made its own."""
    store: Any = memory.store
    call = getattr(store, gate.method)
    passed: set[int] = set()

    def gated(*args: Any, **kwargs: Any) -> Any:
        me = threading.get_ident()
        if me not in passed and gate.wanted(args):
            passed.add(me)
            found = call(*args, **kwargs)
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait(GATE_SECONDS)
            return found
        return call(*args, **kwargs)

    setattr(store, gate.method, gated)


def _gate_async(memory: AsyncMemory, gate: Gate, barrier: asyncio.Barrier) -> None:
    store: Any = memory.store
    call = getattr(store, gate.method)
    passed: set[object] = set()

    async def gated(*args: Any, **kwargs: Any) -> Any:
        me = asyncio.current_task()
        if me not in passed and gate.wanted(args):
            passed.add(me)
            found = await call(*args, **kwargs)
            with contextlib.suppress(TimeoutError, asyncio.BrokenBarrierError):
                await asyncio.wait_for(barrier.wait(), GATE_SECONDS)
            return found
        return await call(*args, **kwargs)

    setattr(store, gate.method, gated)


def race(
    kind: str,
    url: str,
    sharing: str,
    gate: Gate | RecordType,
    writers: list[Writer],
    setup: Writer,
    check: Writer,
    **memory_options: Any,
) -> list[Any]:
    """Run ``setup``, then every writer at once (each held at its ``gate``, by default its
    first read of records of a type, until all got there), then ``check``; returns what
    the writers returned."""
    if isinstance(gate, RecordType):
        gate = reads_of(gate)
    clock = FixedClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))
    options: dict[str, Any] = {
        "embedder": "hashing",
        "background": False,
        "clock": clock,
        **memory_options,
    }
    n = len(writers) if sharing == "own" else 1
    if kind == "sync":
        memories = [Memory(url, **options) for _ in range(n)]
        try:
            asyncio.run(setup(Mem(memories[0])))
            barrier = threading.Barrier(len(writers))
            for memory in memories:
                _gate_sync(memory, gate, barrier)
            results: list[Any] = [None] * len(writers)

            def run(i: int) -> None:
                try:
                    results[i] = asyncio.run(writers[i](Mem(memories[i % n])))
                except BaseException as exc:  # noqa: BLE001 - asserted below
                    results[i] = exc

            threads = [threading.Thread(target=run, args=(i,)) for i in range(len(writers))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            stuck = [i for i, t in enumerate(threads) if t.is_alive()]
            assert not stuck, f"writers {stuck} still running after 120 s: {results}"
            for memory in memories:
                vars(memory.store).pop(gate.method)
            _checked(lambda: asyncio.run(check(Mem(memories[0]))), results)
        finally:
            for memory in memories:
                memory.close()
        return results

    async def main() -> list[Any]:
        amemories = [AsyncMemory(url, **options) for _ in range(n)]
        try:
            for am in amemories:
                await am.__aenter__()
            await setup(Mem(amemories[0]))
            abarrier = asyncio.Barrier(len(writers))
            for am in amemories:
                _gate_async(am, gate, abarrier)
            out = await asyncio.gather(
                *(w(Mem(amemories[i % n])) for i, w in enumerate(writers)),
                return_exceptions=True,
            )
            for am in amemories:
                vars(am.store).pop(gate.method)
            try:
                await check(Mem(amemories[0]))
            except AssertionError as exc:
                raise AssertionError(f"{exc}; the writers returned {list(out)}") from exc
            return list(out)
        finally:
            for am in amemories:
                await am.__aexit__(None, None, None)

    return asyncio.run(main())


def _checked(check: Callable[[], Any], results: list[Any]) -> None:
    """``check()``; a failure also says what each writer returned (an error among them is
    usually why: the check runs before the test looks at the errors)."""
    try:
        check()
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the writers returned {results}") from exc


def _no_errors(results: list[Any]) -> None:
    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, errors


# --- facts ---------------------------------------------------------------------------------
def _fact(value: str, confidence: float) -> dict[str, Any]:
    return {"category": "identity", "key": "location", "value": value, "confidence": confidence}


async def _current_facts(m: Mem) -> list[MemoryRecord]:
    every = Filters(
        types=frozenset({RecordType.FACT}),
        metadata=(MetadataCondition("key", "eq", "location"),),
    )
    return list(await m("store.list", ALICE.user_scope, every))


async def _values_in_history(m: Mem) -> set[str]:
    """Every value the key held or was told (a recorded conflict), in any version."""
    versions = await m("facts.history", ALICE, "location")
    values = {str(v.content.structured["value"]) for v in versions}
    for v in versions:
        values |= {str(c["value"]) for c in v.content.structured.get("conflicts", [])}
    return values


async def _nothing(m: Mem) -> None:
    return None


@pytest.mark.parametrize("sharing", SHARING)
@pytest.mark.parametrize("kind", KINDS)
def test_the_same_new_fact_from_every_writer_is_one_fact_mentioned_by_each(
    kind: str, url: str, sharing: str
) -> None:
    writers: list[Writer] = [
        lambda m: m("facts.upsert", ALICE, _fact("Lisbon", 0.8)) for _ in range(WRITERS)
    ]
    results = race(
        kind, url, sharing, RecordType.FACT, writers, _nothing, _one_fact_mentioned_by_every_writer
    )
    _no_errors(results)


async def _one_fact_mentioned_by_every_writer(m: Mem) -> None:
    current = await _current_facts(m)
    assert len(current) == 1, [r.text for r in current]  # before: one per writer
    assert current[0].content.structured["mentions"] == WRITERS  # every mention counted


@pytest.mark.parametrize("sharing", SHARING)
@pytest.mark.parametrize("kind", KINDS)
def test_different_new_values_of_one_key_leave_one_current_fact_and_every_value(
    kind: str, url: str, sharing: str
) -> None:
    values = [("Lisbon", 0.7), ("Porto", 0.8), ("Madrid", 0.75), ("Berlin", 0.9)]
    writers: list[Writer] = [
        lambda m, v=v, c=c: m("facts.upsert", ALICE, _fact(v, c)) for v, c in values
    ]

    async def check(m: Mem) -> None:
        current = await _current_facts(m)
        assert len(current) == 1, [r.text for r in current]
        assert await _values_in_history(m) >= {v for v, _ in values}
        assert current[0].content.structured["value"] == "Berlin"  # the surest wins in any order

    _no_errors(race(kind, url, sharing, RecordType.FACT, writers, _nothing, check))


@pytest.mark.parametrize("sharing", SHARING)
@pytest.mark.parametrize("kind", KINDS)
def test_writers_changing_a_stored_fact_lose_no_update(kind: str, url: str, sharing: str) -> None:
    """On a stored fact: two confirmations, a weaker conflicting value and a surer one."""
    given = [("Lisbon", 0.6), ("Lisbon", 0.6), ("Porto", 0.5), ("Madrid", 0.95)]
    writers: list[Writer] = [
        lambda m, v=v, c=c: m("facts.upsert", ALICE, _fact(v, c)) for v, c in given
    ]

    async def setup(m: Mem) -> None:
        await m("facts.upsert", ALICE, _fact("Lisbon", 0.6))

    async def check(m: Mem) -> None:
        current = await _current_facts(m)
        assert len(current) == 1, [r.text for r in current]
        assert await _values_in_history(m) >= {"Lisbon", "Porto", "Madrid"}
        latest: dict[str, MemoryRecord] = {}
        for v in await m("facts.history", ALICE, "location"):
            if v.id not in latest or v.version > latest[v.id].version:
                latest[v.id] = v
        # Each "Lisbon" counted once: a confirmation of the stored fact, or a conflict on
        # the surer fact when Madrid came first; none lost, none applied twice by a retry.
        said = sum(
            int(r.content.structured["mentions"]) - 1
            for r in latest.values()
            if r.content.structured["value"] == "Lisbon"
        ) + sum(
            c["value"] == "Lisbon"
            for r in latest.values()
            for c in r.content.structured.get("conflicts", [])
        )
        assert said == 2

    _no_errors(race(kind, url, sharing, RecordType.FACT, writers, setup, check))


@pytest.mark.parametrize("sharing", SHARING)
@pytest.mark.parametrize("kind", KINDS)
def test_a_deleted_fact_is_followed_by_one_new_fact(kind: str, url: str, sharing: str) -> None:
    """No current fact, but the key has a (deleted) record: the writers still make one."""
    writers: list[Writer] = [
        lambda m: m("facts.upsert", ALICE, _fact("Porto", 0.8)) for _ in range(WRITERS)
    ]

    async def setup(m: Mem) -> None:
        first = await m("facts.upsert", ALICE, _fact("Lisbon", 0.8))
        await m("delete", ALICE.user_scope, first.record.id)

    async def check(m: Mem) -> None:
        current = await _current_facts(m)
        assert [r.content.structured["value"] for r in current] == ["Porto"]
        assert current[0].content.structured["mentions"] == WRITERS

    _no_errors(race(kind, url, sharing, RecordType.FACT, writers, setup, check))


@pytest.mark.parametrize("sharing", SHARING)
@pytest.mark.parametrize("kind", KINDS)
def test_a_full_quota_refuses_no_writer_whose_fact_another_one_stored(
    kind: str, url: str, sharing: str
) -> None:
    """One record left: the first writer stores the fact, the others confirm it (no new
    record), as they would one after another; before, they were refused."""
    writers: list[Writer] = [
        lambda m: m("facts.upsert", ALICE, _fact("Lisbon", 0.8)) for _ in range(WRITERS)
    ]

    async def setup(m: Mem) -> None:
        await m("add", ALICE, "a note that leaves one record of the quota", dedup=False)

    async def check(m: Mem) -> None:
        current = await _current_facts(m)
        assert len(current) == 1
        assert current[0].content.structured["mentions"] == WRITERS
        assert await m.count(ALICE) == 2

    quotas = Quotas(per_user=Quota(max_records=2))
    results = race(kind, url, sharing, RecordType.FACT, writers, setup, check, quotas=quotas)
    _no_errors(results)


# --- documents -----------------------------------------------------------------------------
def _text(n: int) -> str:
    return " ".join(
        f"Version {n}, sentence {i}: the ferry to Cacilhas leaves at {i}." for i in range(8)
    )


async def _chunks(m: Mem, *, deleted: bool) -> list[MemoryRecord]:
    every = Filters(
        types=frozenset({RecordType.KNOWLEDGE}),
        metadata=(MetadataCondition("qa_id", "eq", "ferries"),),
        include_deleted=deleted,
        include_superseded=deleted,
    )
    return list(await m("store.list", ALICE.user_scope, every, limit=1000))


def _doc_check(versions: list[int], stored_first: bool) -> Writer:
    async def check(m: Mem) -> None:
        live = await _chunks(m, deleted=False)
        live_texts = {r.text for r in live}
        assert len([t for t in map(_text, versions) if t in live_texts]) == 1, live_texts
        assert len(live) == 1  # one chunk per version: exactly one version is live
        stored = {r.text for r in await _chunks(m, deleted=True)}
        assert {_text(n) for n in versions} <= stored  # every other version kept, deleted
        expected = len(versions) + (1 if stored_first else 0)
        assert len(await _chunks(m, deleted=True)) == expected  # and written once

    return check


@pytest.mark.parametrize("sharing", SHARING)
@pytest.mark.parametrize("kind", KINDS)
def test_concurrent_reingests_of_a_document_leave_one_live_version(
    kind: str, url: str, sharing: str
) -> None:
    versions = list(range(1, WRITERS + 1))
    writers: list[Writer] = [
        lambda m, n=n: m("knowledge.ingest", ALICE, _text(n), "ferries") for n in versions
    ]

    async def setup(m: Mem) -> None:
        await m("knowledge.ingest", ALICE, _text(0), "ferries")

    _no_errors(
        race(kind, url, sharing, RecordType.KNOWLEDGE, writers, setup, _doc_check(versions, True))
    )


@pytest.mark.parametrize("sharing", SHARING)
@pytest.mark.parametrize("kind", KINDS)
def test_concurrent_first_ingests_of_a_document_leave_one_live_version(
    kind: str, url: str, sharing: str
) -> None:
    versions = list(range(1, WRITERS + 1))
    writers: list[Writer] = [
        lambda m, n=n: m("knowledge.ingest", ALICE, _text(n), "ferries") for n in versions
    ]
    _no_errors(
        race(
            kind,
            url,
            sharing,
            RecordType.KNOWLEDGE,
            writers,
            _nothing,
            _doc_check(versions, False),
        )
    )


@pytest.mark.parametrize("sharing", SHARING)
@pytest.mark.parametrize("kind", KINDS)
def test_a_full_quota_refuses_no_writer_of_a_document_another_one_stored(
    kind: str, url: str, sharing: str
) -> None:
    """One record left and every writer ingests the same one-chunk document: the first
    stores it, the others find the same document (nothing to write)."""
    writers: list[Writer] = [
        lambda m: m("knowledge.ingest", ALICE, _text(1), "ferries") for _ in range(WRITERS)
    ]

    async def setup(m: Mem) -> None:
        await m("add", ALICE, "a note that leaves one record of the quota", dedup=False)

    async def check(m: Mem) -> None:
        assert [r.text for r in await _chunks(m, deleted=True)] == [_text(1)]
        assert await m.count(ALICE) == 2

    quotas = Quotas(per_user=Quota(max_records=2))
    results = race(kind, url, sharing, RecordType.KNOWLEDGE, writers, setup, check, quotas=quotas)
    _no_errors(results)


@pytest.mark.parametrize("sharing", SHARING)
@pytest.mark.parametrize("kind", KINDS)
def test_concurrent_ingests_of_a_deleted_document_leave_one_live_version(
    kind: str, url: str, sharing: str
) -> None:
    """No live version, but deleted ones: the writers' first chunk ids must differ from
    theirs (twice: a version made by these writers is deleted again and re-ingested)."""
    versions = list(range(1, WRITERS + 1))
    writers: list[Writer] = [
        lambda m, n=n: m("knowledge.ingest", ALICE, _text(n), "ferries") for n in versions
    ]

    async def setup(m: Mem) -> None:
        for n in (0, 0):
            for chunk in await m("knowledge.ingest", ALICE, _text(n), "ferries"):
                await m("delete", ALICE.user_scope, chunk.id)

    async def check(m: Mem) -> None:
        live = await _chunks(m, deleted=False)
        assert len(live) == 1 and live[0].text in {_text(n) for n in versions}
        stored = [r.text for r in await _chunks(m, deleted=True)]
        assert sorted(stored) == sorted([_text(0), _text(0), *map(_text, versions)])

    _no_errors(race(kind, url, sharing, RecordType.KNOWLEDGE, writers, setup, check))


# --- processes -----------------------------------------------------------------------------
def _process_writer(url: str, job: str, n: int, barrier: Any, out: Any) -> None:
    """One writer process: its own ``Memory`` on the shared store, held at its first read."""
    memory = Memory(url, embedder="hashing", background=False)
    try:
        if job == "fact":
            _gate_sync(memory, reads_of(RecordType.FACT), barrier)
            memory.facts.upsert(ALICE, _fact("Lisbon", 0.8))
        else:
            _gate_sync(memory, reads_of(RecordType.KNOWLEDGE), barrier)
            memory.knowledge.ingest(ALICE, _text(n), "ferries")
        out.put(None)
    except BaseException as exc:  # noqa: BLE001 - reported to the test
        out.put(repr(exc))
    finally:
        memory.close()


@pytest.mark.parametrize("job", ["fact", "document"])
def test_writer_processes_on_one_store_end_as_a_serial_order(url: str, job: str) -> None:
    memory = Memory(url, embedder="hashing", background=False)
    try:
        if job == "document":
            memory.knowledge.ingest(ALICE, _text(0), "ferries")
        spawn = multiprocessing.get_context("spawn")
        barrier, out = spawn.Barrier(WRITERS), spawn.Queue()
        procs = [
            spawn.Process(target=_process_writer, args=(url, job, n, barrier, out))
            for n in range(1, WRITERS + 1)
        ]
        for p in procs:
            p.start()
        results = [out.get(timeout=300) for _ in procs]
        for p in procs:
            p.join(60)
        assert results == [None] * WRITERS, results
        check = (
            _doc_check(list(range(1, WRITERS + 1)), True)
            if job == "document"
            else _one_fact_mentioned_by_every_writer
        )
        asyncio.run(check(Mem(memory)))
    finally:
        memory.close()
