"""A purge while a job of the user runs in *another process* (``flush`` or ``memstrata
worker``), held after it read the user's turns and before it writes what it derived from
them (facts, clusters, summaries).

Before session 22 that process wrote its facts after the purge ("location: Lisbon" for a
purged user, or citing a purged turn): the purged words came back, in a store whose purge
report had said 0 remaining. Now every write transaction of a job checks its claim inside
the transaction (jobs.Fence) and the purge deletes the user's jobs (or takes their claims
back) in its own: the late write is refused, the job stops (``revoked``, not a failure),
and after a purge of some records the job runs again on the records left.

Traces are looked for where each backend keeps them: the SQLite file and WAL as bytes,
every row of every table of the PostgreSQL schema as text, every key and value of the
Redis buffer's prefix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from memstrata import Filters, Memory, Scope
from memstrata.store.sqlite.codec import scope_token
from servers import redis_bytes

from .held import HeldJob

ALICE = Scope("acme", "alice-q7zv", session="s1")
BOB = Scope("acme", "bob-k2mw", session="s9")
LISBON = "My name is Alice and I live in Lisbon, on Rua Zambujeira."
PEANUTS = "I am allergic to peanuts."
TURNS = [
    {"role": "user", "content": LISBON},
    {"role": "assistant", "content": "Noted: Lisbon."},
    {"role": "user", "content": PEANUTS},
    {"role": "assistant", "content": "Noted: no peanuts."},
]
EVERYTHING = Filters(include_deleted=True, include_superseded=True)


def _derived(held: str) -> bool:
    """Whether the held job was embedding what it derived from the turns (a fact)."""
    return any(word in held for word in ("Alice", "Lisbon", "peanuts"))


@dataclass
class Backend:
    url: str
    buffer: str | None
    traces: Callable[[list[str]], list[str]]  # which needles the store still holds
    use_async: bool = False  # the other process runs AsyncMemory

    def held(self, gate: Path) -> HeldJob:
        return HeldJob(self.url, gate, self.buffer, use_async=self.use_async)

    def memory(self) -> Memory:
        return Memory(self.url, embedder="hashing", background=False, buffer=self.buffer)

    def texts(self, scope: Scope) -> list[str]:
        with self.memory() as mem:
            return [r.text for r in mem.list(scope.user_scope, filters=EVERYTHING, limit=1000)]


def _sqlite_traces(path: str) -> Callable[[list[str]], list[str]]:
    def traces(needles: list[str]) -> list[str]:
        data = b"".join(
            Path(path + s).read_bytes() for s in ("", "-wal") if Path(path + s).exists()
        )
        return [n for n in needles if n.encode() in data]

    return traces


def _pg_traces(url: str) -> Callable[[list[str]], list[str]]:
    def traces(needles: list[str]) -> list[str]:
        found = []
        with Memory(url, embedder="hashing", background=False) as mem:
            store: Any = mem.store
            with store._pool.connection() as conn:  # noqa: SLF001 - a test looks inside
                tables = [
                    r["table_name"]
                    for r in conn.execute(
                        "SELECT table_name FROM information_schema.tables WHERE table_schema "
                        "= current_schema() AND table_type = 'BASE TABLE'"
                    ).fetchall()
                ]
                for needle in needles:
                    for table in tables:
                        row = conn.execute(
                            f'SELECT count(*) AS n FROM "{table}" t WHERE t::text LIKE %s',
                            (f"%{needle}%",),
                        ).fetchone()
                        if row["n"]:
                            found.append(f"{table}:{needle}")
        return found

    return traces


def _redis_traces(buffer: str) -> Callable[[list[str]], list[str]]:
    prefix = parse_qs(urlparse(buffer).query)["prefix"][0]

    def traces(needles: list[str]) -> list[str]:
        blobs = redis_bytes(buffer.split("?")[0], prefix + ":*")
        return [f"redis:{n}" for n in needles if any(n.encode() in b for b in blobs)]

    return traces


@pytest.fixture(params=["sqlite", "sqlite-async", "postgresql", "postgresql+redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param.startswith("sqlite"):
        path = str(tmp_path / "m.db")
        return Backend(
            f"sqlite:///{path}", None, _sqlite_traces(path), request.param == "sqlite-async"
        )
    url = request.getfixturevalue("pg_url")
    if request.param == "postgresql":
        return Backend(url, None, _pg_traces(url))
    buffer = request.getfixturevalue("redis_buffer_url")
    pg, hot = _pg_traces(url), _redis_traces(buffer)
    return Backend(url, buffer, lambda needles: pg(needles) + hot(needles))


def test_a_user_purged_while_another_process_runs_their_job_stays_purged(
    backend: Backend, tmp_path: Path
) -> None:
    with backend.memory() as mem:
        mem.add_messages(BOB, [{"role": "user", "content": "Bob lives in Porto."}])
        mem.flush()
        mem.add_messages(ALICE, TURNS)  # type: ignore[arg-type]
        other = backend.held(tmp_path / "gate")
        try:
            assert _derived(other.wait_held())  # from the turns it read, not written yet
            report = mem.purge(ALICE)
        finally:
            result = other.release()
    assert report.remaining == 0
    assert backend.texts(ALICE) == []
    needles = ["Lisbon", "Zambujeira", "peanuts", ALICE.user, scope_token("acme", ALICE.user)]
    assert backend.traces(needles) == []
    assert "Bob lives in Porto." in backend.texts(BOB)  # the bystander is untouched
    assert result["revoked"] == 1 and result["failed"] == 0, result


def test_records_purged_while_another_process_runs_a_job_that_read_them(
    backend: Backend, tmp_path: Path
) -> None:
    """``purge(scope, ids)``: the job's claim is taken back, its late write refused, and it
    runs again on the turns left (the peanuts fact is derived from what is left)."""
    with backend.memory() as mem:
        turns = mem.add_messages(ALICE, TURNS)  # type: ignore[arg-type]
        other = backend.held(tmp_path / "gate")
        try:
            assert _derived(other.wait_held())
            report = mem.purge(ALICE, [turns[0].id, turns[1].id])
        finally:
            result = other.release()
        jobs = mem.store.list_jobs("acme", ALICE.user)
    assert report.remaining == 0
    texts = backend.texts(ALICE)
    assert not [t for t in texts if "Lisbon" in t or "Zambujeira" in t], texts
    assert backend.traces(["Lisbon", "Zambujeira"]) == []
    assert any("peanut" in t and t != PEANUTS for t in texts), texts  # derived again
    assert result["revoked"] == 1 and result["failed"] == 0, result
    assert result["done"] >= 1  # the same job, run again on the turns left
    assert [j.status.value for j in jobs] == ["done"] * len(jobs)
    assert [j.attempts for j in jobs] == [1] * len(jobs)  # the taken-back claim's was given back
