"""With the memory's clock in the last minutes of 31 December 9999 (a time every write
accepts), what is scheduled after now stops at the calendar's end instead of overflowing:
``flush`` (its horizon of delayed jobs), a claim's lease, a maintenance cycle, a daily
quota's reset. Each of them raised a bare ``OverflowError`` ("date value out of range")
before session 27 (audit26 found ``flush``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.quotas import Quota, Quotas

U = Scope("acme", "u1", session="s1")
LAST = datetime(9999, 12, 31, 23, 59, 30, tzinfo=UTC)
END = datetime.max.replace(tzinfo=UTC)


def test_flush_in_the_last_minute_of_the_calendar(mem: Memory, clock: FixedClock) -> None:
    clock.set(LAST)
    mem.add_message(U, "user", "I moved to Lisbon in May")
    mem.add_message(U, "assistant", "Lisbon is lovely in spring")
    report = mem.flush()
    assert report.done > 0 and not report.failed
    assert mem.store.list_jobs("acme", "u1", status="pending") == []
    assert mem.search(U, "Lisbon")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_maintenance_and_quotas_in_the_last_minute(kind: str, tmp_path: Path) -> None:
    url = "memory://" if kind == "memory" else f"sqlite:///{tmp_path / 'm.db'}"
    with Memory(
        url,
        embedder="hashing",
        clock=FixedClock(LAST),
        background=False,
        maintenance_every=timedelta(days=1),
        quotas=Quotas(per_user=Quota(embeddings_per_day=1000)),
    ) as mem:
        mem.add_message(U, "user", "I moved to Lisbon in May")  # a daily quota's reset
        mem.end_session(U)  # the next maintenance: a day from now
        pending = mem.store.list_jobs("acme", "u1", status="pending")
        assert [j.run_after for j in pending if j.kind == "maintain"] == [END]


def test_later_stops_at_the_calendar_end() -> None:
    from memstrata.clock import later

    assert later(LAST, timedelta(seconds=10)) == LAST + timedelta(seconds=10)
    assert later(LAST, timedelta(seconds=30)) == END
    assert later(LAST, timedelta(days=3650)) == END
    assert later(datetime(2026, 1, 1, tzinfo=UTC), timedelta(days=1)).day == 2
