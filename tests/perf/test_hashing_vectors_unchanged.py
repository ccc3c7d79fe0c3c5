"""The hashing embedder's scatter-add gives the vectors the per-feature loop gave."""

from __future__ import annotations

import hashlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.embedder.base import check_vectors
from memstrata.embedder.hashing import HashingEmbedder, _features


def _loop_vector(text: str, dims: int) -> np.ndarray:
    """The implementation before: one ``+=`` per feature."""
    vec = np.zeros(dims, dtype=np.float32)
    for feature, weight in _features(text):
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        sign = 1.0 if value & 1 else -1.0
        vec[(value >> 1) % dims] += sign * weight
    if not vec.any():
        vec[0] = 1.0
    return check_vectors(np.stack([vec]), 1, dims, "loop")[0]


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=300), st.sampled_from([8, 64, 256]))
def test_scatter_add_is_bit_identical_to_the_loop(text: str, dims: int) -> None:
    got = HashingEmbedder(dims).embed_batch([text])[0]
    assert got.tobytes() == _loop_vector(text, dims).tobytes()


def test_long_and_repetitive_texts() -> None:
    emb = HashingEmbedder(256)
    for text in ("tea " * 2000, "我喜欢喝茶" * 300, "a", "!!!", "Ünïcödé café naïve"):
        assert emb.embed_batch([text])[0].tobytes() == _loop_vector(text, 256).tobytes()
