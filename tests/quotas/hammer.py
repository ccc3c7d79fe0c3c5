"""One hammering process for tests/quotas: ``python hammer.py CONFIG_JSON``.

Opens a ``Memory`` (or a ``SharedRateLimiter``), says it is ready (a file), waits for the go
file, then writes (or acquires) as fast as it can and prints one JSON line of what happened:
the ids it was acknowledged, how many calls were refused, anything unexpected, and how many
WARNING lines the Redis tier logged.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Any


class _Count(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.n = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.n += 1


def _wait_for_go(cfg: dict[str, Any]) -> None:
    Path(cfg["ready"]).touch()
    go = Path(cfg["go"])
    deadline = time.monotonic() + 120
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit("no go signal")
        time.sleep(0.005)


def _writes(cfg: dict[str, Any], warnings: _Count) -> dict[str, Any]:
    from memstrata import Memory, Scope
    from memstrata.errors import QuotaExceededError
    from memstrata.quotas import Quota, Quotas

    quotas = Quotas(per_user=Quota(**cfg["per_user"]), per_tenant=Quota(**cfg["per_tenant"]))
    scope = Scope(cfg["tenant"], cfg["user"], session="s1")
    ids: list[str] = []
    refused = 0
    unexpected: list[str] = []
    with Memory(
        cfg["url"], embedder="hashing", background=False, quotas=quotas, buffer=cfg.get("buffer")
    ) as mem:
        _wait_for_go(cfg)
        for i in range(cfg["calls"]):
            try:
                if i % 2:
                    ids.append(mem.add_message(scope, "user", f"w{cfg['worker']} m{i}").id)
                else:
                    ids.append(mem.add(scope, f"w{cfg['worker']} note {i}", dedup=False).id)
            except QuotaExceededError as exc:
                refused += 1
                if "quota" not in str(exc):
                    unexpected.append(str(exc))
            except Exception as exc:  # reported, and the test fails on it
                unexpected.append(f"{type(exc).__name__}: {exc}")
            time.sleep(cfg.get("pause", 0.0))
    return {"ids": ids, "refused": refused, "unexpected": unexpected, "warnings": warnings.n}


def _rate(cfg: dict[str, Any], warnings: _Count) -> dict[str, Any]:
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
    )
    _wait_for_go(cfg)
    allowed: list[float] = []
    denied = 0
    end = time.time() + cfg["seconds"]
    while time.time() < end:
        if limiter.acquire("key-1") == 0.0:
            allowed.append(time.time())
        else:
            denied += 1
        time.sleep(cfg.get("pause", 0.002))
    if store is not None:
        store.close()
    return {"allowed": allowed, "denied": denied, "warnings": warnings.n, "unexpected": []}


def main() -> None:
    cfg = json.loads(sys.argv[1])
    warnings = _Count()
    logging.getLogger("memstrata").addHandler(warnings)
    out = _rate(cfg, warnings) if cfg.get("mode") == "rate" else _writes(cfg, warnings)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
