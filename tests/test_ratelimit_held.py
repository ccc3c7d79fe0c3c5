"""SharedRateLimiter's durable fallback as a server process drives it: the tokens a refill
took are spent on the event loop without I/O, one refill per key is under way at a time,
and concurrent callers never get more than the burst (nor fewer: no batch is taken twice).

The counters are the ``memory://`` store's, wrapped to count the calls (and to be slow on
purpose, so that callers overlap); the rates are tiny, so no window ends during a test
unless the test moves the clock.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence

import pytest

from memstrata.ratelimit import AsyncRateCounters, SharedRateLimiter
from memstrata.store import open_store
from memstrata.store.counter_types import rate_period
from memstrata.store.quota_counters import QuotaCounters, Refusal, Take

TINY = 1e-6  # requests/s: a window of burst / TINY seconds, months long


class Counters:
    """A real store's counters, sync and async, counting the takes (``delay``: each take
    waits that long first, on a thread or on the loop)."""

    def __init__(self, store: QuotaCounters, delay: float = 0.0) -> None:
        self.store = store
        self.delay = delay
        self.takes: list[tuple[int, bool]] = []  # (amount, granted)
        self.forgotten: list[str] = []

    def _take(self, takes: Sequence[Take]) -> Refusal | None:
        refused = self.store.take_counters(takes)
        self.takes.append((takes[0].amount, refused is None))
        return refused

    def take_counters(self, takes: Sequence[Take]) -> Refusal | None:
        time.sleep(self.delay)
        return self._take(takes)

    def forget_counters(self, keys: Sequence[str]) -> None:
        self.forgotten.extend(keys)
        self.store.forget_counters(keys)

    async def atake_counters(self, takes: Sequence[Take]) -> Refusal | None:
        await asyncio.sleep(self.delay)
        return self._take(takes)

    async def aforget_counters(self, keys: Sequence[str]) -> None:
        self.forget_counters(keys)

    @property
    def granted(self) -> int:
        return sum(amount for amount, ok in self.takes if ok)


@pytest.fixture
def store() -> Iterator[QuotaCounters]:
    s = open_store("memory://")
    assert isinstance(s, QuotaCounters)
    yield s
    s.close()


async def no_thread(fn: Callable[[], float]) -> float:
    raise AssertionError("no worker thread should be needed")


def run(coro: Awaitable[float]) -> float:
    async def main() -> float:
        return await coro

    return asyncio.run(main())


def test_held_tokens_are_spent_without_the_store_or_a_thread(store: QuotaCounters) -> None:
    counters = Counters(store)
    assert isinstance(counters, AsyncRateCounters)
    limiter = SharedRateLimiter(TINY, 100, fallback=counters, batch=10)
    assert limiter.acquire_held("k") is None  # nothing held yet: nothing spent either
    assert run(limiter.acquire_async("k", no_thread)) == 0.0  # the refill, on the loop
    assert counters.takes == [(10, True)]
    assert [limiter.acquire_held("k") for _ in range(9)] == [0.0] * 9
    assert counters.takes == [(10, True)]  # the nine came from what the process held
    assert limiter.acquire_held("k") is None  # spent: the next one needs a refill
    assert limiter.acquire_held("other") is None  # keys hold tokens of their own


def test_a_spent_window_is_refused_from_memory_until_it_ends(store: QuotaCounters) -> None:
    now = [1000.0]
    counters = Counters(store)
    limiter = SharedRateLimiter(1, 4, fallback=counters, batch=2, clock=lambda: now[0])
    assert limiter.window_seconds == 4.0
    assert [limiter.acquire("k") for _ in range(4)] == [0.0] * 4
    assert limiter.acquire("k") == pytest.approx(4.0)  # the store refused: 4 s to go
    takes = len(counters.takes)
    now[0] += 1.5
    assert limiter.acquire_held("k") == pytest.approx(2.5)  # known spent: no store call
    assert limiter.acquire("k") == pytest.approx(2.5)
    assert len(counters.takes) == takes
    now[0] += 2.5  # the next window: a refill; the passed window's counter is kept
    assert limiter.acquire_held("k") is None
    assert limiter.acquire("k") == 0.0
    assert counters.forgotten == [] and counters.takes[-1] == (2, True)
    now[0] += 4.0  # the one after: the counter two windows back is forgotten
    assert limiter.acquire("k") == 0.0
    assert len(counters.forgotten) == 1 and counters.forgotten[0].endswith(
        f":{rate_period(250, 4.0)}"
    )


def test_a_refill_takes_the_windows_last_ones_when_a_batch_does_not_fit(
    store: QuotaCounters,
) -> None:
    counters = Counters(store)
    other = SharedRateLimiter(TINY, 10, fallback=counters, batch=1)  # another process
    limiter = SharedRateLimiter(TINY, 10, fallback=counters, batch=4)
    assert [other.acquire("k") for _ in range(7)] == [0.0] * 7
    waits = [limiter.acquire("k") for _ in range(4)]
    assert waits[:3] == [0.0] * 3 and waits[3] > 0
    # 7 used: a batch of 4 is refused, the 3 left are taken in one write; then spent
    assert counters.takes[7:] == [(4, False), (3, True), (4, False)]
    assert counters.granted == 10


def test_concurrent_threads_share_one_refill(store: QuotaCounters) -> None:
    """Eight requests that find no token at once: before, each took a batch of its own (two
    took the whole burst and six were refused with 14 tokens unspent in this process)."""
    counters = Counters(store, delay=0.05)
    limiter = SharedRateLimiter(TINY, 20, fallback=counters, batch=10)
    start = threading.Barrier(8)
    waits: list[float] = []

    def request() -> None:
        start.wait()
        waits.append(limiter.acquire("k"))

    threads = [threading.Thread(target=request) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert waits == [0.0] * 8
    assert counters.takes == [(10, True)]
    assert [limiter.acquire("k") for _ in range(13)].count(0.0) == 12  # 20 in all


def test_concurrent_coroutines_never_over_admit(store: QuotaCounters) -> None:
    counters = Counters(store, delay=0.01)
    limiter = SharedRateLimiter(TINY, 25, fallback=counters, batch=10)

    async def request() -> float:
        wait = limiter.acquire_held("k")
        return wait if wait is not None else await limiter.acquire_async("k", no_thread)

    async def main() -> list[float]:
        return await asyncio.gather(*(request() for _ in range(60)))

    waits = asyncio.run(main())
    assert waits.count(0.0) == 25 and all(w > 0 for w in waits if w)
    assert counters.granted == 25
    # one refill at a time: 10, 10, then the last 5 when 10 no longer fit, then one refusal
    assert [ok for _, ok in counters.takes].count(True) == 3


def test_coroutines_wait_for_a_refill_under_way_on_a_thread(store: QuotaCounters) -> None:
    """A refill on a worker thread (the MCP endpoint's sync check) holds the key's refill:
    a coroutine that finds no token then waits for it on a thread, and spends what it took."""
    counters = Counters(store, delay=0.2)
    limiter = SharedRateLimiter(TINY, 20, fallback=counters, batch=10)
    hops: list[int] = []

    async def on_thread(fn: Callable[[], float]) -> float:
        hops.append(1)
        return await asyncio.to_thread(fn)

    async def main() -> list[float]:
        refill = asyncio.create_task(asyncio.to_thread(limiter.acquire, "k"))
        await asyncio.sleep(0.05)  # the thread's take is under way
        waits = await asyncio.gather(*(limiter.acquire_async("k", on_thread) for _ in range(4)))
        return [await refill, *waits]

    assert asyncio.run(main()) == [0.0] * 5
    assert counters.takes == [(10, True)] and len(hops) == 4


def test_a_clock_read_behind_the_window_in_use_spends_that_windows_tokens(
    store: QuotaCounters,
) -> None:
    """A caller whose clock reading is older than the window another caller already moved
    to (read before it, or a wall clock stepped back): before, it took a batch from the old
    window's counter, replaced the tokens held for the new one and forgot the new window's
    counter (which then admitted a whole burst again)."""
    now = [1000.0]
    counters = Counters(store)
    limiter = SharedRateLimiter(1, 4, fallback=counters, batch=2, clock=lambda: now[0])
    assert limiter.acquire("k") == 0.0  # window 250: takes 2, holds 1
    now[0] = 999.0  # window 249
    assert limiter.acquire("k") == 0.0  # the held one of window 250
    assert counters.takes == [(2, True)] and counters.forgotten == []
    assert [limiter.acquire("k") for _ in range(3)][:2] == [0.0, 0.0]
    assert counters.granted == 4 and counters.forgotten == []


def test_a_process_whose_clock_is_behind_at_a_window_edge_admits_no_extra_batch(
    store: QuotaCounters,
) -> None:
    """Two processes on one store's counters, the second's clock a moment behind the first's
    (it read the clock just before the window ended and its take was slow, or another
    host's clock). Before, the first deleted the ending window's counter as it moved on; the
    second's refill then found no counter, started it again from 0 and admitted a batch
    beyond the window's burst (the counter it wrote was left until its next window)."""
    counters = Counters(store)
    a_now, b_now = [1003.9], [1003.9]  # window 250 (1000-1004 s) ends in 0.1 s
    a = SharedRateLimiter(1, 4, fallback=counters, batch=2, clock=lambda: a_now[0])
    b = SharedRateLimiter(1, 4, fallback=counters, batch=2, clock=lambda: b_now[0])
    assert [a.acquire("k"), b.acquire("k"), a.acquire("k"), b.acquire("k")] == [0.0] * 4
    a_now[0] = 1004.0  # a is in window 251
    assert a.acquire("k") == 0.0
    assert b.acquire("k") == pytest.approx(0.1)  # b still in 250: its burst is spent
    assert counters.granted == 4 + 2  # 250's burst, and a's first batch of 251
    assert counters.forgotten == []  # 250 is kept while a process may be behind
    b_now[0] = 1004.05
    assert b.acquire("k") == 0.0  # b in 251 too: the one a left
    a_now[0] = b_now[0] = 1008.0  # window 252: each forgets 250, and keeps 251 a window more
    assert a.acquire("k") == 0.0 and b.acquire("k") == 0.0
    assert [key.rsplit(":", 1)[1] for key in counters.forgotten] == [rate_period(250, 4.0)] * 2
