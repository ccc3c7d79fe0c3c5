"""A circuit breaker for a model endpoint: after a failure, stop calling it for a while.

An unreachable or hanging endpoint costs its full timeout and retries on every call; with
the breaker, the first failure opens the circuit and the following calls go straight to the
fallback for ``cooldown_seconds``. After the cool-down one call is let through as a trial
("half-open"): success closes the circuit, failure opens it for another cool-down.

:meth:`CircuitBreaker.failure` returns ``True`` only for the first failure of an outage, so
callers warn once per outage rather than once per call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ..errors import ValidationError

__all__ = ["CircuitBreaker"]


class CircuitBreaker:
    def __init__(
        self, cooldown_seconds: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not cooldown_seconds >= 0:
            raise ValidationError(f"cooldown_seconds must be 0 or more, got {cooldown_seconds}")
        self.cooldown_seconds = cooldown_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._open_until: float | None = None  # None: closed (calls go through)
        self._trial_running = False
        self._in_outage = False

    @property
    def is_open(self) -> bool:
        with self._lock:
            return self._open_until is not None and self._clock() < self._open_until

    def allow(self) -> bool:
        """Whether to call the endpoint now (closed, or the one trial after a cool-down)."""
        with self._lock:
            if self._open_until is None:
                return True
            if self._clock() < self._open_until or self._trial_running:
                return False
            self._trial_running = True
            return True

    def success(self) -> bool:
        """Record a working call; returns whether this ended an outage."""
        with self._lock:
            recovered = self._in_outage
            self._open_until = None
            self._trial_running = False
            self._in_outage = False
            return recovered

    def failure(self) -> bool:
        """Open the circuit; returns whether this is the first failure of an outage."""
        with self._lock:
            first = not self._in_outage
            self._in_outage = True
            self._trial_running = False
            self._open_until = self._clock() + self.cooldown_seconds
            return first

    def open_for(self, seconds: float) -> None:
        """Open the circuit for ``seconds`` as part of an outage already reported elsewhere
        (e.g. by an earlier process): calls go to the fallback, and the next failure is not
        the first of the outage (no second warning)."""
        if not seconds > 0:
            raise ValidationError(f"seconds must be positive, got {seconds}")
        with self._lock:
            self._in_outage = True
            self._trial_running = False
            self._open_until = self._clock() + seconds

    def seconds_left(self) -> float:
        with self._lock:
            if self._open_until is None:
                return 0.0
            return max(0.0, self._open_until - self._clock())
