"""What this process keeps of users' words outside the store, and forgetting it.

Some caches hold users' text between calls because the same texts come back call after call:
the sentences ``build_context`` trims and the dates it resolves, speaker names, the terms
FTS5 tokenises, the embedders' per-text vectors. A purge removes the user from the store;
:func:`forget_words` empties these copies too. Module-level caches are registered with
:func:`keeps_words` when their module is imported; an object that keeps texts (an embedder's
cache) with :func:`keeps_words_of`, weakly, so registering never keeps it alive.

The purging process calls :func:`forget_words` itself. Every other process learns of a
purge from the store: every purge (of a whole user or of some records) raises a count kept
in the store, which each search reads with its vector state in the same statement (SQLite
and PostgreSQL ``vectors.py``); a :class:`PurgeCount` that sees it rise calls
:func:`forget_words` before the search goes on, so no copy outlives the process's next
search, of any user.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Protocol

__all__ = ["Forgets", "PurgeCount", "forget_words", "keeps_words", "keeps_words_of"]


class Forgets(Protocol):
    def forget(self) -> None: ...


_lock = threading.Lock()
_functions: list[Callable[[], None]] = []
_objects: weakref.WeakSet[Forgets] = weakref.WeakSet()


def keeps_words(forget: Callable[[], None]) -> Callable[[], None]:
    """Register ``forget`` (a module-level cache's ``cache_clear``, say); returns it."""
    with _lock:
        if forget not in _functions:
            _functions.append(forget)
    return forget


def keeps_words_of(obj: Forgets) -> None:
    """Register ``obj``'s :meth:`~Forgets.forget` for as long as ``obj`` lives."""
    with _lock:
        _objects.add(obj)


def forget_words() -> None:
    """Empty every registered copy of users' words in this process."""
    with _lock:
        functions, objects = list(_functions), list(_objects)
    for forget in functions:
        forget()
    for obj in objects:
        obj.forget()


class PurgeCount:
    """How many purges a store has made, as this process last read it (a row of no one in
    the store's ``scope_generation`` table that every purge raises, read with each search's
    vector state): a rise means some process purged something since, so this one forgets
    what it keeps of users' words. The first reading only sets the count."""

    def __init__(self) -> None:
        self._seen: int | None = None
        self._lock = threading.Lock()

    def read(self, count: int) -> None:
        with self._lock:
            rose = self._seen is not None and count > self._seen
            if self._seen is None or count > self._seen:
                self._seen = count
        if rose:
            forget_words()
