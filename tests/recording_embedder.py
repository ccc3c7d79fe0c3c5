"""The hashing embedder, keeping every call it was given: what a test asserts the model was,
or was not, asked to embed."""

from __future__ import annotations

from collections.abc import Sequence

from memstrata.embedder.base import Matrix
from memstrata.embedder.hashing import HashingEmbedder

__all__ = ["RecordingEmbedder"]


class RecordingEmbedder(HashingEmbedder):
    def __init__(self, dims: int = 256) -> None:
        super().__init__(dims)
        self.calls: list[tuple[list[str], bool]] = []  # each call's texts, and query=

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        self.calls.append((list(texts), query))
        return super().embed_batch(texts, query=query)

    @property
    def queries(self) -> list[str]:
        """Every query text embedded, in order."""
        return [t for texts, query in self.calls if query for t in texts]

    @property
    def sizes(self) -> list[int]:
        """How many texts each call was given."""
        return [len(texts) for texts, _ in self.calls]
