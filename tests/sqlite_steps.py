"""Counting SQLite's work instead of timing it: the virtual-machine steps a call makes on a
store's read connection (a progress handler called at every step), so a test of "does not
grow with N" holds on a loaded machine (tests/caller29, tests/role29)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memstrata import Memory
from memstrata.store.sqlite.store import SQLiteStore

__all__ = ["sqlite_store", "vm_steps"]


def sqlite_store(mem: Memory) -> SQLiteStore:
    """The SQLite store under ``mem`` (through a caller's view, if any)."""
    store = getattr(mem.store, "viewed", mem.store)
    assert isinstance(store, SQLiteStore)
    return store


def vm_steps(store: SQLiteStore, call: Callable[[], Any]) -> int:
    """How many virtual-machine steps ``call()`` makes on ``store``'s read connection."""
    conn = store._reader()
    steps = 0

    def tick() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn.set_progress_handler(tick, 1)
    try:
        call()
    finally:
        conn.set_progress_handler(None, 0)
    return steps
