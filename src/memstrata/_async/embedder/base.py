"""The embedding protocol and the checks every provider's output goes through."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from memstrata.embedder.checks import Matrix, check_vectors

__all__ = ["AsyncEmbedder", "Matrix", "check_vectors"]


@runtime_checkable
class AsyncEmbedder(Protocol):
    """Turns texts into unit-length float32 vectors.

    ``query=True`` marks search queries: asymmetric models (E5 and friends) embed queries
    and passages differently; symmetric ones ignore the flag.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dims(self) -> int: ...

    async def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix: ...
