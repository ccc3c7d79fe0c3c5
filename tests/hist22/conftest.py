"""Fixtures of the history checks: a fresh memory on each store (SQLite file, memory://,
PostgreSQL schema, PostgreSQL with the Redis buffer), and a user whose records have
history of every kind the API makes."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.codec import record_to_dict
from memstrata.filters import Filters
from memstrata.llm.models import ExtractedFact

ALICE = Scope("acme", "alice", session="s1")
USER = Scope("acme", "alice")
BOB = Scope("acme", "bob")
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

Fresh = Callable[..., Memory]
EVERY = Filters(include_deleted=True, include_superseded=True)


@pytest.fixture(params=["sqlite", "memory", "postgresql", "postgresql+redis"])
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Fresh]:
    """Makes a memory on a store of its own at each call (a ``FixedClock`` at ``T0``
    unless one is given); closed after the test (the PostgreSQL schemas and Redis keys
    by their fixtures)."""
    made: list[Memory] = []

    def make(clock: FixedClock | None = None, **kwargs: Any) -> Memory:
        buffer = None
        if request.param == "sqlite":
            url = f"sqlite:///{tmp_path / f'm{len(made)}.db'}"
        elif request.param == "memory":
            url = "memory://"
        else:
            server = request.getfixturevalue("pg_server")
            url = server.url()
            if "redis" in request.param:
                buffer = request.getfixturevalue("redis_buffer_url")
        m = Memory(
            url,
            embedder="hashing",
            clock=clock or FixedClock(T0),
            background=False,
            buffer=buffer,
            **kwargs,
        )
        made.append(m)
        return m

    yield make
    for m in made:
        m.close()


def export_text(mem: Memory, scope: Scope = USER, **kwargs: Any) -> str:
    buf = io.StringIO()
    mem.export_records(scope, buf, **kwargs)
    return buf.getvalue()


def lines_of(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def text_of(lines: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(x) + "\n" for x in lines)


def histories(mem: Memory, scope: Scope = USER) -> dict[str, list[dict[str, Any]]]:
    """``history`` of every record of the user (deleted and superseded ones included),
    each version as an export writes it."""
    ids = sorted(r.id for r in mem.list(scope, filters=EVERY, limit=10_000))
    return {rid: [record_to_dict(v) for v in mem.history(scope, rid)] for rid in ids}


def stored(mem: Memory, scope: Scope = USER) -> int:
    return mem.store.count(scope, EVERY)


def edited(mem: Memory) -> dict[str, str]:
    """A user whose records have history of each kind, the clock moving between steps (set
    back once): a note updated twice (text, tags), one deleted and restored, a fact whose
    value an upsert replaced, a record whose access changed, a forgotten turn, and one
    with history purged. Returns the ids by name."""
    clock = mem.clock
    assert isinstance(clock, FixedClock)

    def later(hours: float) -> None:
        clock.set(clock.now() + timedelta(hours=hours))

    note = mem.add(ALICE, "Alice keeps two hives of bees in her garden by the river", tags=["bees"])
    later(1)
    note = mem.update(
        USER, note.id, expected_version=note.version, content="Alice keeps three hives now"
    )
    later(2.5)
    note = mem.update(USER, note.id, expected_version=note.version, tags=["bees", "honey"])
    gone = mem.add(ALICE, "Alice sells honey at the Saturday market", dedup=False)
    later(1)
    mem.delete(USER, gone.id)
    later(-3)  # a clock set back
    mem.restore(USER, gone.id)
    said = mem.add_message(ALICE, "user", "I live in Lyon")
    mem.facts.upsert(
        ALICE, ExtractedFact(category="home", key="city", value="Lyon", confidence=0.7), [said.id]
    )
    later(5)
    mem.facts.upsert(
        ALICE, ExtractedFact(category="home", key="city", value="Paris", confidence=0.9)
    )
    shared = mem.add(ALICE, "the hive keys are under the mat")
    later(0.5)
    mem.set_access(USER, shared.id, visibility="shared", allowed_users=["bob"])
    turn = mem.add_message(ALICE, "assistant", "noted: you live in Lyon")
    mem.forget(USER, [turn.id])
    doomed = mem.add(ALICE, "a note to be purged", dedup=False)
    mem.update(USER, doomed.id, expected_version=doomed.version, content="purged soon")
    mem.purge(USER, [doomed.id])
    return {"note": note.id, "gone": gone.id, "shared": shared.id, "turn": turn.id,
            "doomed": doomed.id}  # fmt: skip
