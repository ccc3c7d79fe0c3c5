"""What one process knows of the shared rate limit, without I/O (:mod:`memstrata.ratelimit`).

:class:`HeldWindows` is the durable fallback as a process holds it: per key the current
fixed window, the tokens a refill took from the store's counters and has not spent, whether
the store refused the window's last request, and the plan of a refill (:meth:`~HeldWindows.
takes`). :class:`TokenBuckets` are the buckets of this process alone (a limiter with
nothing to share through). :class:`RedisHealth` is whether Redis answered lately. They are
driven by the limiter's sync and async paths alike; the I/O of a refill and of the Redis
bucket is written once, in ``memstrata/_async/ratelimit_io.py`` (the sync
``memstrata/ratelimit_io.py`` is generated from it).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Generator
from dataclasses import dataclass

from .errors import ValidationError
from .store.counter_types import Refusal, Take, rate_period

__all__ = ["MAX_KEYS", "HeldWindows", "RedisHealth", "TokenBuckets", "check_max_keys"]

log = logging.getLogger("memstrata.ratelimit")

# Keys (API keys, tenants) a process keeps rate-limit state for at most (session 29): a
# server that sees millions of keys over months keeps those of the last moments, not all.
MAX_KEYS = 100_000


def check_max_keys(max_keys: object) -> int:
    if isinstance(max_keys, bool) or not isinstance(max_keys, int) or max_keys < 1:
        raise ValidationError(
            f"max_keys (the keys a process keeps rate-limit state for) must be an integer "
            f">= 1, got {max_keys!r}"
        )
    return max_keys


class TokenBuckets:
    """A token bucket per key in this process: ``rate`` tokens/s, up to ``burst``.

    Bounded (a long-running server sees millions of keys): a bucket that has refilled to
    ``burst`` is dropped as soon as it reaches the front of the least-recently-used order,
    which loses nothing (a key seen again starts from a full bucket, which is what it had).
    Past ``max_keys`` buckets that are not full, the least recently used one is dropped
    too: that key may then send up to ``burst`` requests early once. Only keys the server
    has authenticated reach a bucket, so getting one's own bucket dropped that way takes
    ``max_keys`` other valid keys all sending within ``burst / rate`` seconds: far more
    requests than the reset gives back."""

    def __init__(
        self,
        rate: float,
        burst: int,
        max_keys: int = MAX_KEYS,
    ) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.max_keys = check_max_keys(max_keys)
        self._lock = threading.Lock()
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # (tokens, stamp)

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, key: str, now: float) -> float:
        """0 when a token was taken, else the seconds until one is there."""
        rate, burst, buckets = self.rate, self.burst, self._buckets
        with self._lock:
            held = buckets.get(key)
            if held is None:
                tokens = burst
                self._drop_full(now)
                if len(buckets) >= self.max_keys:
                    buckets.popitem(last=False)
            else:
                tokens = min(burst, held[0] + (now - held[1]) * rate)
                buckets.move_to_end(key)
            if tokens >= 1.0:
                buckets[key] = (tokens - 1.0, now)
                return 0.0
            buckets[key] = (tokens, now)
            return (1.0 - tokens) / rate

    def _drop_full(self, now: float) -> None:
        """Drop the buckets at the front that are full again (each leaves once: O(1) per
        new key on average)."""
        buckets, rate, burst = self._buckets, self.rate, self.burst
        while buckets:
            tokens, stamp = next(iter(buckets.values()))
            if tokens + (now - stamp) * rate < burst:
                return
            buckets.popitem(last=False)


_STALE_PER_REFILL = 8  # stale keys a refill drops at most (their counters go with its I/O)


@dataclass(slots=True)
class _Window:
    """What this process holds of a key's current durable window."""

    index: int  # the window (clock // window_seconds)
    tokens: int = 0  # taken from the store for it and not yet spent
    spent: bool = False  # the store refused its last request: refuse until it ends
    previous: int | None = None  # the window before it, whose counter is kept a window more


def _stepped_back(held: _Window, index: int) -> bool:
    """Whether the clock reads more than a whole window before the window ``held``: no
    caller that merely read the clock a little earlier than the refill that opened it (that
    one is at most one window behind), but a wall clock set back."""
    return held.index > index + 1


