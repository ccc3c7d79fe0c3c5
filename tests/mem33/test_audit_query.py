"""``InMemoryAudit.query_audit`` (memory://'s audit log) walks the shortest lane its
filters name between its time bounds and cursor, not every event of the tenant sorted
(mem33), with the results of the sort it was (tests/mem33/oracle.py ``OldAudit``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.audit_backends import InMemoryAudit
from memstrata.audit_types import PURGED, AuditEvent, AuditQuery
from memstrata.errors import NotFoundError
from memstrata.store.memory import InMemoryStore
from memstrata.store.memory_dump import load_audit

from .oracle import OldAudit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NAMES = ["ann", "bob", "carol", PURGED]
PLUS2 = timezone(timedelta(hours=2))


def _event(n: int, tenant: str, user: str | None, actor: str, **kw: Any) -> AuditEvent:
    return AuditEvent(
        id=kw.pop("id", f"e{n}"),
        tenant=tenant,
        actor=actor,
        action=kw.pop("action", "add"),
        at=kw.pop("at", T0 + timedelta(seconds=n)),
        user=user,
        record_ids=kw.pop("record_ids", (f"r{n}",)),
        **kw,
    )


class CountingList(list):  # type: ignore[type-arg]
    """The log's list, counting the events read out of it by position or by a walk."""

    read = 0

    def __iter__(self) -> Any:
        for e in super().__iter__():
            CountingList.read += 1
            yield e

    def __getitem__(self, i: Any) -> Any:
        CountingList.read += 1
        return super().__getitem__(i)


def _events_read(others: int) -> list[int]:
    """Events read by five queries of ann's (a page of her newest, her oldest, after a
    cursor, one action of hers, one record of hers) beside ``others`` of 50 other users of
    her tenant and of another tenant, ann's 30 among them."""
    log = InMemoryAudit(in_transactions=True)
    log._events = CountingList()
    events = []
    for i in range(others):
        if i % (others // 30) == 0 and i // (others // 30) < 30:
            who, tenant = "ann", "acme"
        else:
            who, tenant = f"other{i % 50}", ("acme", "beta")[i % 2]
        action = "set_access" if i % 7 == 0 else "add"
        events.append(_event(i, tenant, who, who, action=action))
    log.append_audit(events)
    mine = [e for e in events if e.user == "ann"]
    queries = [
        AuditQuery(user="ann", since=mine[-5].at),  # her newest 5
        AuditQuery(user="ann", limit=5),
        AuditQuery(user="ann", after=mine[10].id, limit=5),
        AuditQuery(user="ann", action="set_access", limit=3),
        AuditQuery(user="ann", record_id=mine[3].record_ids[0]),
    ]
    read = []
    for q in queries:
        CountingList.read = 0
        got = log.query_audit("acme", q)
        assert got and all(e.user == "ann" for e in got)
        read.append(CountingList.read)
    return read


def test_a_users_pages_read_their_events_not_the_logs() -> None:
    # Before (every event of the tenant sorted): 1,000 / 10,000 read by each query (the
    # sort walks the list); now what each page walks at both sizes: 5, 5, 5 and the
    # cursor's 2, her first 15 for her first 3 set_access events, her 30 (a record's
    # events are found in its user's lane: the walk ends at the lane's end, no limit met).
    small, large = _events_read(1_000), _events_read(10_000)
    assert small == large
    assert max(small) <= 30


def test_an_after_cursor_of_another_tenant_or_none_is_not_found() -> None:
    log = InMemoryAudit()
    log.append_audit([_event(0, "acme", "ann", "ann"), _event(1, "beta", "bob", "bob")])
    with pytest.raises(NotFoundError):
        log.query_audit("acme", AuditQuery(after="e1"))
    with pytest.raises(NotFoundError):
        log.query_audit("acme", AuditQuery(after="nope"))
    assert log.query_audit("acme", AuditQuery(after="e0")) == []


# Times tie, come out of order and carry another offset (the same instant compares equal).
at_st = st.one_of(
    st.integers(0, 6).map(lambda s: T0 + timedelta(seconds=s)),
    st.integers(0, 6).map(lambda s: (T0 + timedelta(seconds=s)).astimezone(PLUS2)),
)
event_st: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {
        "tenant": st.sampled_from(["acme", "beta"]),
        "user": st.one_of(st.none(), st.sampled_from(NAMES)),
        "actor": st.sampled_from([*NAMES, "user:ann"]),
        "action": st.sampled_from(["add", "set_access", "purge"]),
        "at": at_st,
        "records": st.lists(st.sampled_from(["r1", "r2", "r3"]), max_size=3),
        "readers": st.one_of(st.none(), st.lists(st.sampled_from(NAMES), max_size=2)),
        "id": st.one_of(st.none(), st.sampled_from(["dup1", "dup2"])),  # ids held twice
    }
)
query_st = st.builds(
    AuditQuery,
    user=st.one_of(st.none(), st.sampled_from(NAMES)),
    action=st.one_of(st.none(), st.sampled_from(["add", "set_access"])),
    actor=st.one_of(st.none(), st.sampled_from([*NAMES, "user:ann"])),
    record_id=st.one_of(st.none(), st.sampled_from(["r1", "r2", "nope"])),
    since=st.one_of(st.none(), at_st),
    until=st.one_of(st.none(), at_st),
    limit=st.integers(1, 6),
)
cursor_st = st.one_of(st.none(), st.sampled_from(["e0", "e3", "e7", "dup1", "dup2", "nope"]))
step_st = st.one_of(
    st.tuples(st.just("append"), st.lists(event_st, max_size=4)),
    st.tuples(st.just("redact"), st.sampled_from(["acme", "beta"]), st.sampled_from(NAMES)),
    st.tuples(
        st.just("query"),
        st.sampled_from(["acme", "beta"]),
        query_st,
        st.integers(0, 3),
        cursor_st,
    ),
)


