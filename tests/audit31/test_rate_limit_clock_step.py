"""The shared rate limit's durable windows when the wall clock steps back.

``SharedRateLimiter`` (``memstrata serve`` on a store without Redis, or while Redis is
down) counts fixed windows of ``burst / rate`` seconds of ``time.time()``. A process kept
the newest window it had used ("another caller read the clock later"), so after the wall
clock stepped back an hour (NTP, a VM resumed) a key whose window was spent was refused
with a wait of the whole step, ~3,600 s, for that hour. Session 31's audit: a clock more
than a window behind the held window opens the window of its own time."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.ratelimit import SharedRateLimiter


@pytest.mark.parametrize("step", [3600.0, 86_400.0 * 400, 7.0])
def test_a_clock_stepped_back_waits_one_window_at_most(tmp_path: Path, step: float) -> None:
    mem = Memory(f"sqlite:///{tmp_path / 'r.db'}", embedder="hashing", background=False)
    now = [1_800_000_000.0]
    try:
        limiter = SharedRateLimiter(
            1.0,
            2,
            fallback=mem.store,  # type: ignore[arg-type]
            clock=lambda: now[0],
        )
        assert [limiter.acquire("k") for _ in range(2)] == [0.0, 0.0]
        refused = limiter.acquire("k")
        assert 0 < refused <= limiter.window_seconds
        now[0] -= step  # the wall clock steps back
        waits = [limiter.acquire("k") for _ in range(3)]
        # a fresh window of the clock's own time: its burst, then at most a window's wait
        assert waits[:2] == [0.0, 0.0], waits
        assert 0 < waits[2] <= limiter.window_seconds, waits
        assert limiter.acquire_held("k") <= limiter.window_seconds  # type: ignore[operator]
        now[0] += step + 10  # and forward again: the window of that time
        assert limiter.acquire("k") == 0.0
    finally:
        mem.close()


def test_a_clock_read_just_before_a_window_ends_keeps_the_newer_window(tmp_path: Path) -> None:
    """What the held window is for: a caller that read the clock a moment earlier than the
    refill that opened the next window spends that window's tokens, and no new window is
    opened for it (which would admit a burst more)."""
    mem = Memory(f"sqlite:///{tmp_path / 'r.db'}", embedder="hashing", background=False)
    now = [1_800_000_001.9]  # window of 2 s: 0.1 s before the next one
    try:
        limiter = SharedRateLimiter(
            1.0,
            2,
            fallback=mem.store,  # type: ignore[arg-type]
            clock=lambda: now[0],
        )
        now[0] += 0.2  # the next window
        assert [limiter.acquire("k") for _ in range(2)] == [0.0, 0.0]
        now[0] -= 0.2  # a caller whose clock read 0.2 s earlier
        assert limiter.acquire("k") > 0
    finally:
        mem.close()