class HeldWindows:
    """Fixed windows of ``burst / rate`` seconds admitting ``burst`` requests each, as one
    process holds them; a refill takes up to ``batch`` of a window's requests at once.

    A window's counter is forgotten once the process is two windows past it, not at once:
    another process whose clock reads a little behind (read just before the window ended,
    then its take was slow; another host's clock) may still take from it, and a counter
    forgotten under it would start again from 0 and admit a batch beyond the burst. (A clock
    a whole window or more behind can still do that: keep hosts' clocks closer than
    ``burst / rate`` seconds.)

    Bounded: a key this process has not refilled for two windows holds nothing a refill
    would not read again, so :meth:`open` drops such keys (forgetting their counters as it
    would have at their own next refill, a few per refill), and past ``max_keys`` keys it
    drops the least recently used one anyway. Dropping a key's window never admits more:
    the count lives in the store; the process only loses the tokens it held for that
    window (the key then refills from the store, which refuses a spent window). The
    counters of a window dropped early (or held when the process stopped) go at the key's
    next refill in any process: the take that creates a window's row deletes the key's
    rows of windows before the previous one (:meth:`takes`; session 29). A key never seen
    again keeps its last two or three rows."""

    def __init__(self, rate: float, burst: int, batch: int, max_keys: int = MAX_KEYS) -> None:
        self.burst = burst
        self.batch = min(batch, burst)
        self.window_seconds = burst / rate if rate > 0 else 1.0
        self.max_keys = check_max_keys(max_keys)
        self._lock = threading.Lock()  # guards the windows; never held across I/O
        # key -> its durable window, as held here, least recently used first (bounded:
        # see :meth:`open`)
        self._windows: OrderedDict[str, _Window] = OrderedDict()

    def __len__(self) -> int:
        return len(self._windows)

    def spend(self, name: str, now: float) -> float | None:
        """Spend a token held for the window of ``now``: 0, the wait when the window is
        known to be spent, None when a refill must go to the store."""
        window = self.window_seconds
        index = int(now // window)
        with self._lock:
            held = self._windows.get(name)
            if held is None or held.index < index or _stepped_back(held, index):
                return None
            self._windows.move_to_end(name)
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
        windows = self._windows
        with self._lock:
            held = windows.get(name)
            if held is not None and _stepped_back(held, index):
                # the wall clock stepped back: the windows held are of a time that has not
                # come; a refill takes from the window of the clock's own time (a wait of the
                # whole step, an hour after NTP set the clock back an hour, was the
                # alternative; session 31)
                del windows[name]
                ahead = (held.previous, held.index)
                forget = [self.counter(name, w) for w in ahead if w is not None]
                windows[name] = _Window(index)
                return index, forget
            if held is not None and held.index >= index:
                windows.move_to_end(name)
                return held.index, []
            if held is None:
                forget = self._drop_stale(index)
                if len(windows) >= self.max_keys:
                    windows.popitem(last=False)
                windows[name] = _Window(index)
                return index, forget
            kept = held.index if held.index == index - 1 else None
            windows[name] = _Window(index, previous=kept)
            windows.move_to_end(name)
            forget = self._drop_stale(index)
        passed = (held.previous, None if kept is not None else held.index)
        return index, [self.counter(name, w) for w in passed if w is not None] + forget

    def _drop_stale(self, index: int) -> list[str]:
        """Drop up to :data:`_STALE_PER_REFILL` keys at the front whose window is two or
        more before ``index`` (a refill of theirs would open a new window and forget
        these counters: the same ones are forgotten here); their counters."""
        windows = self._windows
        forget: list[str] = []
        for _ in range(_STALE_PER_REFILL):
            if not windows:
                break
            name, held = next(iter(windows.items()))
            if held.index > index - 2:
                break
            windows.popitem(last=False)
            passed = (held.previous, held.index)
            forget.extend(self.counter(name, w) for w in passed if w is not None)
        return forget

    def counter(self, name: str, index: int) -> str:
        """The store's counter of ``name``'s window ``index``: its period says when it
        stops counting (:func:`~memstrata.store.counter_types.rate_period`), so the
        store-wide sweep finds the rows of keys never seen again (session 30)."""
        return f"rate:{name}:{rate_period(index, self.window_seconds)}"

    def takes(self, name: str, index: int) -> Generator[Take, Refusal | None, int]:
        """The takes of one refill of window ``index``, each sent the store's answer: a
        batch, else the window's last ones (a refusal says how many are used). Returns how
        many were taken (0: the window is spent)."""
        family = f"rate:{name}:"
        counter = self.counter(name, index)
        ttl = math.ceil(self.window_seconds)
        # creating this window's row deletes the key's windows before the previous one, as
        # open() forgets them: a key dropped from this process (max_keys, a restart) keeps
        # 2 or 3 rows in the store, not one per window it was ever used in (session 29)
        previous = rate_period(index - 1, self.window_seconds)
        swept, keep_from = (family, previous) if index > 0 else ("", "")
        amount = self.batch
        while amount > 0:
            refused = yield Take(counter, amount, self.burst, ttl, swept, keep_from)
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
