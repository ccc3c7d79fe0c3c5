"""``memstrata bench http``: a bounded load test of the HTTP API on 127.0.0.1 only.

The store (``store``: a fresh temporary SQLite file by default, or a ``postgresql://`` URL)
is seeded with ``records`` messages for one user (hashing embedder, through the library in
batches; a PostgreSQL store that already holds them for that user is reused). Then
``memstrata serve --workers N`` runs as a subprocess (so the clients never share a
interpreter lock with the server) with background jobs off (as when a separate
``memstrata worker`` runs them) and no rate limit, and ``clients`` threads each send
``requests`` requests, or stop at ``duration`` seconds, in a fixed cycle: add a message,
search, build a context. Reported: p50/p95 per kind, requests/s, errors (any non-2xx or
transport failure), how many server processes answered, and the machine's load average
before and after. Nothing leaves the loopback interface.
"""

from __future__ import annotations

import itertools
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from .measure import LatencyLog
from .synth import synth_messages, synth_queries

__all__ = ["HttpBenchConfig", "run_http_bench"]

HOST = "127.0.0.1"
TENANT = "bench-http"


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


def _client(
    base: str,
    key: str,
    cfg: HttpBenchConfig,
    index: int,
    deadline: float,
    logs: dict[str, LatencyLog],
    errors: list[str],
    served_by: Counter[str],
    lock: threading.Lock,
) -> None:
    import httpx

    queries = synth_queries(max(10, cfg.requests), cfg.seed + index)
    headers = {"Authorization": f"Bearer {key}"}
    user = f"{base}/v1/users/{_user(cfg)}"
    with httpx.Client(headers=headers, timeout=60) as http:
        for i in range(cfg.requests):
            if time.monotonic() > deadline:
                return
            kind = ("add", "search", "context")[i % 3]
            q = queries[i % len(queries)]
            t0 = time.perf_counter()
            process = ""
            try:
                if kind == "add":
                    r = http.post(
                        f"{user}/sessions/client-{index}/messages",
                        json={"role": "user", "content": f"client {index}: {q}"},
                    )
                elif kind == "search":
                    r = http.post(f"{user}/search", json={"query": q, "top_k": cfg.top_k})
                else:
                    r = http.post(
                        f"{user}/context",
                        json={"query": q, "token_budget": cfg.budget, "session": f"client-{index}"},
                    )
                ok = r.status_code < 300
                detail = f"{kind} {r.status_code} {r.text[:120]}"
                process = r.headers.get("x-memstrata-process", "")
            except httpx.HTTPError as exc:
                ok, detail = False, f"{kind} {type(exc).__name__}: {exc}"
            elapsed = time.perf_counter() - t0
            with lock:
                logs[kind].samples.append(elapsed)
                served_by[process] += 1
                if not ok:
                    errors.append(detail)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _start_server(url: str, workers: int, log: Any) -> tuple[subprocess.Popen[bytes], str]:
    import httpx

    port = _free_port()
    cmd = [
        sys.executable, "-c", "from memstrata.cli.app import main; main()",
        "--db", url, "--embedder", "hashing", "serve", "--host", HOST, "--port", str(port),
        "--workers", str(workers), "--rate-limit", "0", "--no-background", "--no-mcp",
        "--log-level", "warning",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)  # fmt: skip
    base = f"http://{HOST}:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the bench server exited with {proc.returncode}")
        try:
            if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    _stop(proc)
    raise RuntimeError("the bench server did not become ready in 300 s")


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
    from memstrata.server.keys import open_key_store

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
            proc, base = _start_server(url, cfg.workers, log)
            try:
                logs = {k: LatencyLog() for k in ("add", "search", "context")}
                errors: list[str] = []
                served_by: Counter[str] = Counter()
                lock = threading.Lock()
                # warm-up: every process loads its caches (2 rounds per process and client)
                warm = HttpBenchConfig(requests=6, seed=cfg.seed, records=cfg.records)
                for i in range(max(1, cfg.workers) * 2):
                    _client(base, key, warm, 90 + i, time.monotonic() + 120,
                            {k: LatencyLog() for k in logs}, [], Counter(), lock)  # fmt: skip
                load_before = _load()
                deadline = time.monotonic() + cfg.duration
                t0 = time.perf_counter()
                threads = [
                    threading.Thread(
                        target=_client,
                        args=(base, key, cfg, i, deadline, logs, errors, served_by, lock),
                    )
                    for i in range(cfg.clients)
                ]
                for w in threads:
                    w.start()
                for w in threads:
                    w.join()
                wall = time.perf_counter() - t0
                load_after = _load()
            finally:
                _stop(proc)
                log.seek(0)
                server_log = log.read().decode("utf-8", "replace")
    total = sum(len(log.samples) for log in logs.values())
    return {
        "config": {
            "records_per_user": cfg.records,
            "clients": cfg.clients,
            "requests_per_client": cfg.requests,
            "duration_cap_s": cfg.duration,
            "budget": cfg.budget,
            "top_k": cfg.top_k,
            "store": url.split("://")[0],
            "embedder": "hashing",
            "processes": cfg.workers,
            "background_jobs": False,
        },
        "user_records": seeded,
        "seed_s": round(seed_s, 2),
        "wall_s": round(wall, 2),
        "requests": total,
        "requests_per_s": round(total / wall, 1) if wall else None,
        "errors": len(errors),
        "first_errors": errors[:5],
        # what the server logged at WARNING and above (tracebacks of 5xx answers)
        "server_log_tail": server_log[-6000:] if errors else "",
        "processes_answering": len([p for p in served_by if p]),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "cpus": os.cpu_count(),
        "latency_ms": {k: log.summary_ms() for k, log in logs.items()},
    }
