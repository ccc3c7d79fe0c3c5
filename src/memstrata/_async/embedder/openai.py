"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint (extra ``openai``).

One source (``_async/embedder/openai.py``) writes both embedders: the async one over the
SDK's async client, the sync one (generated) over its sync client.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from memstrata._async.embedder.base import Matrix, check_vectors
from memstrata.errors import ProviderError, ValidationError
from memstrata.llm._openai_sdk import dims_unknown, make_client, map_error

__all__ = ["AsyncOpenAIEmbedder"]

_PROBE = "dimension probe"


class AsyncOpenAIEmbedder:
    """Embeds through ``client.embeddings.create``; vectors are validated and normalised.

    ``dims`` may be omitted: it is then learnt from the first response, or from one short
    probe text sent by :meth:`probe_dims`. Reading the ``dims`` property before that sends
    the probe in the sync embedder; in the async one a property cannot wait for a request,
    so it raises :class:`ProviderError` instead (call ``probe_dims()`` first).

    ``query`` is ignored because OpenAI-style endpoints are symmetric; use a model-specific
    prefix upstream if needed.
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
            raise ValidationError(
                "AsyncOpenAIEmbedder needs a model name, e.g. 'text-embedding-3-small'"
            )
        if batch_size < 1:
            raise ValidationError(f"batch_size must be at least 1, got {batch_size}")
        if dims is not None and dims < 1:
            raise ValidationError(f"dims must be positive, got {dims}")
        self._model = model
        self._base_url = base_url
        self._dims = dims
        self._batch_size = batch_size
        self._client: Any = make_client(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            client_class="AsyncOpenAI",
        )
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return f"openai/{self._model}"

    @property
    def dims(self) -> int:
        if self._dims is None:
            raise dims_unknown(self.model_id)  # async-only
            # sync: return self.probe_dims()
        return self._dims

    async def probe_dims(self) -> int:
        """The vector size: given or learnt already, else learnt now from one probe text."""
        if self._dims is None:
            probe = await self.embed_batch([_PROBE])
            return int(probe.shape[1])
        return self._dims

    async def aclose(self) -> None:
        """Release the HTTP connection pool."""
        await self._client.close()

    async def _request(self, texts: list[str]) -> list[list[float]]:
        import openai

        try:
            response = await self._client.embeddings.create(
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

    async def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        items = list(texts)
        if not items:
            return np.zeros((0, await self.probe_dims()), dtype=np.float32)
        rows: list[list[float]] = []
        for start in range(0, len(items), self._batch_size):
            rows.extend(await self._request(items[start : start + self._batch_size]))
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
