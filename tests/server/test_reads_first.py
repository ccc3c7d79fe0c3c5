"""Reads first under saturation (server/priority.py): the gate's order, its promotion of
waiting writes, cancellation, the cap on how long one request holds a slot, and which
requests pass untouched."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from memstrata.server.priority import (
    READ,
    SEARCH,
    WRITE,
    PriorityGate,
    ReadsFirst,
    default_slots,
    request_class,
)


@pytest.mark.parametrize(
    ("method", "path", "rank"),
    [
        ("POST", "/v1/users/alice/search", SEARCH),
        ("POST", "/v1/users/alice/context", READ),
        ("GET", "/v1/users/alice/memories", READ),
        ("POST", "/v1/users/alice/sessions/s1/messages", WRITE),
        ("DELETE", "/v1/users/alice/memories/m1", WRITE),
        ("GET", "/v1/users/alice/export", None),
        ("POST", "/v1/users/alice/import", None),
        ("GET", "/healthz", None),
        ("GET", "/v1/tenant/keys", None),
    ],
)
def test_request_class(method: str, path: str, rank: int | None) -> None:
    assert request_class(method, path) == rank


async def _order(gate: PriorityGate, ranks: list[int], *, gap: float = 0.0) -> list[int]:
    """Hold the only slot, queue one waiter per rank (in that order, ``gap`` seconds apart),
    release: the order in which the waiters got the slot."""
    await gate.acquire(WRITE)
    got: list[int] = []

    async def wait(i: int, rank: int) -> None:
        await gate.acquire(rank)
        got.append(i)
        gate.release()

    tasks = []
    for i, rank in enumerate(ranks):
        tasks.append(asyncio.create_task(wait(i, rank)))
        await asyncio.sleep(gap)  # queued in this order
    gate.release()
    await asyncio.gather(*tasks)
    return got


def test_a_freed_slot_goes_to_searches_then_reads_then_writes_each_in_arrival_order() -> None:
    got = asyncio.run(_order(PriorityGate(1), [WRITE, READ, SEARCH, WRITE, SEARCH, READ]))
    assert got == [2, 4, 1, 5, 0, 3]


def test_a_write_that_waited_long_enough_goes_first() -> None:
    gate = PriorityGate(1, promote_after=0.05)
    assert asyncio.run(_order(gate, [WRITE, SEARCH], gap=0.1)) == [0, 1]
    assert asyncio.run(_order(PriorityGate(1), [WRITE, SEARCH], gap=0.1)) == [1, 0]


def test_below_the_slots_nobody_waits_and_a_cancelled_waiter_takes_no_slot() -> None:
    async def run() -> None:
        gate = PriorityGate(2)
        await gate.acquire(WRITE)
        await gate.acquire(WRITE)  # both slots, at once
        cancelled = asyncio.create_task(gate.acquire(SEARCH))
        later = asyncio.create_task(gate.acquire(WRITE))
        await asyncio.sleep(0)
        cancelled.cancel()
        await asyncio.sleep(0)
        gate.release()
        await asyncio.wait_for(later, 1)  # the slot went to the waiter still there
        gate.release()
        gate.release()
        await asyncio.wait_for(gate.acquire(READ), 1)
        await asyncio.wait_for(gate.acquire(READ), 1)

    asyncio.run(run())


def _app(durations: dict[str, float], done: list[str]) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await asyncio.sleep(durations[scope["path"]])
        done.append(scope["path"])

    return app


async def _call(app: Any, method: str, path: str) -> None:
    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(_: dict[str, Any]) -> None:
        return None

    await app({"type": "http", "method": method, "path": path}, receive, send)


def test_the_middleware_serves_a_search_queued_behind_writes_first() -> None:
    u = "/v1/users/alice"
    durations = {f"{u}/sessions/s/messages": 0.02, f"{u}/search": 0.0, f"{u}/context": 0.0}
    done: list[str] = []
    gated = ReadsFirst(_app(durations, done), PriorityGate(1))

    async def run() -> None:
        calls = [
            ("POST", f"{u}/sessions/s/messages"),  # holds the slot
            ("POST", f"{u}/sessions/s/messages"),
            ("POST", f"{u}/context"),
            ("POST", f"{u}/search"),
        ]
        tasks = []
        for method, path in calls:
            tasks.append(asyncio.create_task(_call(gated, method, path)))
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)

    asyncio.run(run())
    assert [p.rsplit("/", 1)[1] for p in done] == ["messages", "search", "context", "messages"]


def test_a_long_request_holds_its_slot_only_for_max_hold() -> None:
    u = "/v1/users/alice"
    durations = {f"{u}/maintain": 0.5, f"{u}/search": 0.0, "/healthz": 0.0}
    done: list[str] = []
    gated = ReadsFirst(_app(durations, done), PriorityGate(1, search_lane=1), max_hold=0.05)

    async def run() -> None:
        long = asyncio.create_task(_call(gated, "POST", f"{u}/maintain"))
        await asyncio.sleep(0)
        await asyncio.wait_for(_call(gated, "POST", f"{u}/search"), 0.3)  # not 0.5 s
        await long

    asyncio.run(run())
    assert done == [f"{u}/search", f"{u}/maintain"]


def test_an_ungated_request_never_waits() -> None:
    u = "/v1/users/alice"
    durations = {f"{u}/maintain": 0.5, "/healthz": 0.0, f"{u}/export": 0.0}
    done: list[str] = []
    gated = ReadsFirst(_app(durations, done), PriorityGate(1, search_lane=1))

    async def run() -> None:
        long = asyncio.create_task(_call(gated, "POST", f"{u}/maintain"))
        await asyncio.sleep(0)
        await asyncio.wait_for(_call(gated, "GET", "/healthz"), 0.2)
        await asyncio.wait_for(_call(gated, "GET", f"{u}/export"), 0.2)
        await long

    asyncio.run(run())
    assert done[-1] == f"{u}/maintain"


@pytest.mark.parametrize(
    ("store", "embedder", "redis", "slots"),
    [
        ("sqlite:///memstrata.db", None, None, 1),
        ("memory://", "hashing:256", None, 1),
        ("sqlite:///m.db", "st:all-MiniLM-L6-v2", "redis://127.0.0.1:6379", 1),
        ("sqlite:///m.db", None, "redis://me@/0?host=/run/redis", 1),
        # a PostgreSQL server on this machine computes on its cores: one slot
        ("postgresql://postgres:@/postgres?host=/tmp/pg", "default", None, 1),
        ("postgresql://me@localhost:5432/db", None, None, 1),
        # on another host a request idles its slot while its queries travel: no gate
        ("postgresql://me@db.internal/db", None, None, 0),
        ("postgresql://me@/db?host=db.internal", None, None, 0),
        ("postgresql://me@localhost/db", "openai:text-embedding-3-small", None, 0),
        ("sqlite:///memstrata.db", "openai:text-embedding-3-small", None, 0),  # an API call
        ("sqlite:///memstrata.db", None, "redis://cache.internal:6379/0", 0),
    ],
)
def test_the_default_slots_follow_the_deployment(
    store: str, embedder: str | None, redis: str | None, slots: int
) -> None:
    assert default_slots(store, embedder, redis) == slots


def test_serve_config_picks_the_default_unless_told() -> None:
    from memstrata.server.factory import ServeConfig

    assert ServeConfig().limits().reads_first == 1
    assert ServeConfig(url="postgresql://me@db.internal/db").limits().reads_first == 0
    assert ServeConfig(reads_first=3).limits().reads_first == 3
    assert ServeConfig.from_json(ServeConfig().to_json()).reads_first is None


def test_a_search_takes_its_lane_only_while_nobody_waits() -> None:
    """Below saturation a search runs beside the request that holds the one slot instead of
    waiting for it; once requests wait (saturation), searches queue for the slot, first."""

    async def run() -> None:
        gate = PriorityGate(1, search_lane=1)
        assert await gate.acquire(READ) is False  # the slot
        assert await gate.acquire(SEARCH) is True  # the lane, at once: nobody waits
        write = asyncio.create_task(gate.acquire(WRITE))
        second = asyncio.create_task(gate.acquire(SEARCH))
        await asyncio.sleep(0)
        gate.release(True)  # the lane frees, but requests wait: they wait for the slot
        third = asyncio.create_task(gate.acquire(SEARCH))
        await asyncio.sleep(0)
        assert not (write.done() or second.done() or third.done())
        gate.release(False)  # the slot: the earliest search, then the next, then the write
        assert await asyncio.wait_for(second, 1) is False
        assert not third.done() and not write.done()
        gate.release(False)
        assert await asyncio.wait_for(third, 1) is False
        gate.release(False)
        assert await asyncio.wait_for(write, 1) is False

    asyncio.run(run())


def test_the_gate_is_in_the_metrics() -> None:
    """An operator sees the queue: requests waiting per class, and running."""
    from fastapi.testclient import TestClient

    from memstrata import Memory
    from memstrata.server import create_app
    from memstrata.server.app import Limits
    from memstrata.server.keys import InMemoryKeyStore

    mem = Memory("memory://", embedder="hashing", background=False)
    app = create_app(mem, InMemoryKeyStore(), limits=Limits(reads_first=1))
    with TestClient(app) as client:
        text = client.get("/metrics").text
    mem.close()
    assert 'memstrata_reads_first_waiting{class="search"} 0.0' in text
    assert "memstrata_reads_first_running 0.0" in text
    gate = PriorityGate(1)

    async def run() -> tuple[dict[int, int], int]:
        await gate.acquire(WRITE)
        waiter = asyncio.create_task(gate.acquire(READ))
        await asyncio.sleep(0)
        seen = gate.waiting(), gate.running
        gate.release()
        await waiter
        return seen

    assert asyncio.run(run()) == ({SEARCH: 0, READ: 1, WRITE: 0}, 1)
