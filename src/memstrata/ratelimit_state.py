"""What one process knows of the shared rate limit, without I/O (:mod:`memstrata.ratelimit`).

:class:`HeldWindows` is the durable fallback as a process holds it: per key the current
fixed window, the tokens a refill took from the store's counters and has not spent, whether
the store refused the window's last request, and the plan of a refill (:meth:`~HeldWindows.
takes`). :class:`RedisHealth` is whether Redis answered lately. Both are driven by the
limiter's sync and async paths alike; the I/O of a refill and of the Redis bucket is written
once, in ``memstrata/_async/ratelimit_io.py`` (the sync ``memstrata/ratelimit_io.py`` is
generated from it).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass

from .store.counter_types import Refusal, Take

__all__ = ["HeldWindows", "RedisHealth"]

log = logging.getLogger("memstrata.ratelimit")


@dataclass(slots=True)
class _Window:
    """What this process holds of a key's current durable window."""

    index: int  # the window (clock // window_seconds)
    tokens: int = 0  # taken from the store for it and not yet spent
    spent: bool = False  # the store refused its last request: refuse until it ends
    previous: int | None = None  # the window before it, whose counter is kept a window more


class HeldWindows:
    """Fixed windows of ``burst / rate`` seconds admitting ``burst`` requests each, as one
    process holds them; a refill takes up to ``batch`` of a window's requests at once.

    A window's counter is forgotten once the process is two windows past it, not at once:
    another process whose clock reads a little behind (read just before the window ended,
    then its take was slow; another host's clock) may still take from it, and a counter
    forgotten under it would start again from 0 and admit a batch beyond the burst. (A clock
    a whole window or more behind can still do that: keep hosts' clocks closer than
    ``burst / rate`` seconds.)"""

    def __init__(self, rate: float, burst: int, batch: int) -> None:
        self.burst = burst
        self.batch = min(batch, burst)
        self.window_seconds = burst / rate if rate > 0 else 1.0
        self._lock = threading.Lock()  # guards the windows; never held across I/O
        self._windows: dict[str, _Window] = {}  # key -> its durable window, as held here

    def spend(self, name: str, now: float) -> float | None:
        """Spend a token held for the window of ``now``: 0, the wait when the window is
        known to be spent, None when a refill must go to the store."""
        window = self.window_seconds
        index = int(now // window)
        with self._lock:
            held = self._windows.get(name)
            if held is None or held.index < index:
                return None
            # held.index > index: another caller read the clock later; that window is current
            if held.tokens > 0:
                held.tokens -= 1
                return 0.0
            if held.spent:
                return max(0.001, (held.index + 1) * window - now)
            return None

    def open(self, name: str, now: float) -> tuple[int, list[str]]:
        """The window a refill takes from (never one older than this process has used)
        and the counters of the windows it has now left for good, to forget."""
        index = int(now // self.window_seconds)
        with self._lock:
            held = self._windows.get(name)
            if held is not None and held.index >= index:
                return held.index, []
            if held is None:
                self._windows[name] = _Window(index)
                return index, []
            kept = held.index if held.index == index - 1 else None
            self._windows[name] = _Window(index, previous=kept)
        passed = (held.previous, None if kept is not None else held.index)
        return index, [f"rate:{name}:{w}" for w in passed if w is not None]

    def takes(self, name: str, index: int) -> Generator[Take, Refusal | None, int]:
        """The takes of one refill of window ``index``, each sent the store's answer: a
        batch, else the window's last ones (a refusal says how many are used). Returns how
        many were taken (0: the window is spent)."""
        counter = f"rate:{name}:{index}"
        ttl = math.ceil(self.window_seconds)
        amount = self.batch
        while amount > 0:
            refused = yield Take(counter, amount, self.burst, ttl)
            if refused is None:
                return amount
            amount = min(amount - 1, self.burst - refused.used)
        return 0

    def refilled(self, name: str, index: int, taken: int, now: float) -> float:
        """Keep what a refill took for window ``index`` (one of them is this request's): 0,
        or the wait until the window ends when it took none."""
        with self._lock:
            held = self._windows.get(name)
            current = held if held is not None and held.index == index else None
            if taken == 0:
                if current is not None:
                    current.spent = True
                return max(0.001, (index + 1) * self.window_seconds - now)
            if current is not None:
                current.tokens += taken - 1
            return 0.0


class RedisHealth:
    """Whether Redis may be asked: not within ``cooldown`` seconds after a failure. The
    first failure of an outage is logged once (``fallback`` names where the limit goes)."""

    def __init__(
        self, errors: tuple[type[BaseException], ...], cooldown: float, fallback: str
    ) -> None:
        self.errors = errors  # what a failed call raises (redis.RedisError)
        self._cooldown = cooldown
        self._fallback = fallback
        self._down_since: float | None = None
        self._lock = threading.Lock()

    def up_now(self) -> bool:
        down = self._down_since
        return down is None or time.monotonic() - down >= self._cooldown

    def answered(self) -> None:
        if self._down_since is not None:
            with self._lock:
                self._down_since = None
            log.info("Redis is back; the shared rate limit is kept there again")

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            first = self._down_since is None
            self._down_since = time.monotonic()
        if first:
            log.warning(
                "Redis unavailable for the shared rate limit (%s: %s); limiting on %s until "
                "it is back (retrying every %.1f s)",
                type(exc).__name__,
                exc,
                self._fallback,
                self._cooldown,
            )