def _answer(log: Any, tenant: str, q: AuditQuery) -> Any:
    try:
        return log.query_audit(tenant, q)
    except NotFoundError as exc:
        return str(exc)


@settings(max_examples=400, deadline=None)
@given(st.lists(step_st, max_size=25))
def test_queries_as_the_sort_of_every_event(steps: list[Any]) -> None:
    new, old = InMemoryAudit(in_transactions=True), OldAudit(in_transactions=True)
    n = 0
    for step in steps:
        if step[0] == "append":
            batch = []
            for spec in step[1]:
                readers = spec["readers"]
                batch.append(
                    _event(
                        n,
                        spec["tenant"],
                        spec["user"],
                        spec["actor"],
                        action=spec["action"],
                        at=spec["at"],
                        record_ids=tuple(spec["records"]),
                        details={} if readers is None else {"allowed_users": readers},
                        **({} if spec["id"] is None else {"id": spec["id"]}),
                    )
                )
                n += 1
            new.append_audit(batch)
            old.append_audit(batch)
        elif step[0] == "redact":
            assert new.redact_subject(step[1], step[2]) == old.redact_subject(step[1], step[2])
        else:
            _, tenant, q, offset, after = step
            for query in (
                q,
                AuditQuery(**{**_fields(q), "offset": offset}),
                AuditQuery(**{**_fields(q), "after": after}) if after else q,
            ):
                assert _answer(new, tenant, query) == _answer(old, tenant, query)
        assert new._events == old._events
    # the lanes hold every event's place where a lane built afresh would
    fresh = InMemoryAudit()
    fresh.append_audit(new._events)
    assert new._lanes == fresh._lanes


def _fields(q: AuditQuery) -> dict[str, Any]:
    return {
        name: getattr(q, name)
        for name in ("user", "action", "actor", "record_id", "since", "until", "limit")
    }


def test_a_loaded_log_is_queried_and_paged() -> None:
    # A dump's events (load_audit, store/memory_dump.py) are placed in the lanes as appended.
    s = InMemoryStore()
    events = [_event(i, "acme", "ann" if i % 2 else "bob", "x") for i in range(6)]
    assert load_audit(s, events[::-1]) == 6  # loaded newest first: placed by time
    got = s.audit_log.query_audit("acme", AuditQuery(user="ann"))
    assert [e.id for e in got] == ["e1", "e3", "e5"]
    after = s.audit_log.query_audit("acme", AuditQuery(user="ann", after="e1", limit=1))
    assert [e.id for e in after] == ["e3"]
    s.purge_user("acme", "ann")
    assert s.audit_log.query_audit("acme", AuditQuery(user="ann")) == []
    assert len(s.audit_log.query_audit("acme", AuditQuery(actor="x"))) == 6
