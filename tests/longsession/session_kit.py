"""A long session fed turn by turn (``add_message`` + ``flush``), with the work each turn
costs counted rather than timed: store calls, records the store hands back, provenance ids
in the records read or written, and SQLite virtual-machine steps (a progress handler on
every connection of the store), so a test can require the work per turn to stay bounded
as the session grows — on any machine, however loaded."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memstrata import Memory, Role, Scope
from memstrata.bench.synth import synth_messages
from memstrata.records import MemoryRecord
from memstrata.store.base import RecordWrite
from memstrata.store.sqlite import SQLiteStore

SCOPE = Scope("acme", "long-user", session="long-session")
_VM_STEP = 100  # the progress handler fires every this many SQLite VM instructions


def _ids_in(value: object) -> int:
    """Provenance ids carried by a store result or argument (records, writes, lists)."""
    if isinstance(value, MemoryRecord):
        return len(value.source_ids)
    if isinstance(value, RecordWrite):
        return len(value.record.source_ids)
    if isinstance(value, list | tuple):
        return sum(_ids_in(v) for v in value)
    return 0


class CountingStore:
    """Forwards every call to a store, counting calls, returned rows and provenance ids."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls: Counter[str] = Counter()
        self.rows: Counter[str] = Counter()
        self.ids: Counter[str] = Counter()

    def reset(self) -> None:
        self.calls.clear()
        self.rows.clear()
        self.ids.clear()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name.startswith("_") or not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            out = attr(*args, **kwargs)
            if isinstance(out, list | dict):
                self.rows[name] += len(out)
            self.ids[name] += _ids_in(out) + _ids_in(list(args)) + _ids_in(list(kwargs.values()))
            return out

        return counted


@dataclass(frozen=True)
class Work:
    """Mean work per turn over a window of turns."""

    turns: int  # the session's length at the end of the window
    calls: float  # store calls
    rows: float  # records / candidates / counters the store returned
    ids: float  # provenance ids in records read or written
    vm_steps: float  # SQLite VM instructions (in units of _VM_STEP)
    vector_rows: float  # rows the store's vector cache read from the database
    by_call: dict[str, float]
    ids_by_call: dict[str, float]

    def __str__(self) -> str:
        top = sorted(self.by_call.items(), key=lambda kv: -kv[1])[:6]
        ids = sorted(self.ids_by_call.items(), key=lambda kv: -kv[1])[:6]
        return (
            f"{self.turns} turns: {self.calls:.1f} calls, {self.rows:.1f} rows, "
            f"{self.ids:.1f} ids, {self.vm_steps:.0f}x{_VM_STEP} VM steps, "
            f"{self.vector_rows:.1f} vector rows loaded per turn "
            f"(rows by call: {top}; ids by call: {ids})"
        )


class _VMCounter:
    def __init__(self) -> None:
        self.steps = 0
        self.hooked: set[int] = set()

    def tick(self) -> int:
        self.steps += 1
        return 0  # go on

    def hook(self, conns: Sequence[sqlite3.Connection]) -> None:
        for conn in conns:
            if id(conn) not in self.hooked:
                conn.set_progress_handler(self.tick, _VM_STEP)
                self.hooked.add(id(conn))


@contextmanager
def long_session(tmp_path: Path) -> Iterator[Callable[[int, int], Work]]:
    """``measure(until, window)``: feed the synthetic conversation up to turn ``until``,
    counting the work of its last ``window`` turns."""
    inner = SQLiteStore(str(tmp_path / "session.db"))
    store = CountingStore(inner)
    mem = Memory(
        store=store,
        embedder="hashing",
        llm="heuristic",  # type: ignore[arg-type]
        background=False,
    )
    turns = synth_messages(10**6, 1, 7)
    fed = 0
    vm = _VMCounter()

    def conns() -> list[sqlite3.Connection]:
        return [inner._conn, *inner._readers]

    def feed() -> None:
        nonlocal fed
        m = next(turns)
        mem.add_message(SCOPE, Role(m.role), m.content, observed_at=m.observed_at)
        report = mem.flush(SCOPE)
        assert report.failed == 0 and report.retried == 0, report.errors
        fed += 1

    def measure(until: int, window: int) -> Work:
        while fed < until - window:
            feed()
        vm.hook(conns())
        store.reset()
        vm.steps = 0
        loaded = inner._vectors.rows_loaded
        while fed < until:
            feed()
            vm.hook(conns())  # a connection opened meanwhile counts from now on
        return Work(
            turns=fed,
            calls=sum(store.calls.values()) / window,
            rows=sum(store.rows.values()) / window,
            ids=sum(store.ids.values()) / window,
            vm_steps=vm.steps / window,
            vector_rows=(inner._vectors.rows_loaded - loaded) / window,
            by_call={k: v / window for k, v in store.rows.items()},
            ids_by_call={k: v / window for k, v in store.ids.items() if v},
        )

    try:
        yield measure
    finally:
        mem.close()
