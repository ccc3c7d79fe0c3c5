"""``AsyncMemory``: the :class:`~memstrata.Memory` API with ``await``.

>>> async with AsyncMemory("sqlite:///memory.db") as mem:
...     await mem.add_message(Scope("acme", "alice", session="s1"), "user", "I'm vegetarian")

**Thread model.** Each ``AsyncMemory`` builds one sync ``Memory`` on a dedicated thread and
runs every call there, one at a time, in the order the calls were made; the awaiting
coroutine yields to the event loop meanwhile. The logic is the sync core's (one source of
truth): the methods are generated from ``Memory``'s by ``scripts/gen_aio.py``. Storage and
providers are the sync ones on that thread: SQLite, PostgreSQL (psycopg, sync), Redis
(redis-py, sync) and OpenAI-compatible clients block that thread, never the loop. The
background job worker (``background=True``) is the sync memory's own thread, as for ``Memory``.

**Errors** are the ones ``Memory`` raises (the same :class:`~memstrata.errors.MemstrataError`
subclasses, not wrapped). A call after ``aclose()`` raises ``StoreError``.

**Cancellation.** Cancelling a coroutine that awaits a call never leaves half a write: a call
still waiting for the thread is dropped and never runs; a call already running completes on
the thread (its transaction commits or rolls back as in the sync API) and its result is
discarded.
"""

from ._generated import (
    AsyncEpisodes,
    AsyncFacts,
    AsyncKeyMemory,
    AsyncKnowledge,
    AsyncMemory,
    AsyncProcedures,
    AsyncTasks,
)

__all__ = [
    "AsyncEpisodes",
    "AsyncFacts",
    "AsyncKeyMemory",
    "AsyncKnowledge",
    "AsyncMemory",
    "AsyncProcedures",
    "AsyncTasks",
]
