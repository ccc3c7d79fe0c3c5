"""The layer services' writes are admitted under ``Memory(quotas=...)`` like ``mem.add``.

Every write a caller makes through a service — ``key.set``, ``facts.upsert``,
``episodes.record_feedback`` / ``record_task``, ``procedures.add_failure_pattern`` / ``learn``,
``knowledge.ingest`` (by its chunks), ``tasks.start`` / ``complete`` — admits exactly the new
records it writes: over a quota (the user's, the tenant's, or an override set later with
``set_quota``) it is a ``QuotaExceededError`` and nothing is written; within the quota the
count grows by exactly what was admitted. What the library derives on its own (facts
extracted from turns, summaries, episodes at session end) counts but is never refused.
Each test runs on ``Memory`` and on ``AsyncMemory``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import AsyncMemory, Filters, FixedClock, Memory, Scope
from memstrata.errors import QuotaExceededError
from memstrata.layers.knowledge_types import document_chunks
from memstrata.layers.types import LayerConfig
from memstrata.llm.models import Reflection, TaskOutcome
from memstrata.quotas import Quota, Quotas

ALICE = Scope("acme", "alice", session="s1")
BOB = Scope("acme", "bob", session="s1")
KINDS = ["sync", "async"]
DOC = " ".join(f"Sentence {i} about the trams and hills of Lisbon." for i in range(700))
DOC_CHUNKS = len(document_chunks(DOC, LayerConfig()))
FAILED = TaskOutcome(goal="Book a table for six", steps=["call", "confirm"], success=False)
LESSON = Reflection(summary="The restaurant was full", lessons=["Book a day ahead"])


class Mem:
    """A ``Memory`` or an ``AsyncMemory`` called alike: ``await m("key.set", scope, ...)``."""

    def __init__(self, memory: Memory | AsyncMemory) -> None:
        self.memory = memory

    async def __call__(self, name: str, *args: Any, **kwargs: Any) -> Any:
        target: Any = self.memory
        for part in name.split("."):
            target = getattr(target, part)
        result = target(*args, **kwargs)
        return await result if inspect.isawaitable(result) else result

    async def count(self, scope: Scope) -> int:
        """Every record of the user, as the records quota counts them."""
        every = Filters(include_deleted=True, include_superseded=True)
        return int(await self("store.count", scope.user_scope, every))


def run(
    kind: str, body: Callable[[Mem], Awaitable[None]], url: str = "memory://", **kwargs: Any
) -> None:
    clock = FixedClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))

    async def main() -> None:
        options: dict[str, Any] = {"embedder": "hashing", "background": False, "clock": clock}
        if kind == "sync":
            memory = Memory(url, **options, **kwargs)
            try:
                await body(Mem(memory))
            finally:
                memory.close()
        else:
            async with AsyncMemory(url, **options, **kwargs) as amemory:
                await body(Mem(amemory))

    asyncio.run(main())


# Each caller write with the number of new records it makes on a fresh user.
WRITES: dict[str, tuple[Callable[[Mem, Scope], Awaitable[Any]], int]] = {
    "key.set": (lambda m, s: m("key.set", s, "Never book red-eye flights", 1), 1),
    "facts.upsert": (
        lambda m, s: m(
            "facts.upsert",
            s,
            {"category": "identity", "key": "location", "value": "Lisbon", "confidence": 0.9},
        ),
        1,
    ),
    "episodes.record_feedback": (
        lambda m, s: m("episodes.record_feedback", s, "The plan was great"),
        1,
    ),
    "episodes.record_task": (lambda m, s: m("episodes.record_task", s, FAILED, LESSON), 1),
    "procedures.add_failure_pattern": (
        lambda m, s: m("procedures.add_failure_pattern", s, "rate limit", ["429"], "back off", 3),
        1,
    ),
    "procedures.learn": (lambda m, s: m("procedures.learn", s, FAILED, LESSON), 2),
    "knowledge.ingest": (lambda m, s: m("knowledge.ingest", s, DOC, "guide"), DOC_CHUNKS),
    "tasks.start": (lambda m, s: m("tasks.start", s, "Plan a trip", ["book", "pack"]), 1),
}


async def _fill(m: Mem, scope: Scope, n: int) -> None:
    for i in range(n):
        await m("add", scope, f"note number {i} about something else entirely", dedup=False)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(WRITES))
def test_a_service_write_over_the_users_quota_writes_nothing(kind: str, name: str) -> None:
    write, n = WRITES[name]
    assert n >= 1

    async def body(m: Mem) -> None:
        await _fill(m, ALICE, 2)
        with pytest.raises(QuotaExceededError, match=r"max_records \(per user\).*limit 2"):
            await write(m, ALICE)
        assert await m.count(ALICE) == 2
        # one record short of what it writes: still refused (it admits all it writes)
        await m("set_quota", ALICE, Quota(max_records=2 + n - 1))
        with pytest.raises(QuotaExceededError, match=f"needs {n}"):
            await write(m, ALICE)
        assert await m.count(ALICE) == 2
        # room for exactly what it writes: written, and the user is full again
        await m("set_quota", ALICE, Quota(max_records=2 + n))
        await write(m, ALICE)
        assert await m.count(ALICE) == 2 + n
        with pytest.raises(QuotaExceededError):
            await m("add", ALICE, "one more note")

    run(kind, body, quotas=Quotas(per_user=Quota(max_records=2)))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(WRITES))
def test_a_service_write_over_the_tenants_quota_writes_nothing(
    kind: str, name: str, tmp_path: Path
) -> None:
    write, n = WRITES[name]

    async def body(m: Mem) -> None:
        await _fill(m, BOB, 3)
        with pytest.raises(QuotaExceededError, match=r"max_records \(per tenant\)"):
            await write(m, ALICE)
        assert (await m.count(ALICE), await m.count(BOB)) == (0, 3)

    quotas = Quotas(per_tenant=Quota(max_records=2 + n))  # one short for alice's write
    run(kind, body, url=f"sqlite:///{tmp_path / 'q.db'}", quotas=quotas)


@pytest.mark.parametrize("kind", KINDS)
def test_a_quota_set_after_the_services_were_built_applies_to_them(kind: str) -> None:
    async def body(m: Mem) -> None:
        await m("key.set", ALICE, "Always answer in Portuguese", 0)  # builds the services
        await m("set_quota", ALICE, Quota(max_records=1))  # Memory.quotas was None
        for name, (write, _) in WRITES.items():
            with pytest.raises(QuotaExceededError):
                await write(m, ALICE)
            assert await m.count(ALICE) == 1, name

    run(kind, body)


@pytest.mark.parametrize("kind", KINDS)
def test_completing_a_task_admits_exactly_the_records_it_adds(kind: str) -> None:
    async def body(m: Mem) -> None:
        await m("tasks.start", ALICE, "Plan a trip to Porto", ["book", "pack"])
        used = await m.count(ALICE)
        # a failed task with feedback: its episode, two new patterns, the feedback episode
        await m("set_quota", ALICE, Quota(max_records=used + 3))
        with pytest.raises(QuotaExceededError, match="needs 4"):
            await m("tasks.complete", ALICE, False, "No trains left", "Check earlier")
        assert await m.count(ALICE) == used
        task = await m("tasks.current", ALICE)
        assert task is not None and task.metadata["task_status"] == "active"
        await m("set_quota", ALICE, Quota(max_records=used + 4))
        done = await m("tasks.complete", ALICE, False, "No trains left", "Check earlier")
        assert len(done.patterns) == 2 and await m("tasks.current", ALICE) is None
        assert await m.count(ALICE) == used + 4
        # the same task again updates both patterns: only the task and its episode are new
        await m("set_quota", ALICE, Quota(max_records=used + 6))
        await m("tasks.start", ALICE, "Plan a trip to Porto", ["book", "pack"])
        done = await m("tasks.complete", ALICE, False, "No trains left")
        assert [p.version for p in done.patterns] == [2, 2]
        assert await m.count(ALICE) == used + 6

    run(kind, body, quotas=Quotas())


@pytest.mark.parametrize("kind", KINDS)
def test_a_fact_confirmed_or_in_conflict_adds_no_record_and_is_not_refused(kind: str) -> None:
    fact = {"category": "identity", "key": "location", "value": "Lisbon", "confidence": 0.9}

    async def body(m: Mem) -> None:
        await m("facts.upsert", ALICE, fact)
        used = await m.count(ALICE)
        await m("set_quota", ALICE, Quota(max_records=used))
        assert (await m("facts.upsert", ALICE, fact)).action.value == "confirmed"
        weaker = {**fact, "value": "Porto", "confidence": 0.5}
        assert (await m("facts.upsert", ALICE, weaker)).action.value == "conflict"
        stronger = {**fact, "value": "Porto", "confidence": 1.0}
        with pytest.raises(QuotaExceededError):  # a replacement is a new record
            await m("facts.upsert", ALICE, stronger)
        assert await m.count(ALICE) == used
        assert (await m("facts.get", ALICE, "location")).content.structured["value"] == "Lisbon"

    run(kind, body, quotas=Quotas())


@pytest.mark.parametrize("kind", KINDS)
def test_what_the_library_derives_counts_but_is_never_refused(kind: str) -> None:
    turns = [
        {"role": "user", "content": "My name is Alice and I live in Lisbon."},
        {"role": "user", "content": "I am allergic to peanuts."},
    ]

    async def body(m: Mem) -> None:
        await m("add_messages", ALICE, turns)
        report = await m("end_session", ALICE)  # facts, summary, episode: the jobs run
        assert report.failed == 0 and not report.errors
        assert await m("facts.all", ALICE)
        assert await m.count(ALICE) > 2  # over the quota: derived records count
        with pytest.raises(QuotaExceededError):  # and the next caller write is refused
            await WRITES["key.set"][0](m, ALICE)

    run(kind, body, quotas=Quotas(per_user=Quota(max_records=2)))


SIMPLE = [name for name in WRITES if name != "knowledge.ingest"]
ONCE = {"facts.upsert", "procedures.learn"}  # the same fact or lesson again adds no record


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    limit=st.integers(min_value=1, max_value=6),
    calls=st.lists(st.sampled_from(SIMPLE), min_size=1, max_size=8),
    kind=st.sampled_from(KINDS),
)
def test_service_writes_never_pass_the_limit(limit: int, calls: list[str], kind: str) -> None:
    """Whatever the sequence of writes, each is written whole when it fits and refused with
    nothing written when it does not, so the count never passes the limit."""

    async def body(m: Mem) -> None:
        used = 0
        written: set[str] = set()
        for name in calls:
            write, n = WRITES[name]
            n = 0 if name in ONCE and name in written else n
            try:
                await write(m, ALICE)
            except QuotaExceededError:
                assert n > 0 and used + n > limit, name
            else:
                used += n
                written.add(name)
            assert await m.count(ALICE) == used <= limit

    run(kind, body, quotas=Quotas(per_user=Quota(max_records=limit)))


@pytest.mark.parametrize("kind", KINDS)
def test_concurrent_service_writes_admit_exactly_the_limit(kind: str, tmp_path: Path) -> None:
    """Twelve writers at once (threads on ``Memory``, tasks on ``AsyncMemory``) under a limit
    of five: the check and the write share one lease, so exactly five are written."""
    url = f"sqlite:///{tmp_path / 'c.db'}"
    options: dict[str, Any] = {
        "embedder": "hashing",
        "background": False,
        "quotas": Quotas(per_user=Quota(max_records=5)),
    }
    outcomes: list[object]
    if kind == "sync":
        with Memory(url, **options) as memory:

            def pin(i: int) -> object:
                try:
                    return memory.key.set(ALICE, f"Rule number {i}", i)
                except QuotaExceededError as exc:
                    return exc

            with ThreadPoolExecutor(8) as pool:
                outcomes = list(pool.map(pin, range(12)))
            every = Filters(include_deleted=True, include_superseded=True)
            assert memory.store.count(ALICE.user_scope, every) == 5
    else:

        async def main() -> list[object]:
            async with AsyncMemory(url, **options) as amemory:
                pins = (amemory.key.set(ALICE, f"Rule number {i}", i) for i in range(12))
                done = await asyncio.gather(*pins, return_exceptions=True)
                every = Filters(include_deleted=True, include_superseded=True)
                assert await amemory.store.count(ALICE.user_scope, every) == 5
                return list(done)

        outcomes = asyncio.run(main())
    refused = [o for o in outcomes if isinstance(o, QuotaExceededError)]
    assert len(refused) == 7 and len(outcomes) - len(refused) == 5
