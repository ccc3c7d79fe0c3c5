"""A real second process running one long operation, killed with SIGKILL at a gate.

``python child.py URL GATE OP [ARG...]``: opens ``Memory(URL)`` (hashing embedder) and runs
``OP``; the process kills itself the moment the gate is reached, as ``kill -9`` from
outside would at that instant:

- ``GATE`` is ``PATTERN@N`` — the ``N``-th SQL statement (1-based) whose text starts
  with ``PATTERN`` (case-insensitive) is about to run: SQLite's trace callback on the store's
  write connection, or psycopg's ``execute`` on PostgreSQL. ``PATTERN@N+K`` kills ``K``
  hundred SQLite VM steps after that statement started (inside a ``VACUUM``, a long
  ``INSERT``: SQLite's progress handler);
- ``embed@N``: the ``N``-th embedding call is about to run;
- ``call:NAME@N``: the ``N``-th call of ``memstrata.portability.NAME`` (what an export
  writes: ``record_lines`` a page, ``end_line`` its end) is about to run, or of
  ``module.NAME`` when dotted; ``after:...`` kills once that call returned;
- ``-``: no gate (the parent kills the process at a time of its choosing, after ``go`` is
  printed on stdout, or the operation runs to its end and prints ``done``).

Ops: ``purge-user``, ``purge-user-compact``, ``purge-ids IDS...``, ``import FILE``,
``reembed DIMS``, ``compact``, ``maintain``, ``forget IDS...``, ``cli ARGS...``
(``memstrata --db URL ARGS...`` in this process, as the victim user).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memstrata import Memory, Scope
from memstrata.embedder.base import Matrix
from memstrata.maintenance import Retention

sys.path.insert(0, str(Path(__file__).parents[1]))  # the tests' helpers (a script's path)
from embedders import WrappedHashing  # noqa: E402

SCRIPT = __file__
VICTIM = Scope("acme", "victim-user-7731", session="sv")


def die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


class Gate:
    def __init__(self, spec: str) -> None:
        self.pattern, self.n, self.steps = "", 0, 0
        if spec != "-":
            self.pattern, _, rest = spec.partition("@")
            n, _, k = rest.partition("+")
            self.n, self.steps = int(n), int(k or 0)
        self.pattern = self.pattern.lower()
        self.seen = 0

    def statement(self, sql: str, on_steps: Any = None) -> None:
        if self.pattern == "log":
            print(" ".join(sql.split())[:70], file=sys.stderr, flush=True)
        if self.pattern in ("", "embed", "log"):
            return
        if not sql.lower().lstrip().startswith(self.pattern):
            return
        self.seen += 1
        if self.seen != self.n:
            return
        if self.steps and on_steps is not None:
            on_steps(self.steps)
        else:
            die()

    def embedding(self) -> None:
        if self.pattern == "embed":
            self.seen += 1
            if self.seen == self.n:
                die()


class GatedEmbedder(WrappedHashing):
    """The hashing embedder behind the gate's ``embed@N``."""

    def __init__(self, dims: int, gate: Gate) -> None:
        super().__init__(dims)
        self._gate = gate

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        self._gate.embedding()
        return super().embed_batch(texts, query=query)


def _sqlite_gate(mem: Memory, gate: Gate) -> None:
    conn = mem.store._conn  # type: ignore[attr-defined]

    def after(steps: int) -> None:
        left = [steps]

        def tick() -> int:
            left[0] -= 1
            if left[0] <= 0:
                die()
            return 0

        conn.set_progress_handler(tick, 100)

    conn.set_trace_callback(lambda sql: gate.statement(sql, after))


def _text(query: Any) -> str:
    if isinstance(query, str | bytes):
        return query if isinstance(query, str) else query.decode()
    try:
        return str(query.as_string(None))  # psycopg.sql.Composed
    except Exception:
        return str(query)


def _pg_gate(gate: Gate) -> None:
    import psycopg

    for cls in (psycopg.Connection, psycopg.Cursor):
        for name in ("execute", "executemany"):
            if not hasattr(cls, name):
                continue
            plain = getattr(cls, name)

            def execute(self: Any, query: Any, *args: Any, _plain: Any = plain, **kw: Any) -> Any:
                gate.statement(_text(query))
                return _plain(self, query, *args, **kw)

            setattr(cls, name, execute)


def _call_gate(spec: str) -> None:
    import importlib

    kind, _, rest = spec.partition(":")
    path, _, n = rest.partition("@")
    where, _, name = path.rpartition(".")
    module = importlib.import_module(where or "memstrata.portability")
    plain, seen = getattr(module, name), [0]

    def gated(*args: Any, **kw: Any) -> Any:
        seen[0] += 1
        if kind == "call" and seen[0] == int(n):
            die()
        out = plain(*args, **kw)
        if kind == "after" and seen[0] == int(n):
            die()
        return out

    setattr(module, name, gated)


def main(url: str, spec: str, op: str, args: list[str]) -> None:
    if spec.startswith(("call:", "after:")):
        _call_gate(spec)
        spec = "-"
    gate = Gate(spec)
    if op == "cli":
        from memstrata.cli.app import main as cli

        sys.argv = ["memstrata", "--db", url, "--tenant", VICTIM.tenant, "--user", VICTIM.user]
        sys.argv += ["--embedder", "hashing", *args]
        print("go", flush=True)
        cli()
        return
    dims = int(args[0]) if op == "reembed" else 256
    embedder = GatedEmbedder(dims, gate)
    if url.startswith("postgresql"):
        _pg_gate(gate)
    if op == "reembed":  # the migration runs while the memory opens
        if url.startswith("sqlite"):
            import sqlite3

            trace = sqlite3.connect  # gate the store's connection as soon as it exists

            def connect(*a: Any, **kw: Any) -> sqlite3.Connection:
                conn = trace(*a, **kw)
                conn.set_trace_callback(gate.statement)
                return conn

            sqlite3.connect = connect  # type: ignore[assignment]
        print("go", flush=True)
        Memory(url, embedder=embedder, background=False, reembed=True).close()
        print("done", flush=True)
        return
    mem = Memory(url, embedder=embedder, background=False)
    if url.startswith("sqlite"):
        _sqlite_gate(mem, gate)
    print("go", flush=True)
    if op == "purge-user":
        mem.purge(VICTIM.user_scope)
    elif op == "purge-user-compact":
        mem.purge(VICTIM.user_scope, compact=True)
    elif op == "purge-ids":
        mem.purge(VICTIM.user_scope, args)
    elif op == "import":
        with open(args[0], encoding="utf-8") as fp:
            mem.import_records(fp)
    elif op == "compact":
        mem.compact()
    elif op == "maintain":
        mem.maintain(VICTIM, retention=Retention.seed_002())
    elif op == "forget":
        mem.forget(VICTIM, args, reason="asked to")
    else:
        raise SystemExit(f"unknown op {op!r}")
    print("done", flush=True)
    mem.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
