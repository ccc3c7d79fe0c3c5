"""A search whose dense leg fails (the embedder raised) returns its error only once its
lexical leg, started beside it, has ended: no read of that search runs on after the caller
got the error (and, say, closed the store). Sync (threads) and async (tasks) alike."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import memstrata._async.search.hybrid as async_hybrid
import memstrata.search.hybrid as sync_hybrid
from memstrata import AsyncMemory, Memory, Scope
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.errors import ProviderError

_SCOPE = Scope("t", "u")


class Failing(HashingEmbedder):
    """The hashing embedder for writes; a query embedding raises."""

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        if query:
            raise ProviderError("the model is gone")
        return super().embed_batch(texts)


def test_sync_search_error_waits_for_its_lexical_leg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ended: list[float] = []
    real = sync_hybrid.lexical_candidates

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.3)
        try:
            return real(*args, **kwargs)
        finally:
            ended.append(time.monotonic())

    monkeypatch.setattr(sync_hybrid, "lexical_candidates", slow)
    with Memory(f"sqlite:///{tmp_path}/m.db", embedder=Failing(), background=False) as mem:
        mem.add(_SCOPE, "peanut allergy")
        with pytest.raises(ProviderError):
            mem.search(_SCOPE, "peanut")
        assert ended, "the search raised while its lexical read was still running"


def test_async_search_error_waits_for_its_lexical_leg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ended: list[float] = []
    real = async_hybrid.lexical_candidates

    async def slow(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0.3)
        try:
            return await real(*args, **kwargs)
        finally:
            ended.append(time.monotonic())

    monkeypatch.setattr(async_hybrid, "lexical_candidates", slow)

    async def main() -> None:
        url = f"sqlite:///{tmp_path}/a.db"
        async with AsyncMemory(url, embedder=Failing(), background=False) as mem:
            await mem.add(_SCOPE, "peanut allergy")
            with pytest.raises(ProviderError):
                await mem.search(_SCOPE, "peanut")
            assert ended, "the search raised while its lexical read was still running"

    asyncio.run(main())
