"""Fixtures for the store suites: every backend, and a small record builder."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

import servers
from memstrata.records import AccessControl, Content, MemoryRecord, RecordType, Visibility
from memstrata.search.tokenize import tokenize
from memstrata.store import RecordWrite, Store, open_store
from memstrata.store.redis_hot import RedisHotStore, open_redis

DIMS = 16
T0 = datetime(2024, 1, 1, tzinfo=UTC)
STORE_KINDS = (
    "sqlite-file",
    "sqlite-memory",
    "memory",
    "postgresql",
    "postgresql+redis",
    "sqlite+redis",
)
_BEHIND_REDIS = {"postgresql+redis": "postgresql", "sqlite+redis": "sqlite-file"}


def make_store(kind: str, directory: Path) -> Store:
    """A fresh store of ``kind``; ``<durable>+redis`` is that store behind the Redis hot
    tier (``buffer=``) on a key prefix of its own, deleted again by ``close``."""
    if kind in _BEHIND_REDIS:
        return _with_redis(make_store(_BEHIND_REDIS[kind], directory))
    if kind == "postgresql":
        try:
            server = servers.postgres()
        except RuntimeError as exc:
            servers.unavailable("PostgreSQL", str(exc))
            raise
        return open_store(server.url())
    if kind == "sqlite-file":
        return open_store(f"sqlite:///{directory / 'mem.db'}")
    if kind == "sqlite-memory":
        return open_store("sqlite://:memory:")
    return open_store("memory://")


def _with_redis(durable: Store) -> Store:
    try:
        shared = servers.redis()
    except RuntimeError as exc:
        durable.close()
        servers.unavailable("Redis", str(exc))
        raise
    prefix = shared.prefix()
    try:
        client = open_redis(shared.url)
    except BaseException:
        durable.close()
        raise
    return cast(Store, _DroppingHotStore(durable, client, prefix=prefix, shared=shared))


class _DroppingHotStore(RedisHotStore):
    """The hot tier of one test: its Redis keys are deleted when it closes."""

    def __init__(
        self, durable: Store, client: Any, *, prefix: str, shared: servers.SharedRedis
    ) -> None:
        super().__init__(durable, client, prefix=prefix)
        self._shared, self._test_prefix = shared, prefix

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._shared.drop(self._test_prefix)


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s = make_store(request.param, tmp_path)
    yield s
    s.close()
    if request.param.startswith("postgresql"):
        servers.postgres().drop(s.options.schema)  # type: ignore[attr-defined]


def unit(rng: np.random.Generator, dims: int = DIMS) -> np.ndarray[Any, np.dtype[np.float32]]:
    v = rng.standard_normal(dims).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


@dataclass
class Maker:
    """Builds records with fixed-seed unit vectors and terms from ``tokenize``."""

    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(7))
    n: int = 0

    def record(
        self, text: str = "", *, tenant: str = "t1", user: str = "u1", **kw: Any
    ) -> MemoryRecord:
        self.n += 1
        text = text or f"note number {self.n}"
        visibility = kw.pop("visibility", Visibility.PRIVATE)
        when = kw.pop("observed_at", T0 + timedelta(minutes=self.n))
        return MemoryRecord(
            id=kw.pop("id", f"r{self.n:04d}"),
            tenant=tenant,
            user=user,
            type=kw.pop("type", RecordType.NOTE),
            content=Content(text),
            created_at=when,
            updated_at=when,
            observed_at=when,
            content_hash=hashlib.sha256(text.encode()).hexdigest(),
            embedding_model="test",
            embedding_dims=DIMS,
            access=AccessControl(visibility),
            **kw,
        )

    def write(
        self, record: MemoryRecord | None = None, *, vector: bool = True, **kw: Any
    ) -> RecordWrite:
        r = record if record is not None else self.record(**kw)
        return RecordWrite(r, unit(self.rng) if vector else None, tuple(tokenize(r.text)))


@pytest.fixture
def maker() -> Maker:
    return Maker()


Factory = Callable[[], Store]
