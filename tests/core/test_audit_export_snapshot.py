"""An audit export (``AuditLog.iter_all`` / ``export``) walks the log by its order,
``(at, seq)``, not by offset: an event appended meanwhile with an earlier time (another
process's clock) cannot repeat one, and a purge's redaction that takes events out of the
filter cannot skip one that still matches.

Before, ``iter_all`` read pages of 1,000 by offset; both writes shifted the offsets under
the second page. Each test runs the write right after the walk's first page."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest

from memstrata import Memory
from memstrata.errors import NotFoundError, ValidationError

_N = 1_200  # more than one page of 1,000
_TENANT = "acme"


def _append(mem: Memory, n: int, **fields: object) -> list[str]:
    events = [
        mem.audit.event(_TENANT, "system:test", "note", reason=f"event {i}", **fields)  # type: ignore[arg-type]
        for i in range(n)
    ]
    mem.audit.append(events)
    return [e.id for e in events]


def _walk(events: Iterator[object], after_page: Callable[[], None]) -> list[str]:
    ids: list[str] = []
    for event in events:
        ids.append(event.id)  # type: ignore[attr-defined]
        if len(ids) == 1_000:  # the first page is consumed: write before the next read
            after_page()
    return ids


def test_an_event_appended_with_an_earlier_time_repeats_none(mem: Memory) -> None:
    before = _append(mem, _N)
    early = datetime(2001, 1, 1, tzinfo=UTC)  # sorts before every event of the log

    def skewed_append() -> None:
        mem.audit.append([mem.audit.event(_TENANT, "system:other-host", "note", at=early)])

    walked = _walk(mem.audit.iter_all(_TENANT), skewed_append)
    assert len(walked) == len(set(walked)), "an event was exported twice"
    assert set(before) <= set(walked)


def test_a_redaction_during_a_filtered_export_skips_no_matching_event(mem: Memory) -> None:
    alice = _append(mem, 600, user="alice", record_ids=["shared"])
    bob = _append(mem, _N - 600, user="bob", record_ids=["shared"])

    walked = _walk(
        mem.audit.iter_all(_TENANT, record_id="shared"),
        lambda: mem.audit.redact_subject(_TENANT, "alice"),  # alice's events lose the id
    )
    assert set(bob) <= set(walked), f"{len(set(bob) - set(walked))} of bob's events skipped"
    assert set(walked) <= set(alice) | set(bob)
    assert len(walked) == len(set(walked))


def test_export_writes_every_event_once(mem: Memory) -> None:
    ids = _append(mem, _N)
    buf = io.StringIO()
    assert mem.audit.export(_TENANT, buf) == _N
    assert [json.loads(line)["id"] for line in buf.getvalue().splitlines()] == ids


def test_after_pages_in_log_order(mem: Memory) -> None:
    ids = _append(mem, 25)
    first = mem.audit.query(_TENANT, limit=10)
    rest = mem.audit.query(_TENANT, after=first[-1].id, limit=100)
    assert [e.id for e in first + rest] == ids
    assert mem.audit.query(_TENANT, after=ids[-1]) == []


def test_after_an_unknown_or_another_tenants_event_is_refused(mem: Memory) -> None:
    _append(mem, 3)
    other = mem.audit.record("globex", "system:test", "note")
    with pytest.raises(NotFoundError, match="audit event"):
        mem.audit.query(_TENANT, after="no-such-event")
    with pytest.raises(NotFoundError, match="audit event"):  # the same answer as a missing one
        mem.audit.query(_TENANT, after=other.id)
    with pytest.raises(ValidationError, match="after"):
        mem.audit.query(_TENANT, after=5)
    with pytest.raises(ValidationError, match="after"):
        mem.audit.query(_TENANT, after="x", offset=3)
