"""``AsyncMemory``: the :class:`~memstrata.Memory` API with ``await``, natively async.

>>> async with AsyncMemory("sqlite:///memory.db") as mem:
...     await mem.add_message(Scope("acme", "alice", session="s1"), "user", "I'm vegetarian")

**One source of truth.** The memory's logic (layers, search, context, jobs, quotas,
maintenance, the stores' I/O) is written once, async, under ``memstrata/_async/``;
``scripts/unasync.py`` generates the sync modules (``Memory`` is the twin of
``AsyncMemory``), and ``tests/aio/test_unasync.py`` fails while a twin is stale.

**What runs where.** PostgreSQL runs on psycopg's async connections, Redis on
``redis.asyncio``, OpenAI-compatible providers on the SDK's ``AsyncOpenAI``: their waits free
the event loop, and coroutines on one ``AsyncMemory`` overlap. SQLite and ``memory://``
have no async driver: their calls run on threads of the store's own
(:mod:`memstrata.aio.threaded`; a transaction on one thread). Local models (the default
embedder) run on a thread of their own (:mod:`memstrata.aio.providers`); the hashing
embedder and the heuristic LLM are called inline. Background jobs (``background=True``) run
as an asyncio task of the loop that opened the memory.

This package also holds the async-only shells the sources use (tasks where the sync twin
has threads); import ``AsyncMemory`` from here or from :mod:`memstrata`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._async.layers.episodic import AsyncEpisodeService
    from .._async.layers.key import AsyncKeyMemoryService
    from .._async.layers.knowledge import AsyncKnowledgeService
    from .._async.layers.procedural import AsyncProceduralService
    from .._async.layers.semantic import AsyncFactService
    from .._async.layers.working import AsyncTaskService
    from .._async.memory import AsyncMemory

__all__ = [
    "AsyncEpisodeService",
    "AsyncFactService",
    "AsyncKeyMemoryService",
    "AsyncKnowledgeService",
    "AsyncMemory",
    "AsyncProceduralService",
    "AsyncTaskService",
]

# Loaded on first use: the async sources import this package's shells (``search_tasks``,
# ``worker_tasks``, ...), so importing ``AsyncMemory`` here eagerly would be circular.
_LAZY = {
    "AsyncMemory": "memstrata._async.memory",
    "AsyncEpisodeService": "memstrata._async.layers.episodic",
    "AsyncFactService": "memstrata._async.layers.semantic",
    "AsyncKeyMemoryService": "memstrata._async.layers.key",
    "AsyncKnowledgeService": "memstrata._async.layers.knowledge",
    "AsyncProceduralService": "memstrata._async.layers.procedural",
    "AsyncTaskService": "memstrata._async.layers.working",
}

if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return getattr(import_module(module), name)
