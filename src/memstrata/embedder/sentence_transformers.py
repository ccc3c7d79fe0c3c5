"""Local models through sentence-transformers (extra ``local``; CPU torch).

For any model on disk or in a local Hugging Face cache. Asymmetric models (E5, BGE, GTE)
need their prompts: pass e.g. ``query_prompt="query: "`` and ``passage_prompt="passage: "``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import MissingDependencyError, ProviderError
from .base import Matrix, check_vectors

__all__ = ["SentenceTransformerEmbedder"]

_INSTALL_HINT = (
    "run `pip install 'memstrata[local]'`; torch must be the CPU build, e.g. "
    "`pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu`"
)


class SentenceTransformerEmbedder:
    """Embeds with a ``sentence_transformers.SentenceTransformer``, loaded on first use."""

    def __init__(
        self,
        model_name_or_path: str,
        device: str = "cpu",
        query_prompt: str | None = None,
        passage_prompt: str | None = None,
        batch_size: int = 64,
    ) -> None:
        if not model_name_or_path:
            raise ValueError("SentenceTransformerEmbedder needs a model name or path")
        self._name = model_name_or_path
        self._device = device
        self._query_prompt = query_prompt
        self._passage_prompt = passage_prompt
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise MissingDependencyError(
                        f"SentenceTransformerEmbedder needs sentence-transformers ({exc}): "
                        + _INSTALL_HINT
                    ) from None
                try:
                    self._model = SentenceTransformer(self._name, device=self._device)
                except (OSError, ValueError, RuntimeError) as exc:
                    raise ProviderError(
                        f"could not load sentence-transformers model {self._name!r}: {exc}; "
                        "check the name or path (no download happens offline)"
                    ) from None
            return self._model

    @property
    def model_id(self) -> str:
        return f"st/{self._name}"

    @property
    def dims(self) -> int:
        dims = self._load().get_sentence_embedding_dimension()
        if not isinstance(dims, int) or dims < 1:
            raise ProviderError(f"model {self._name!r} does not report its embedding size")
        return dims

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        items = list(texts)
        dims = self.dims
        if not items:
            return np.zeros((0, dims), dtype=np.float32)
        prompt = self._query_prompt if query else self._passage_prompt
        try:
            raw = self._load().encode(
                items,
                prompt=prompt,
                batch_size=self._batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        except (RuntimeError, ValueError) as exc:
            raise ProviderError(
                f"sentence-transformers model {self._name!r} failed: {exc}"
            ) from None
        return check_vectors(raw, len(items), dims, self.model_id)
