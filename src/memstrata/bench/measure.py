"""Timing and memory measurement for the benchmarks.

Peak RSS is sampled from ``/proc/self/statm`` by a background thread (every 20 ms) so each
phase gets its own peak; where ``/proc`` is absent the process-lifetime peak from
``resource.getrusage`` is used instead (and is not phase-specific).
"""

from __future__ import annotations

import os
import resource
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType

from .locomo.metrics import percentile

__all__ = ["LatencyLog", "RssSampler", "current_rss_mb", "lifetime_peak_rss_mb", "load_average"]

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def current_rss_mb() -> float | None:
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * _PAGE / 2**20
    except OSError:
        return None


def lifetime_peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


class RssSampler:
    """``with RssSampler() as s: ...`` then ``s.peak_mb``: the highest RSS seen inside."""

    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self.peak_mb: float = 0.0
        self.start_mb: float = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        rss = current_rss_mb()
        if rss is not None and rss > self.peak_mb:
            self.peak_mb = rss

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> RssSampler:
        rss = current_rss_mb()
        if rss is None:
            self.start_mb = self.peak_mb = lifetime_peak_rss_mb()
            return self
        self.start_mb = self.peak_mb = rss
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._thread is None:
            self.peak_mb = lifetime_peak_rss_mb()
            return
        self._stop.set()
        self._thread.join()
        self._sample()


@dataclass
class LatencyLog:
    """Durations (seconds) of one kind of call: wall clock, and the CPU time the whole
    process spent meanwhile (every thread of it). On a machine shared with other work the
    wall clock mostly measures the wait for a core; the CPU time is what the call costs
    (for a database server in another process, only the client's share)."""

    samples: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    @contextmanager
    def time(self) -> Iterator[None]:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.samples.append(time.perf_counter() - t0)
            self.cpu.append(time.process_time() - c0)

    def summary_ms(self) -> dict[str, float | int | None]:
        def ms(values: list[float], q: float) -> float | None:
            p = percentile(values, q)
            return None if p is None else p * 1000

        return {
            "n": len(self.samples),
            "p50_ms": ms(self.samples, 50),
            "p95_ms": ms(self.samples, 95),
            "mean_ms": (sum(self.samples) / len(self.samples) * 1000) if self.samples else None,
            "cpu_p50_ms": ms(self.cpu, 50),
            "cpu_p95_ms": ms(self.cpu, 95),
        }


def load_average() -> float | None:
    """The 1-minute load average (``None`` where the platform has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None
