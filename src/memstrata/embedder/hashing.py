"""A deterministic feature-hashing embedder for tests and fully offline toy setups.

It has no notion of meaning, only of shared words and character n-grams, but it is fast,
dependency-free and gives the same vector for the same text in every process (it hashes
with blake2b, never Python's salted ``hash``).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterator, Sequence

import numpy as np

from .base import Matrix, check_vectors

__all__ = ["HashingEmbedder"]

_WORD = re.compile(r"\w+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_NGRAM_SIZES = (2, 3)


def _features(text: str) -> Iterator[tuple[str, float]]:
    """Word unigrams (weight 1; CJK: characters, 0.5) and character n-grams (0.5).

    Character n-grams make unsegmented Chinese and Japanese comparable, and give English
    some robustness to inflection.
    """
    norm = unicodedata.normalize("NFKC", text).lower()
    for word in _WORD.findall(norm):
        if _CJK.search(word):
            # Unsegmented CJK: a whole run is a phrase, not a word; use its characters.
            for char in word:
                yield "u:" + char, 0.5
        else:
            yield "w:" + word, 1.0
    squashed = " ".join(_WORD.findall(norm))
    for n in _NGRAM_SIZES:
        for i in range(len(squashed) - n + 1):
            gram = squashed[i : i + n]
            if " " not in gram:
                yield f"c{n}:" + gram, 0.5


class HashingEmbedder:
    """Signed feature hashing into ``dims`` buckets, L2-normalised."""

    def __init__(self, dims: int = 256) -> None:
        if dims < 8:
            raise ValueError(f"HashingEmbedder needs at least 8 dims, got {dims}")
        self._dims = dims

    @property
    def model_id(self) -> str:
        return f"hashing-{self._dims}"

    @property
    def dims(self) -> int:
        return self._dims

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self._dims, dtype=np.float32)
        buckets: list[int] = []
        values: list[float] = []
        for feature, weight in _features(text):
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            buckets.append((value >> 1) % self._dims)
            values.append(weight if value & 1 else -weight)
        # One unbuffered scatter-add in feature order (the per-feature ``vec[i] += w`` it
        # replaces was half of a message's ingest cost); weights are ±1 and ±0.5, so every
        # partial sum is exact in float32 and the vector is bit-identical.
        np.add.at(vec, np.asarray(buckets, dtype=np.intp), np.asarray(values, dtype=np.float32))
        if not vec.any():
            # Text without word characters (punctuation, emoji): a fixed bucket keeps the
            # vector valid and unit-length instead of an all-zero row check_vectors refuses.
            vec[0] = 1.0
        return vec

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        # The flag is ignored: the hashing embedder is symmetric.
        rows = [self._vector(t) for t in texts]
        raw = np.stack(rows) if rows else np.zeros((0, self._dims), dtype=np.float32)
        return check_vectors(raw, len(rows), self._dims, self.model_id)
