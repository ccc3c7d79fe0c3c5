"""Fixtures for the robustness suites: a Memory on every store, and a snapshot of everything
a user has (records, history, jobs) to prove that a refused call wrote nothing."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.codec import record_to_dict
from memstrata.filters import Filters

STORES = ("sqlite", "memory")


def open_memory(kind: str, directory: Path, clock: FixedClock, **kw: Any) -> Memory:
    url = f"sqlite:///{directory / 'robust.db'}" if kind == "sqlite" else "memory://"
    return Memory(url, embedder=kw.pop("embedder", "hashing"), clock=clock, background=False, **kw)


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(datetime(2026, 1, 1, 12, 0, tzinfo=UTC))


@pytest.fixture(params=STORES)
def mem(request: pytest.FixtureRequest, tmp_path: Path, clock: FixedClock) -> Iterator[Memory]:
    m = open_memory(request.param, tmp_path, clock)
    yield m
    m.close()


@pytest.fixture
def alice() -> Scope:
    return Scope("acme", "alice", session="s1")


def snapshot(mem: Memory, scope: Scope, *, history: bool = True) -> tuple[Any, ...]:
    """Everything stored for the user of ``scope``: every record (with its history unless
    ``history=False``; any new version shows in the current row too), and the user's jobs."""
    user = scope.user_scope
    everything = Filters(include_deleted=True, include_superseded=True)
    records = mem.store.list(user, everything, limit=100_000, newest_first=False)
    rows = [
        (
            record_to_dict(r),
            [record_to_dict(v) for v in mem.store.history(user, r.id)] if history else None,
        )
        for r in records
    ]
    jobs = [
        (j.id, j.kind, j.status.value, j.attempts)
        for j in mem.store.list_jobs(scope.tenant, scope.user)
    ]
    return (repr(rows), repr(jobs), mem.store.count(user, everything))
