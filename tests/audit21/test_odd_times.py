"""Odd times on the time parameters audit20 did not reach: the audit log's ``since`` and
``until``. Every other time parameter (``observed_at``, the filters' ``observed_after`` /
``observed_before`` / ``valid_at``, ``maintain(now=)``, a fact's ``expires_at``) takes a
datetime, a date or an ISO-8601 string and refuses a time with no UTC equivalent in years
1-9999 with a ``ValidationError``. The audit query took only a datetime, and one past year
9999 (or before year 1) in UTC raised a bare ``OverflowError``: a 500 over HTTP."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from memstrata import Memory, Scope, ValidationError
from server.conftest import Served

ALICE = Scope("acme", "alice", session="s1")
PLUS_14 = timezone(timedelta(hours=14))
MINUS_12 = timezone(timedelta(hours=-12))


@pytest.fixture
def mem(tmp_path: Path) -> Memory:
    m = Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", background=False)
    rec = m.add(ALICE, "Alice keeps bees in Porto")
    m.delete(ALICE, rec.id)  # one audit event, at the clock's now
    return m


@pytest.mark.parametrize("name", ["since", "until"])
@pytest.mark.parametrize(
    "when",
    [
        datetime(1, 1, 1, 0, 0, tzinfo=PLUS_14),  # before year 1 in UTC
        datetime(9999, 12, 31, 23, 0, tzinfo=MINUS_12),  # after year 9999 in UTC
        "0001-01-01T00:00:00+14:00",
        "2016-12-31T23:59:60Z",  # a leap second: Python has none
        "yesterday",
    ],
)
def test_an_audit_time_out_of_range_is_a_validation_error(
    mem: Memory, name: str, when: object
) -> None:
    with pytest.raises(ValidationError, match=f"audit query {name}"):
        mem.audit.query("acme", **{name: when})
    mem.close()


@pytest.mark.parametrize(
    ("since", "until", "found"),
    [
        (datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC), 1),
        ("1969-07-20T20:17:00+00:00", "9999-12-31T23:59:59.999999Z", 1),
        (date(1970, 1, 1), None, 1),  # a date: its midnight UTC
        (datetime(1969, 12, 31, 23, 59), None, 1),  # naive: UTC
        (None, datetime(1969, 12, 31, 23, 59), 0),
        # a time in a DST gap (02:30 does not exist in Berlin that night) or a repeated one
        (datetime(2024, 3, 31, 2, 30, tzinfo=ZoneInfo("Europe/Berlin")), None, 1),
        (None, datetime(2024, 10, 27, 2, 30, fold=1, tzinfo=ZoneInfo("Europe/Berlin")), 0),
    ],
)
def test_audit_times_take_what_every_other_time_parameter_takes(
    mem: Memory, since: object, until: object, found: int
) -> None:
    # the memory's clock is the system's: its one event is now (after 2024)
    assert len(mem.audit.query("acme", since=since, until=until)) == found
    mem.close()


def test_an_audit_time_out_of_range_over_http_is_a_422(served: Served) -> None:
    h = served.h(served.admin)
    for query in ("since=0001-01-01T00:00:00%2B14:00", "until=9999-12-31T23:00:00-12:00"):
        r = served.client.get(f"/v1/audit?{query}", headers=h)
        assert r.status_code == 422, r.text
        assert "audit query" in r.json()["error"]["message"]


ODD = [
    "0001-01-01T00:00:00+14:00",  # before year 1 in UTC
    "9999-12-31T23:00:00-12:00",  # after year 9999 in UTC
    "2016-12-31T23:59:60Z",  # a leap second
    "2024-02-30T00:00:00Z",  # no such day
]


@pytest.mark.parametrize("when", ODD)
def test_odd_times_in_bodies_are_a_422_naming_the_field(served: Served, when: str) -> None:
    h = served.h(served.admin)
    calls = [
        ("/v1/users/alice/memories", {"content": "Alice keeps bees", "observed_at": when}),
        ("/v1/users/alice/search", {"query": "bees", "filters": {"observed_after": when}}),
        ("/v1/users/alice/search", {"query": "bees", "filters": {"valid_at": when}}),
        (
            "/v1/users/alice/facts",
            {"category": "identity", "key": "pet", "value": "bees", "expires_at": when},
        ),
        ("/v1/users/alice/maintain", {"now": when}),
    ]
    for path, body in calls:
        r = served.client.post(path, json=body, headers=h)
        assert r.status_code == 422, (path, body, r.status_code, r.text)
        assert r.json()["error"]["code"] in ("invalid_request", "validation_error"), r.text
    assert served.client.get("/v1/users/alice/memories", headers=h).json()["items"] == []
