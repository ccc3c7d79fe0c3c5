"""A deterministic feature-hashing embedder for tests and fully offline toy setups.

It has no notion of meaning, only of shared words and character n-grams, but it is fast,
dependency-free and gives the same vector for the same text in every process (it hashes
with blake2b, never Python's salted ``hash``).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from itertools import repeat

import numpy as np

from ..traces import keeps_words_of
from .base import Matrix, check_vectors

__all__ = ["HashingEmbedder"]

_WORD = re.compile(r"\w+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_NGRAM_SIZES = (2, 3)


# Words' hashed features are cached (they never change): words up to _CACHED_WORD_CHARS
# characters (a long CJK run seldom comes back), at most _WORD_CACHE_MAX of them (a few MB),
# emptied when full rather than kept in LRU order, which would cost more than it saves.
_WORD_CACHE_MAX = 20_000
_CACHED_WORD_CHARS = 32
_SIGNED = {1.0: (1.0, -1.0), 0.5: (0.5, -0.5)}  # one float object per value, shared


def _word_features(word: str) -> list[tuple[str, float]]:
    """A word's features: the word itself (weight 1; a CJK run: each of its characters,
    0.5) and its character 2- and 3-grams (0.5). A text's features are those of its words
    (``\\w+`` runs of the NFKC-normalised, lower-cased text).

    Character n-grams make unsegmented Chinese and Japanese comparable, and give English
    some robustness to inflection. They never cross a word boundary.
    """
    out: list[tuple[str, float]] = (
        [("u:" + char, 0.5) for char in word] if _CJK.search(word) else [("w:" + word, 1.0)]
    )
    for n in _NGRAM_SIZES:
        out.extend((f"c{n}:" + word[i : i + n], 0.5) for i in range(len(word) - n + 1))
    return out


class HashingEmbedder:
    """Signed feature hashing into ``dims`` buckets, L2-normalised."""

    def __init__(self, dims: int = 256) -> None:
        from memstrata.validation import MAX_EMBEDDING_DIMS, check_int

        dims = check_int(dims, "HashingEmbedder dims", low=8, high=MAX_EMBEDDING_DIMS)
        self._dims = dims
        # word -> (buckets, signed weights) of every feature of the word
        self._words: dict[str, tuple[tuple[int, ...], tuple[float, ...]]] = {}
        keeps_words_of(self)  # the words are users' (memstrata.traces)

    def forget(self) -> None:
        """Drop the words kept (after a purge)."""
        self._words.clear()

    @property
    def model_id(self) -> str:
        return f"hashing-{self._dims}"

    @property
    def dims(self) -> int:
        return self._dims

    def _hashed(self, word: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
        """The buckets and signed weights of ``word``'s features."""
        hit = self._words.get(word)
        if hit is not None:
            return hit
        buckets: list[int] = []
        values: list[float] = []
        for feature, weight in _word_features(word):
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            buckets.append((value >> 1) % self._dims)
            values.append(_SIGNED[weight][0 if value & 1 else 1])
        out = (tuple(buckets), tuple(values))
        if len(word) <= _CACHED_WORD_CHARS:
            if len(self._words) >= _WORD_CACHE_MAX:
                self._words.clear()
            self._words[word] = out
        return out

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        # The flag is ignored: the hashing embedder is symmetric.
        dims = self._dims
        rows: list[int] = []
        buckets: list[int] = []
        values: list[float] = []
        for row, text in enumerate(texts):
            for word in _WORD.findall(unicodedata.normalize("NFKC", text).lower()):
                hashed, signed = self._hashed(word)
                rows.extend(repeat(row, len(hashed)))
                buckets.extend(hashed)
                values.extend(signed)
        # One scatter-add over the whole batch. Weights are ±1 and ±0.5, so every partial
        # sum is exact (in float64 here, and in float32 after the cast): the vectors are
        # bit-identical to adding the features one by one in any order.
        index = np.asarray(rows, dtype=np.intp) * dims + np.asarray(buckets, dtype=np.intp)
        raw = (
            np.bincount(index, weights=np.asarray(values), minlength=len(texts) * dims)
            .astype(np.float32)
            .reshape(len(texts), dims)
        )
        # Text without word characters (punctuation, emoji), or whose features cancel out: a
        # fixed bucket keeps the vector valid and unit-length instead of an all-zero row
        # check_vectors refuses.
        raw[~raw.any(axis=1), 0] = 1.0
        return check_vectors(raw, len(texts), dims, self.model_id)
