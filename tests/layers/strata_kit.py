"""Helpers shared by the short-term / mid-term / summaries / key / pipeline tests."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from memstrata.clock import FixedClock
from memstrata.embedder.base import Matrix, check_vectors
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.layers.base import LayerConfig, LayerContext
from memstrata.llm.base import LLM
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.records import MemoryRecord, Message, Role
from memstrata.scope import Scope
from memstrata.store import open_store
from memstrata.writes import message_record

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ALICE = Scope("acme", "alice", session="s1")


class ChosenEmbedder:
    """A real :class:`Embedder` returning the vector a test chose for each text (texts it
    was not told about get the hashing embedder's vector, padded to ``dims``)."""

    def __init__(self, vectors: Mapping[str, Sequence[float]], dims: int = 8) -> None:
        self._vectors = dict(vectors)
        self._dims = dims
        self._fallback = HashingEmbedder(dims)

    @property
    def model_id(self) -> str:
        return f"chosen-{self._dims}"

    @property
    def dims(self) -> int:
        return self._dims

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        rows = [
            np.asarray(self._vectors[t], dtype=np.float32)
            if t in self._vectors
            else self._fallback.embed_batch([t])[0]
            for t in texts
        ]
        raw = np.stack(rows) if rows else np.zeros((0, self._dims), dtype=np.float32)
        return check_vectors(raw, len(rows), self._dims, self.model_id)


@contextmanager
def layer_ctx(
    tmp_path: Path,
    kind: str = "sqlite",
    *,
    llm: LLM | None = None,
    embedder: object | None = None,
    config: LayerConfig | None = None,
) -> Iterator[LayerContext]:
    url = f"sqlite:///{tmp_path / 'layers.db'}" if kind == "sqlite" else "memory://"
    store = open_store(url)
    try:
        yield LayerContext(
            store,
            embedder or HashingEmbedder(),
            llm or HeuristicLLM(),  # type: ignore[arg-type]
            FixedClock(T0),
            config or LayerConfig(),
        )
    finally:
        store.close()


def add_turns(
    ctx: LayerContext,
    scope: Scope,
    turns: Sequence[tuple[str, str]],
    *,
    start: datetime | None = None,
    step_minutes: float = 1.0,
) -> list[MemoryRecord]:
    """Store turns as message records, one ``step_minutes`` apart after ``start``."""
    t = start or T0
    records = []
    for i, (role, text) in enumerate(turns):
        when = t + timedelta(minutes=step_minutes * i)
        records.append(
            message_record(
                scope,
                Message(role=Role(role), content=text, observed_at=when),
                now=when,
                model_id=ctx.embedder.model_id,
                dims=ctx.embedder.dims,
                max_chars=100_000,
            )
        )
    ctx.insert(records)
    return records


def rounds(first: int, last: int) -> list[tuple[str, str]]:
    """User/assistant pairs for rounds ``first..last`` (1-based), each on its own topic."""
    topics = [
        "sailing",
        "pottery",
        "chess",
        "violin",
        "gardening",
        "astronomy",
        "baking",
        "cycling",
        "origami",
        "fencing",
        "knitting",
        "rowing",
    ]
    out = []
    for n in range(first, last + 1):
        topic = topics[n % len(topics)]
        out.append(("user", f"Round {n}: tell me something about {topic} number {n}."))
        out.append(("assistant", f"Here is a fact about {topic} for round {n}: it is fun."))
    return out


def minutes_after(n: float) -> datetime:
    return T0 + timedelta(minutes=n)
