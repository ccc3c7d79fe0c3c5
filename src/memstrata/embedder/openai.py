"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint (extra ``openai``)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ProviderError
from ..llm._openai_sdk import make_client, map_error
from .base import Matrix, check_vectors

__all__ = ["OpenAIEmbedder"]

_PROBE = "dimension probe"


class OpenAIEmbedder:
    """Embeds through ``client.embeddings.create``; vectors are validated and normalised.

    ``dims`` may be omitted: it is then learnt from the first response (asking for it
    before any embedding sends one short probe text). ``query`` is ignored because
    OpenAI-style endpoints are symmetric; use a model-specific prefix upstream if needed.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        dims: int | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        batch_size: int = 256,
    ) -> None:
        if not model:
            raise ValueError("OpenAIEmbedder needs a model name, e.g. 'text-embedding-3-small'")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if dims is not None and dims < 1:
            raise ValueError(f"dims must be positive, got {dims}")
        self._model = model
        self._base_url = base_url
        self._dims = dims
        self._batch_size = batch_size
        self._client: Any = make_client(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return f"openai/{self._model}"

    @property
    def dims(self) -> int:
        if self._dims is None:
            return int(self.embed_batch([_PROBE]).shape[1])
        return self._dims

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.close()

    def _request(self, texts: list[str]) -> list[list[float]]:
        import openai

        try:
            response = self._client.embeddings.create(
                model=self._model, input=texts, encoding_format="float"
            )
        except (openai.OpenAIError, ValueError) as exc:
            raise map_error(
                exc, what=f"embedding with {self._model}", base_url=self._base_url
            ) from exc
        try:
            rows = sorted(response.data, key=lambda item: item.index)
            return [list(item.embedding) for item in rows]
        except (AttributeError, TypeError) as exc:
            raise ProviderError(
                f"embedder {self.model_id} returned an answer without embeddings ({exc}); "
                "is base_url an embeddings server?"
            ) from None

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        items = list(texts)
        if not items:
            return np.zeros((0, self.dims), dtype=np.float32)
        rows: list[list[float]] = []
        for start in range(0, len(items), self._batch_size):
            rows.extend(self._request(items[start : start + self._batch_size]))
        if len(rows) != len(items):
            raise ProviderError(
                f"embedder {self.model_id} returned {len(rows)} vectors for {len(items)} "
                "texts; the endpoint dropped inputs"
            )
        with self._lock:
            if self._dims is None:
                self._dims = len(rows[0])
            dims = self._dims
        return check_vectors(rows, len(items), dims, self.model_id)
