"""Issue 7 §2: a time far from now round-trips on every store or is refused; a store never
holds a row it cannot read. After each write, every read path of the user still works."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta, timezone

import pytest

from memstrata import Memory, Scope, ValidationError
from memstrata.store.sqlite.codec import decode_time, encode_time

PLUS_14 = timezone(timedelta(hours=14))
MINUS_12 = timezone(timedelta(hours=-12))

STORABLE = [
    datetime(1, 1, 1, tzinfo=UTC),
    datetime(999, 1, 1, tzinfo=UTC),
    datetime(999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
    datetime(1000, 1, 1, tzinfo=UTC),
    datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
    datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC),
    datetime(2024, 2, 29, 12, 0),  # naive: taken as UTC
    datetime(2024, 6, 1, 0, 30, tzinfo=PLUS_14),  # another offset: stored as UTC
    datetime(2024, 6, 1, 23, 30, tzinfo=MINUS_12),
    datetime(1, 1, 1, 12, 0, tzinfo=MINUS_12),
]

UNSTORABLE = [
    datetime(1, 1, 1, 0, 0, tzinfo=PLUS_14),  # before year 1 in UTC
    datetime(9999, 12, 31, 23, 0, tzinfo=MINUS_12),  # after year 9999 in UTC
]


def _utc(when: datetime) -> datetime:
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _every_read(mem: Memory, scope: Scope) -> None:
    """Every read path of the user must still answer."""
    user = scope.user_scope
    mem.search(user, "medication dose")
    mem.search(user, "medication dose", layers="messages")
    mem.list(user, limit=1000)
    mem.list(user, filters={"observed_after": datetime(1, 1, 1, tzinfo=UTC)})
    for rec in mem.list(user, limit=1000):
        mem.get(user, rec.id)
        mem.history(user, rec.id)
    mem.build_context(scope, "what dose do I take?")
    buf = io.StringIO()
    mem.export_records(user, buf)
    assert buf.getvalue().count("\n") >= 3
    report = mem.flush()
    assert report.failed == 0 and report.retried == 0, report.errors
    assert not mem.store.list_jobs(scope.tenant, scope.user, status="failed")
    mem.stats(user)


def test_encode_time_is_fixed_width_for_every_year() -> None:
    for year in (1, 9, 99, 999, 1000, 2024, 9999):
        when = datetime(year, 3, 4, 5, 6, 7, 8, tzinfo=UTC)
        text = encode_time(when)
        assert text is not None and len(text) == len("2024-03-04T05:06:07.000008Z")
        assert decode_time(text) == when


def test_rows_written_with_an_unpadded_year_are_still_readable() -> None:
    """Files written before the fix hold ``'999-...'``; they are read, not a crash."""
    assert decode_time("999-01-01T00:00:00.000000Z") == datetime(999, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("when", STORABLE, ids=lambda w: w.isoformat())
def test_far_times_round_trip_and_every_read_works(
    mem: Memory, alice: Scope, when: datetime
) -> None:
    msg = mem.add_message(alice, "user", "I take 5 mg of the medication daily", observed_at=when)
    note = mem.add(alice, "The medication dose is 5 mg", observed_at=when, importance=0.5)
    for _ in range(12):  # enough turns for summaries, clusters and episodes to run
        mem.add_message(alice, "user", "another turn about the medication dose")
        mem.add_message(alice, "assistant", "noted, the medication dose")
    assert mem.get(alice, msg.id).observed_at == _utc(when)
    assert mem.get(alice, note.id).observed_at == _utc(when)
    _every_read(mem, alice)
    mem.end_session(alice)
    _every_read(mem, alice)


@pytest.mark.parametrize("when", UNSTORABLE, ids=lambda w: w.isoformat())
def test_times_without_a_utc_equivalent_are_refused(
    mem: Memory, alice: Scope, when: datetime
) -> None:
    with pytest.raises(ValidationError, match="observed_at"):
        mem.add_message(alice, "user", "hello", observed_at=when)
    with pytest.raises(ValidationError, match="observed_at"):
        mem.add(alice, "a note", observed_at=when)
    assert mem.list(alice.user_scope) == []
