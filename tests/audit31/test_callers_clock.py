"""A clock of the caller's own that returns naive or non-UTC times.

``Memory(clock=...)`` takes any object with ``now()``; memstrata's own clocks return aware
UTC times, and everything memstrata stores and compares is aware UTC. A clock returning
``datetime.utcnow()`` (naive: a common idiom) made ``search``, ``end_session`` and
``maintain`` raise a raw ``TypeError`` ("can't subtract offset-naive and offset-aware
datetimes") on every store, ``list`` on memory://, and stored naive times beside aware
ones (the records differed by store). Session 31's audit: a caller's clock is read as
``ensure_utc`` reads a time (naive is UTC), and one returning no datetime is a
``ValidationError`` naming it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from memstrata import Memory, Scope, ValidationError

ALICE = Scope("acme", "alice", session="s1")
T0 = datetime(2026, 5, 1, 18, 0)  # naive: read as UTC


class NaiveClock:
    """What ``datetime.utcnow()`` gives, moving only when told (``advance``)."""

    def __init__(self) -> None:
        self.at = T0

    def now(self) -> datetime:
        return self.at

    def advance(self, **delta: float) -> None:
        self.at += timedelta(**delta)


class KiritimatiClock(NaiveClock):
    def now(self) -> datetime:
        return self.at.replace(tzinfo=UTC).astimezone(timezone(timedelta(hours=14)))


@pytest.mark.parametrize("kind", [NaiveClock, KiritimatiClock])
@pytest.mark.parametrize("where", ["memory", "sqlite", "postgresql"])
def test_a_callers_clock_gives_utc_times(
    where: str, kind: type[NaiveClock], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = {"memory": "memory://", "sqlite": f"sqlite:///{tmp_path / 'c.db'}"}.get(where)
    url = url or str(request.getfixturevalue("pg_url"))
    clock = kind()
    mem = Memory(url, embedder="hashing", background=False, clock=clock)
    try:
        mem.add_message(ALICE, "user", "I live in Paris and I love green tea")
        mem.clock.advance(minutes=5)  # type: ignore[attr-defined]  # the caller's own method
        mem.add(ALICE, "a note said earlier", observed_at=datetime(2026, 1, 1, tzinfo=UTC))
        assert mem.search(ALICE.user_scope, "green tea")
        assert "green tea" in mem.build_context(ALICE, "what do I love?").text
        mem.end_session(ALICE)
        mem.maintain(ALICE.user_scope)
        records = mem.list(ALICE.user_scope)
        assert records and all(r.created_at.tzinfo is UTC for r in records), records
        turn = next(r for r in records if r.type.value == "message")
        assert turn.observed_at == T0.replace(tzinfo=UTC)
    finally:
        mem.close()


def test_a_clock_that_gives_no_datetime() -> None:
    class Text:
        def now(self) -> str:
            return "2026-05-01T18:00:00Z"

    mem = Memory("memory://", embedder="hashing", background=False, clock=Text())  # type: ignore[arg-type]
    try:
        with pytest.raises(ValidationError, match=r"Text.now\(\) returned str, not a datetime"):
            mem.add(ALICE, "a note")
        assert mem.list(ALICE) == []
    finally:
        mem.close()
