"""Fixtures for the AsyncMemory tests: store URLs in pairs, deterministic ids, a slow embedder."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from memstrata.embedder.base import Matrix
from memstrata.embedder.hashing import HashingEmbedder


@pytest.fixture(params=["sqlite", "postgresql"])
def url_pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Two empty stores of one kind: one for ``Memory``, one for ``AsyncMemory``."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'sync.db'}", f"sqlite:///{tmp_path / 'async.db'}"
        return
    server = request.getfixturevalue("pg_server")
    schemas = ["t_" + uuid.uuid4().hex[:16] for _ in range(2)]
    yield server.url(schemas[0]), server.url(schemas[1])
    for schema in schemas:
        server.drop(schema)


@pytest.fixture
def deterministic_ids(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Record and job ids from a counter (``uuid4`` is memstrata's only source of ids), so
    two runs of one script produce identical records; call the result to restart the count."""
    import memstrata.jobs

    counter = iter(())  # replaced by reset()

    def reset() -> None:
        nonlocal counter
        counter = iter(range(1, 10**9))

    def fake_uuid4() -> uuid.UUID:
        return uuid.UUID(int=next(counter))

    reset()
    monkeypatch.setattr(uuid, "uuid4", fake_uuid4)
    monkeypatch.setattr(memstrata.jobs, "uuid4", fake_uuid4)
    return reset


class SlowEmbedder:
    """The hashing embedder behind a delay, like a remote provider; ``started`` is set when
    a call begins and ``release`` (if given) must be set before it returns."""

    def __init__(self, delay: float, release: threading.Event | None = None) -> None:
        self._inner = HashingEmbedder()
        self.delay = delay
        self.release = release
        self.started = threading.Event()
        self.calls = 0

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dims(self) -> int:
        return self._inner.dims

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        self.calls += 1
        self.started.set()
        if self.release is not None:
            assert self.release.wait(10), "the test never released the embedder"
        time.sleep(self.delay)
        return self._inner.embed_batch(texts, query=query)


SHARED_POOLS = ("memstrata-search", "memstrata-context")  # process-wide, shared by every Memory


def threads() -> set[threading.Thread]:
    """Live threads, without the library's process-wide pools (search/hybrid.py,
    context/builder.py), which outlive any one memory by design."""
    return {t for t in threading.enumerate() if not t.name.startswith(SHARED_POOLS)}
