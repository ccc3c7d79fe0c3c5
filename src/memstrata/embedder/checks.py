"""The checks every embedding provider's output goes through (sync and async providers)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..errors import ProviderError

__all__ = ["Matrix", "check_vectors"]

Matrix = npt.NDArray[np.float32]


def check_vectors(raw: object, count: int, dims: int, model_id: str) -> Matrix:
    """Validate and L2-normalise a provider's output, or raise :class:`ProviderError`.

    Refuses wrong shapes, NaN/inf and all-zero rows: storing any of them would silently
    poison every later search.
    """
    try:
        arr = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ProviderError(f"embedder {model_id} returned non-numeric vectors: {exc}") from None
    if arr.ndim != 2 or arr.shape != (count, dims):
        raise ProviderError(
            f"embedder {model_id} returned shape {arr.shape}, expected ({count}, {dims}): "
            "check the model's configured dimensions"
        )
    if not np.isfinite(arr).all():
        raise ProviderError(f"embedder {model_id} returned NaN or infinite values; nothing stored")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if count and float(norms.min()) == 0.0:
        raise ProviderError(f"embedder {model_id} returned an all-zero vector; nothing stored")
    # A row of unit length already is kept bit for bit: dividing it by its norm again moves
    # some components by one float32 step, so a vector the cache hands back was not the one
    # stored with its text, and a text embedded once was stored as two vectors.
    off = np.abs(norms - 1.0) > _UNIT
    out: Matrix = np.where(off, arr / norms, arr).astype(np.float32, copy=False)
    return out


# |norm - 1| of a float32 row already divided by its norm is ~1e-7 at a few hundred dims.
_UNIT = 1e-5
