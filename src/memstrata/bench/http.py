"""``memstrata bench http``: a bounded load test of the HTTP API on 127.0.0.1 only.

The store (``store``: a fresh temporary SQLite file by default, or a ``postgresql://`` URL)
is seeded with ``records`` messages for one user (hashing embedder, through the library in
batches; a PostgreSQL store that already holds them for that user is reused). Then
``memstrata serve --workers N`` runs as a subprocess (so the clients never share an
interpreter lock with the server) with background jobs off (as when a separate
``memstrata worker`` runs them) and no rate limit unless ``rate_limit`` is set, and
``clients`` concurrent clients each send ``requests`` requests, or stop at ``duration``
seconds, in a fixed cycle: add a message, search, build a context.

Clients: ``async`` (default) runs them as tasks of one asyncio loop, each with its own
``httpx.AsyncClient`` connection; ``threads`` runs a thread and a sync ``httpx.Client`` per
client (the first version of this bench; eight client threads in one interpreter spend
much of their time waiting for its lock, which inflates the latencies they measure).
Load: closed loop by default (each client sends its next request when the previous one
answered: the server is saturated); with ``rate`` > 0 the clients together offer that many
requests/s on a fixed schedule (open loop) and a latency counts from the scheduled send
time, so a server that falls behind is charged for the wait.

Reported: p50/p95 per kind, requests/s, errors (any non-2xx or transport failure), how many
requests each server process answered, the machine's load average before and after, and
where the CPU went during the request phase (the client process, the server processes,
every PostgreSQL process of the machine, the rest) per request. Nothing leaves the loopback
interface.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from .measure import LatencyLog
from .synth import synth_messages, synth_queries

__all__ = ["HttpBenchConfig", "run_http_bench"]

HOST = "127.0.0.1"
TENANT = "bench-http"
KINDS = ("add", "search", "context")
CLIENT_KINDS = ("async", "threads")
KINDS_CPU = ("client", "server", "postgres")


@dataclass(frozen=True, slots=True)
class HttpBenchConfig:
    records: int = 10_000
    clients: int = 8
    requests: int = 150  # per client
    duration: float = 120.0  # seconds, a hard stop for the request phase
    budget: int = 2000
    top_k: int = 10
    seed: int = 7
    store: str | None = None  # None: a temporary SQLite file
    workers: int = 1  # server processes
    client: str = "async"  # "async" (one asyncio loop) or "threads" (a thread per client)
    rate: float = 0.0  # offered requests/s of all clients together; 0: closed loop
    rate_limit: float = 0.0  # the server's per-key rate limit (0: none)
    server_args: tuple[str, ...] = ()  # more `memstrata serve` options


def _user(cfg: HttpBenchConfig) -> str:
    return f"user-{cfg.records}-{cfg.seed}"


def _seed(url: str, cfg: HttpBenchConfig) -> int:
    """Seed the user's messages unless the store already holds them; returns how many
    records the user has afterwards."""
    from memstrata import Filters, Memory, Message, Role, Scope

    scope = Scope(TENANT, _user(cfg), session="seed")
    with Memory(url, embedder="hashing", background=False) as mem:
        have = mem.store.count(scope, Filters())
        if have < cfg.records:
            batch: list[Any] = []
            for m in itertools.islice(synth_messages(cfg.records, 1, cfg.seed), have, None):
                batch.append(
                    Message(role=Role(m.role), content=m.content, observed_at=m.observed_at)
                )
                if len(batch) == 1000:
                    mem.add_messages(scope, batch)
                    batch = []
            if batch:
                mem.add_messages(scope, batch)
        return mem.store.count(scope, Filters())  # the seed session's messages


@dataclass
class _Tally:
    """What the clients saw (shared by threads under ``lock``; one loop needs none)."""

    logs: dict[str, LatencyLog] = field(default_factory=lambda: {k: LatencyLog() for k in KINDS})
    errors: list[str] = field(default_factory=list)
    served_by: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, kind: str, elapsed: float, process: str, error: str | None) -> None:
        with self.lock:
            self.logs[kind].samples.append(elapsed)
            self.served_by[process] += 1
            if error is not None:
                self.errors.append(error)


def _plan(cfg: HttpBenchConfig, index: int) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """The requests of client ``index``: (kind, path under the user, JSON body)."""
    queries = synth_queries(max(10, cfg.requests), cfg.seed + index)
    for i in range(cfg.requests):
        kind = KINDS[i % 3]
        q = queries[i % len(queries)]
        if kind == "add":
            yield (
                kind,
                f"/sessions/client-{index}/messages",
                {
                    "role": "user",
                    "content": f"client {index}: {q}",
                },
            )
        elif kind == "search":
            yield kind, "/search", {"query": q, "top_k": cfg.top_k}
        else:
            yield (
                kind,
                "/context",
                {
                    "query": q,
                    "token_budget": cfg.budget,
                    "session": f"client-{index}",
                },
            )


def _slot(cfg: HttpBenchConfig, index: int, i: int, start: float) -> float | None:
    """When request ``i`` of client ``index`` is due (open loop), else None (closed loop)."""
    if cfg.rate <= 0:
        return None
    return start + (i * cfg.clients + index) / cfg.rate


def _thread_client(
    base: str, key: str, cfg: HttpBenchConfig, index: int, deadline: float, tally: _Tally
) -> None:
    import httpx

    user = f"{base}/v1/users/{_user(cfg)}"
    start = time.perf_counter()
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        for i, (kind, path, body) in enumerate(_plan(cfg, index)):
            if time.monotonic() > deadline:
                return
            due = _slot(cfg, index, i, start)
            if due is not None and due > time.perf_counter():
                time.sleep(due - time.perf_counter())
            t0 = due if due is not None else time.perf_counter()
            process, error = "", None
            try:
                r = http.post(user + path, json=body)
                process = r.headers.get("x-memstrata-process", "")
                if r.status_code >= 300:
                    error = f"{kind} {r.status_code} {r.text[:120]}"
            except httpx.HTTPError as exc:
                error = f"{kind} {type(exc).__name__}: {exc}"
            tally.record(kind, time.perf_counter() - t0, process, error)


async def _async_client(
    base: str, key: str, cfg: HttpBenchConfig, index: int, deadline: float, tally: _Tally
) -> None:
    import httpx

    user = f"{base}/v1/users/{_user(cfg)}"
    start = time.perf_counter()
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        for i, (kind, path, body) in enumerate(_plan(cfg, index)):
            if time.monotonic() > deadline:
                return
            due = _slot(cfg, index, i, start)
            if due is not None and due > time.perf_counter():
                await asyncio.sleep(due - time.perf_counter())
            t0 = due if due is not None else time.perf_counter()
            process, error = "", None
            try:
                r = await http.post(user + path, json=body)
                process = r.headers.get("x-memstrata-process", "")
                if r.status_code >= 300:
                    error = f"{kind} {r.status_code} {r.text[:120]}"
            except httpx.HTTPError as exc:
                error = f"{kind} {type(exc).__name__}: {exc!r}"
            tally.record(kind, time.perf_counter() - t0, process, error)


def _run_clients(
    base: str, key: str, cfg: HttpBenchConfig, deadline: float, first: int = 0
) -> _Tally:
    """Run the clients numbered ``first`` .. ``first + clients - 1`` to the end."""
    tally = _Tally()
    indices = range(first, first + cfg.clients)
    if cfg.client == "threads":
        threads = [
            threading.Thread(target=_thread_client, args=(base, key, cfg, i, deadline, tally))
            for i in indices
        ]
        for w in threads:
            w.start()
        for w in threads:
            w.join()
        return tally

    async def everyone() -> None:
        await asyncio.gather(*(_async_client(base, key, cfg, i, deadline, tally) for i in indices))

    asyncio.run(everyone())
    return tally


# --- CPU accounting (Linux /proc; empty elsewhere) ----------------------------------------
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_stats() -> Iterator[tuple[int, str, int, int, float]]:
    """(pid, command, parent, process group, CPU seconds) of every process we may read."""
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
                raw = fh.read()
        except OSError:
            continue
        name = raw[raw.find("(") + 1 : raw.rfind(")")]
        rest = raw[raw.rfind(")") + 2 :].split()
        yield pid, name, int(rest[1]), int(rest[2]), (int(rest[11]) + int(rest[12])) / _TICK


def _machine_busy() -> float | None:
    """CPU seconds the whole machine spent busy (every core) since boot."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = [int(x) for x in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields) - idle) / _TICK


