"""``memstrata bench http``: a bounded load test of the HTTP API on 127.0.0.1 only.

A server (the real app under uvicorn, in this process) serves a fresh SQLite store seeded with
``records`` messages for one user (hashing embedder, through the library in batches). Then
``clients`` threads each send ``requests`` requests, or stop at ``duration`` seconds, in a
fixed cycle: add a message, search, build a context. Reported: p50/p95 per kind, requests/s,
and errors (any non-2xx or transport failure). Nothing leaves the loopback interface.
"""

from __future__ import annotations

import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

from .measure import LatencyLog
from .synth import synth_messages, synth_queries

__all__ = ["HttpBenchConfig", "run_http_bench"]

HOST = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class HttpBenchConfig:
    records: int = 10_000
    clients: int = 8
    requests: int = 150  # per client
    duration: float = 120.0  # seconds, a hard stop for the request phase
    budget: int = 2000
    top_k: int = 10
    seed: int = 7


def _seed(mem: Any, records: int, seed: int) -> None:
    from memstrata import Message, Role, Scope

    scope = Scope("bench", "user-0", session="seed")
    batch: list[Any] = []
    for m in synth_messages(records, 1, seed):
        batch.append(Message(role=Role(m.role), content=m.content, observed_at=m.observed_at))
        if len(batch) == 1000:
            mem.add_messages(scope, batch)
            batch = []
    if batch:
        mem.add_messages(scope, batch)


def _client(
    base: str,
    key: str,
    cfg: HttpBenchConfig,
    index: int,
    deadline: float,
    logs: dict[str, LatencyLog],
    errors: list[str],
    lock: threading.Lock,
) -> None:
    import httpx

    queries = synth_queries(max(10, cfg.requests), cfg.seed + index)
    headers = {"Authorization": f"Bearer {key}"}
    user = f"{base}/v1/users/user-0"
    with httpx.Client(headers=headers, timeout=60) as http:
        for i in range(cfg.requests):
            if time.monotonic() > deadline:
                return
            kind = ("add", "search", "context")[i % 3]
            q = queries[i % len(queries)]
            t0 = time.perf_counter()
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
            except httpx.HTTPError as exc:
                ok, detail = False, f"{kind} {type(exc).__name__}: {exc}"
            elapsed = time.perf_counter() - t0
            with lock:
                logs[kind].samples.append(elapsed)
                if not ok:
                    errors.append(detail)


def run_http_bench(cfg: HttpBenchConfig) -> dict[str, Any]:
    import uvicorn

    from memstrata import Memory
    from memstrata.server import create_app
    from memstrata.server.app import Limits
    from memstrata.server.keys import SQLiteKeyStore

    with tempfile.TemporaryDirectory(prefix="memstrata-http-") as tmp:
        db = f"{tmp}/http.db"
        mem = Memory(f"sqlite:///{db}", embedder="hashing", background=False)
        keys = SQLiteKeyStore(db)
        try:
            t0 = time.perf_counter()
            _seed(mem, cfg.records, cfg.seed)
            seed_s = time.perf_counter() - t0
            key = keys.create("bench").secret
            app = create_app(mem, keys, limits=Limits(rate=0))
            server = uvicorn.Server(
                uvicorn.Config(app, host=HOST, port=0, log_config=None, access_log=False)
            )
            thread = threading.Thread(target=server.run, daemon=True)
            thread.start()
            while not server.started:
                if not thread.is_alive():
                    raise RuntimeError("the bench server did not start")
                time.sleep(0.05)
            port = server.servers[0].sockets[0].getsockname()[1]
            base = f"http://{HOST}:{port}"
            logs = {k: LatencyLog() for k in ("add", "search", "context")}
            errors: list[str] = []
            lock = threading.Lock()
            # warm-up: one search and one context (vector cache, lazy loads)
            _client(
                base,
                key,
                HttpBenchConfig(requests=3, seed=cfg.seed),
                99,
                time.monotonic() + 60,
                {k: LatencyLog() for k in logs},
                [],
                lock,
            )
            deadline = time.monotonic() + cfg.duration
            t0 = time.perf_counter()
            workers = [
                threading.Thread(
                    target=_client, args=(base, key, cfg, i, deadline, logs, errors, lock)
                )
                for i in range(cfg.clients)
            ]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            wall = time.perf_counter() - t0
            server.should_exit = True
            thread.join(timeout=30)
        finally:
            keys.close()
            mem.close()
    total = sum(len(log.samples) for log in logs.values())
    return {
        "config": {
            "records_per_user": cfg.records,
            "clients": cfg.clients,
            "requests_per_client": cfg.requests,
            "duration_cap_s": cfg.duration,
            "budget": cfg.budget,
            "top_k": cfg.top_k,
            "store": "sqlite",
            "embedder": "hashing",
            "processes": 1,
        },
        "seed_s": round(seed_s, 2),
        "wall_s": round(wall, 2),
        "requests": total,
        "requests_per_s": round(total / wall, 1) if wall else None,
        "errors": len(errors),
        "first_errors": errors[:5],
        "latency_ms": {k: log.summary_ms() for k, log in logs.items()},
    }
