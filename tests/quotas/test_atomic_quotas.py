"""Quotas are atomic across processes (issue 10 §5, issue 8 §3), on real servers.

Several processes (``hammer.py``) write for one user at once; exactly the quota is admitted,
every excess call gets ``QuotaExceededError`` and the store holds exactly what was
acknowledged. With ``buffer=redis://...`` the same holds, and a Redis killed mid-run only
moves the counting to the durable store (one warning per process, nothing lost, nothing
over-admitted). A rate limit window is shared by processes through Redis.
"""

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

import servers
from memstrata import Memory, Scope
from memstrata.filters import Filters
from memstrata.quotas import day_key
from memstrata.store import open_store
from memstrata.store.quota_counters import QuotaCounters

HAMMER = Path(__file__).with_name("hammer.py")
SRC = Path(__file__).resolve().parents[2] / "src"
WORKERS = 4


def _spawn(
    cfgs: list[dict[str, Any]], tmp: Path, during: Callable[[], None] | None = None
) -> list[dict[str, Any]]:
    """Start one process per config, release them together, return their JSON reports."""
    go = tmp / "go"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    procs = []
    for i, cfg in enumerate(cfgs):
        cfg = {**cfg, "worker": i, "ready": str(tmp / f"ready{i}"), "go": str(go)}
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
        dead = [p for p in procs if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            for p in procs:
                p.kill()
            errs = [p.communicate()[1].decode()[-2000:] for p in procs]
            pytest.fail(f"a hammer process did not get ready: {errs}")
        time.sleep(0.02)
    go.touch()
    if during is not None:
        during()
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()[-3000:]
        reports.append(json.loads(out.decode().strip().splitlines()[-1]))
    return reports


def _url(kind: str, tmp: Path, request: pytest.FixtureRequest) -> tuple[str, str | None]:
    durable = f"sqlite:///{tmp / 'q.db'}" if kind == "sqlite" else request.getfixturevalue("pg_url")
    buffer = request.getfixturevalue("redis_buffer_url") if kind.endswith("+redis") else None
    open_store(durable).close()  # created (migrated) once, before the processes race
    return durable, buffer


def _stored(url: str, scope: Scope) -> set[str]:
    with Memory(url, embedder="hashing", background=False) as mem:
        return {
            r.id
            for r in mem.list(scope.user_scope, filters=Filters(include_deleted=True), limit=10_000)
        }


def _used(url: str, scope: Scope) -> int:
    from datetime import UTC, datetime

    store = open_store(url)
    try:
        assert isinstance(store, QuotaCounters)
        key = day_key("emb", scope.tenant, scope.user, datetime.now(UTC))
        return store.counter_values([key])[key]
    finally:
        store.close()


@pytest.mark.parametrize("quota", ["max_records", "embeddings_per_day"])
@pytest.mark.parametrize("kind", ["sqlite", "postgresql", "postgresql+redis"])
def test_concurrent_writers_get_exactly_the_quota(
    kind: str, quota: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url, buffer = _url(kind, tmp_path, request)
    limit, calls = 37, 20  # 4 x 20 = 80 attempts for 37 places
    scope = Scope("acme", "hammered", session="s1")
    cfg = {
        "url": url,
        "buffer": buffer,
        "tenant": scope.tenant,
        "user": scope.user,
        "calls": calls,
        "per_user": {quota: limit},
        "per_tenant": {},
    }
    reports = _spawn([cfg] * WORKERS, tmp_path)
    assert [r["unexpected"] for r in reports] == [[]] * WORKERS
    acknowledged = [i for r in reports for i in r["ids"]]
    assert len(acknowledged) == limit  # 0 over-admitted, 0 refused while there was room
    assert sum(r["refused"] for r in reports) == WORKERS * calls - limit
    assert _stored(url, scope) == set(acknowledged)  # every acknowledged write is stored
    # The processes really raced: more than one got places. (Not "every one": on a saturated
    # machine a process scheduled late can find the quota already taken.)
    assert sum(1 for r in reports if r["ids"]) >= 2
    if quota == "embeddings_per_day":
        assert _used(url, scope) == limit


def test_redis_killed_mid_run_moves_counting_to_the_durable_store(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    try:
        own = servers.redis_server_process()  # killed by this test
    except RuntimeError as exc:
        servers.unavailable("redis-server", str(exc))
        raise
    url = request.getfixturevalue("pg_url")
    open_store(url).close()
    scope = Scope("acme", "outage", session="s1")
    limit, calls = 45, 24
    cfg = {
        "url": url,
        "buffer": own.url,
        "tenant": scope.tenant,
        "user": scope.user,
        "calls": calls,
        "pause": 0.01,
        "per_user": {"embeddings_per_day": limit},
        "per_tenant": {},
    }
    killed_at: list[int] = []

    def kill_redis_after_some_writes() -> None:
        deadline = time.monotonic() + 60
        while _used(url, scope) < 12 and time.monotonic() < deadline:
            time.sleep(0.01)
        own.kill()
        killed_at.append(_used(url, scope))

    try:
        reports = _spawn([cfg] * WORKERS, tmp_path, kill_redis_after_some_writes)
    finally:
        own.kill()
    assert killed_at and 12 <= killed_at[0] < limit  # Redis died mid-run, quota not yet full
    assert [r["unexpected"] for r in reports] == [[]] * WORKERS
    acknowledged = [i for r in reports for i in r["ids"]]
    assert len(acknowledged) == limit
    assert sum(r["refused"] for r in reports) == WORKERS * calls - limit
    assert _stored(url, scope) == set(acknowledged)
    assert _used(url, scope) == limit
    assert all(r["warnings"] == 1 for r in reports), [r["warnings"] for r in reports]


@pytest.mark.parametrize("backing", ["redis", "durable"])
def test_a_rate_limit_window_is_shared_by_processes(
    backing: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """rate 10/s, burst 5, 4 processes for 1.5 s: together they get what one bucket allows
    (a per-process limiter would allow four times as much)."""
    rate, burst, seconds = 10, 5, 1.5
    if backing == "redis":
        shared = request.getfixturevalue("shared_redis")
        cfg: dict[str, Any] = {"redis": shared.url, "prefix": shared.prefix()}
        ceiling = burst + rate * (seconds + 0.1)  # one bucket on Redis's clock; start skew
    else:  # no Redis: fixed windows in a shared SQLite file
        cfg = {"url": f"sqlite:///{tmp_path / 'r.db'}"}
        open_store(cfg["url"]).close()
        ceiling = 2 * burst + rate * (seconds + 0.1)  # two bursts across a window boundary
    cfg.update(mode="rate", rate=rate, burst=burst, seconds=seconds)
    reports = _spawn([cfg] * WORKERS, tmp_path)
    allowed = sorted(t for r in reports for t in r["allowed"])
    assert sum(r["denied"] for r in reports) > 0
    assert len(allowed) <= ceiling
    assert len(allowed) >= rate * seconds * 0.5  # it is a rate limit, not a wall
    assert len({i for i, r in enumerate(reports) if r["allowed"]}) >= 2
