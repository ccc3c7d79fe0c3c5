"""Operations: Prometheus metrics and JSON-lines logs. No telemetry leaves the process."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .priority import READ, SEARCH, WRITE, PriorityGate

# Set in a request's ``scope["state"]`` (one dict, whichever middleware copied the scope) by
# server/slow_clients.py when the client stalled and got a 408 there: the app's own answer
# went nowhere, so the access log and the metrics record the 408.
TIMED_OUT = "memstrata.client_timed_out"

__all__ = ["TIMED_OUT", "JsonFormatter", "Metrics", "RequestObserver", "configure_logging"]

log = logging.getLogger("memstrata.server.access")

# The methods a metric label names; any other is "other". The label values are kept by the
# registry for the process's life: a server behind h11 (any token is a method) took a new
# series for every method a client made up.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"})


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and any ``extra`` fields."""

    _STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
        "message",
        "asctime",
        "color_message",
    }

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in self._STANDARD:
                out[key] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure_logging(level: str = "info") -> None:
    """JSON lines on stderr for memstrata, uvicorn and the PostgreSQL driver (what
    ``memstrata serve`` calls)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    for name in ("memstrata", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level.upper())
        logger.propagate = False
    logging.getLogger("uvicorn.access").disabled = True  # our access log replaces it
    # The PostgreSQL pool's warnings (a server gone: "error connecting", connections
    # discarded) as JSON lines too; they went to the CLI's console, boxed and wrapped.
    # Its INFO lines are one per connection taken: warnings and up only.
    driver = logging.getLogger("psycopg")
    driver.handlers[:] = [handler]
    driver.setLevel(max(logging.WARNING, logging.getLevelName(level.upper())))
    driver.propagate = False


class _JobGauges(Collector):
    def __init__(self, counts: Callable[[], Mapping[str, int] | None]) -> None:
        self._counts = counts

    def collect(self) -> Iterator[Metric]:
        try:
            counts = self._counts()
        except Exception:  # a scrape must not fail because the store is down
            counts = None
        if counts is None:
            return
        pending = GaugeMetricFamily("memstrata_jobs_pending", "Background jobs queued or running")
        pending.add_metric([], counts.get("pending", 0) + counts.get("running", 0))
        failed = GaugeMetricFamily(
            "memstrata_jobs_failed", "Background jobs that gave up after their retries"
        )
        failed.add_metric([], counts.get("failed", 0))
        yield pending
        yield failed


class _GateGauges(Collector):
    """The reads-first gate (server/priority.py): requests waiting per class, and running."""

    def __init__(self, gate: PriorityGate) -> None:
        self._gate = gate

    def collect(self) -> Iterator[Metric]:
        waiting = GaugeMetricFamily(
            "memstrata_reads_first_waiting",
            "Requests of the user routes waiting for the reads-first gate, per class",
            labels=["class"],
        )
        for rank, n in self._gate.waiting().items():
            waiting.add_metric([_CLASS_NAMES[rank]], n)
        running = GaugeMetricFamily(
            "memstrata_reads_first_running", "Requests of the user routes the gate let run"
        )
        running.add_metric([], self._gate.running)
        yield waiting
        yield running


_CLASS_NAMES = {SEARCH: "search", READ: "read", WRITE: "write"}


class Metrics:
    """A registry per app (so tests can run several apps in one process)."""

    def __init__(self, job_counts: Callable[[], Mapping[str, int] | None]) -> None:
        self.registry = CollectorRegistry()
        self.latency = Histogram(
            "memstrata_http_request_duration_seconds",
            "HTTP request latency",
            ["method", "route", "status"],
            registry=self.registry,
            buckets=(0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5, 5),
        )
        self.registry.register(_JobGauges(job_counts))
        # A 200 whose body ends with a failed line instead of the end line (routes/portability)
        self.cut_exports = Counter(
            "memstrata_export_streams_cut_total",
            "Exports that failed after their 200 was sent (the body ends with a failed line)",
            ["code"],
            registry=self.registry,
        )

    def watch(self, gate: PriorityGate) -> None:
        """Export the reads-first gate's queue."""
        self.registry.register(_GateGauges(gate))


class RequestObserver:
    """Times every request into the histogram and writes one access-log line for it."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def observing_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                # Which server process answered (several with --workers N): for operators
                # and the multi-process test; a pid reveals nothing about the data.
                headers = list(message.get("headers", []))
                headers.append((b"x-memstrata-process", str(os.getpid()).encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, observing_send)
        finally:
            elapsed = time.perf_counter() - start
            route = scope.get("route")
            template = getattr(route, "path", None) or _bucket(scope.get("path", ""))
            state = scope.get("state") or {}
            if state.get(TIMED_OUT):  # the client stalled: it got a 408 (server/slow_clients)
                status = 408
            method = scope["method"] if scope["method"] in _METHODS else "other"
            self.metrics.latency.labels(method, template, str(status)).observe(elapsed)
            log.info(
                "%s %s %d",
                scope["method"],
                scope.get("path", ""),
                status,
                extra={
                    "method": scope["method"],
                    "path": scope.get("path", ""),
                    "status": status,
                    "ms": round(elapsed * 1000, 2),
                    "tenant": state.get("tenant"),
                    "key_id": state.get("key_id"),
                },
            )


def _bucket(path: str) -> str:
    # Unmatched paths (404s, static files) share one label, so labels stay few.
    return "/ui" if path.startswith("/ui") else "unmatched"