def _postmaster(url: str) -> int | None:
    """The pid of the PostgreSQL server a ``?host=/socket/dir`` URL names, when that
    directory is its data directory (a local test server); None otherwise."""
    from urllib.parse import parse_qs, urlsplit

    for host in parse_qs(urlsplit(url).query).get("host", []):
        try:
            with open(os.path.join(host, "postmaster.pid"), encoding="ascii") as fh:
                return int(fh.readline())
        except (OSError, ValueError):
            continue
    return None


@dataclass(frozen=True, slots=True)
class _CpuSnapshot:
    machine: float | None
    client: float
    server: float
    postgres: float

    @classmethod
    def take(cls, server_group: int, postmaster: int | None) -> _CpuSnapshot:
        server = postgres = 0.0
        for pid, name, parent, group, cpu in _proc_stats():
            if group == server_group:
                server += cpu
            elif name == "postgres" and postmaster in (None, pid, parent):
                postgres += cpu
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return cls(_machine_busy(), usage.ru_utime + usage.ru_stime, server, postgres)


def _cpu_report(before: _CpuSnapshot, after: _CpuSnapshot, requests: int) -> dict[str, Any]:
    """CPU seconds spent during the request phase, in total and per request (ms).

    ``postgres`` is the store's PostgreSQL server when its URL names a local socket
    directory that is its data directory, else every process named postgres on the machine
    (0 for SQLite; a server process that exits during the run takes its CPU with it);
    ``other`` is the machine's busy time that none of the three explains."""
    spent = {
        "client": after.client - before.client,
        "server": after.server - before.server,
        "postgres": after.postgres - before.postgres,
    }
    if before.machine is not None and after.machine is not None:
        spent["machine"] = after.machine - before.machine
        spent["other"] = max(0.0, spent["machine"] - sum(spent[k] for k in KINDS_CPU))
    per = {k: round(v * 1000 / requests, 2) for k, v in spent.items()} if requests else {}
    return {"cpu_s": {k: round(v, 2) for k, v in spent.items()}, "cpu_ms_per_request": per}


