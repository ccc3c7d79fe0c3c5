"""One hammering process of several threads for tests/quota34: ``python hammer_threads.py
CONFIG_JSON``. Says it is ready (a file), waits for the go file, then every thread calls as
fast as it can for ``seconds`` and the process prints one JSON line: what was admitted.

``mode``: ``rate`` (a :class:`SharedRateLimiter` on Redis, or on the durable store's
counters when ``redis`` is absent or dead) or ``take`` (the quota counters of a
``buffer=redis://`` store: ``take_counters`` of one unit under ``limit``, half of the
admitted ones given back with ``add_counters`` as a failed write does)."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any


def _wait_for_go(cfg: dict[str, Any]) -> None:
    Path(cfg["ready"]).touch()
    go = Path(cfg["go"])
    deadline = time.monotonic() + 120
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit("no go signal")
        time.sleep(0.002)


def _threads(cfg: dict[str, Any], call: Any) -> list[Any]:
    out: list[Any] = []
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(cfg["threads"])

    def run() -> None:
        mine: list[Any] = []
        start.wait()
        end = time.time() + cfg["seconds"]
        while time.time() < end:
            try:
                got = call()
            except Exception as exc:  # reported: the test fails on it
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}")
                continue
            if got is not None:
                mine.append(got)
        with lock:
            out.extend(mine)

    threads = [threading.Thread(target=run) for _ in range(cfg["threads"])]
    _wait_for_go(cfg)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        print(json.dumps({"errors": errors[:5]}), flush=True)
        raise SystemExit(2)
    return out


def _rate(cfg: dict[str, Any]) -> dict[str, Any]:
    from memstrata.ratelimit import SharedRateLimiter
    from memstrata.store import open_store
    from memstrata.store.quota_counters import QuotaCounters
    from memstrata.store.redis_hot import open_redis

    client = open_redis(cfg["redis"]) if cfg.get("redis") else None
    store = open_store(cfg["url"]) if cfg.get("url") else None
    fallback = store if isinstance(store, QuotaCounters) else None
    limiter = SharedRateLimiter(
        cfg["rate"],
        cfg["burst"],
        client=client,
        fallback=fallback,
        prefix=cfg.get("prefix", "memstrata"),
        batch=cfg.get("batch", 1),
    )

    def call() -> float | None:
        return time.time() if limiter.acquire("key-1") == 0.0 else None

    try:
        return {"allowed": _threads(cfg, call)}
    finally:
        if store is not None:
            store.close()


def _take(cfg: dict[str, Any]) -> dict[str, Any]:
    from memstrata import Memory
    from memstrata.store.counter_types import Take

    mem = Memory(cfg["url"], embedder="hashing", background=False, buffer=cfg["buffer"])
    store: Any = mem.store
    key, limit = cfg["key"], cfg["limit"]
    given_back = [0]
    lock = threading.Lock()

    def call() -> int | None:
        refused = store.take_counters([Take(key, 1, limit, 86_400)])
        if refused is not None:
            return None
        with lock:
            give = given_back[0] % 2 == 0 and given_back[0] < cfg["give_back"]
            given_back[0] += 1
        if give:  # a failed write gives its take back
            store.add_counters([Take(key, -1, None, 86_400)])
            return 0
        return 1

    try:
        kept = _threads(cfg, call)
    finally:
        mem.close()
    return {"kept": sum(kept), "given_back": kept.count(0)}


def main() -> None:
    cfg = json.loads(sys.argv[1])
    out = _rate(cfg) if cfg["mode"] == "rate" else _take(cfg)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