# --- the server ---------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _start_server(url: str, cfg: HttpBenchConfig, log: Any) -> tuple[subprocess.Popen[bytes], str]:
    import httpx

    port = _free_port()
    cmd = [
        sys.executable, "-c", "from memstrata.cli.app import main; main()",
        "--db", url, "--embedder", "hashing", "serve", "--host", HOST, "--port", str(port),
        "--workers", str(cfg.workers), "--rate-limit", str(cfg.rate_limit), "--no-background",
        "--no-mcp", "--log-level", "warning", *cfg.server_args,
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)  # fmt: skip
    base = f"http://{HOST}:{port}"
    deadline = time.monotonic() + 300
    answered: set[str] = set()  # every process, not just the first one up, must be serving
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the bench server exited with {proc.returncode}")
        try:
            r = httpx.get(f"{base}/readyz", timeout=5)  # a new connection each time
            if r.status_code == 200:
                answered.add(r.headers.get("x-memstrata-process", ""))
                if len(answered) >= cfg.workers:
                    return proc, base
                continue
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    _stop(proc)
    raise RuntimeError(f"the bench server's {cfg.workers} processes were not ready in 300 s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run_http_bench(cfg: HttpBenchConfig) -> dict[str, Any]:
    from memstrata.errors import ValidationError
    from memstrata.server.keys import open_key_store

    if cfg.client not in CLIENT_KINDS:
        raise ValidationError(f"client must be one of {', '.join(CLIENT_KINDS)}")
    with tempfile.TemporaryDirectory(prefix="memstrata-http-") as tmp:
        url = cfg.store or f"sqlite:///{tmp}/http.db"
        t0 = time.perf_counter()
        seeded = _seed(url, cfg)
        seed_s = time.perf_counter() - t0
        keys = open_key_store(url)
        try:
            key = keys.create(TENANT, name="bench http").secret
        finally:
            keys.close()
        with open(f"{tmp}/serve.log", "w+b") as log:
            proc, base = _start_server(url, cfg, log)
            try:
                # warm-up: every process loads its caches (2 rounds per process, closed loop)
                warm = replace(cfg, requests=6, clients=max(1, cfg.workers) * 2, rate=0.0)
                _run_clients(base, key, warm, time.monotonic() + 120, first=900)
                load_before = _load()
                # -1: no PostgreSQL to count (SQLite); None: every postgres process
                pg_group = _postmaster(url) if url.startswith("postgres") else -1
                cpu_before = _CpuSnapshot.take(os.getpgid(proc.pid), pg_group)
                t0 = time.perf_counter()
                tally = _run_clients(base, key, cfg, time.monotonic() + cfg.duration)
                wall = time.perf_counter() - t0
                cpu_after = _CpuSnapshot.take(os.getpgid(proc.pid), pg_group)
                load_after = _load()
            finally:
                _stop(proc)
                log.seek(0)
                server_log = log.read().decode("utf-8", "replace")
    total = sum(len(lg.samples) for lg in tally.logs.values())
    return {
        "config": {
            "records_per_user": cfg.records,
            "clients": cfg.clients,
            "client": cfg.client,
            "requests_per_client": cfg.requests,
            "offered_rate": cfg.rate or "closed loop",
            "duration_cap_s": cfg.duration,
            "budget": cfg.budget,
            "top_k": cfg.top_k,
            "store": url.split("://")[0],
            "embedder": "hashing",
            "processes": cfg.workers,
            "rate_limit": cfg.rate_limit,
            "server_args": list(cfg.server_args),
            "background_jobs": False,
        },
        "user_records": seeded,
        "seed_s": round(seed_s, 2),
        "wall_s": round(wall, 2),
        "requests": total,
        "requests_per_s": round(total / wall, 1) if wall else None,
        "errors": len(tally.errors),
        "first_errors": tally.errors[:5],
        # what the server logged at WARNING and above (tracebacks of 5xx answers)
        "server_log_tail": server_log[-6000:] if tally.errors else "",
        "processes_answering": len([p for p in tally.served_by if p]),
        "requests_per_process": sorted((n for p, n in tally.served_by.items() if p), reverse=True),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "cpus": os.cpu_count(),
        **_cpu_report(cpu_before, cpu_after, total),
        "latency_ms": {k: lg.summary_ms() for k, lg in tally.logs.items()},
    }
