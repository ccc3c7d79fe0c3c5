"""A query of memory://'s audit log by record id reads the events naming the record, not
the tenant's lane (mem34: ``InMemoryAudit._by_record``, the positions of the events naming
each id), with the results of the sort of every event it was (tests/mem33/oracle.py
``OldAudit``)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.mem33.oracle import OldAudit
from tests.mem33.test_audit_query import (
    NAMES,
    CountingList,
    _answer,
    _event,
    _fields,
    at_st,
    cursor_st,
    event_st,
)

from memstrata.audit_backends import InMemoryAudit
from memstrata.audit_types import AuditQuery
from memstrata.store.memory import InMemoryStore
from memstrata.store.memory_dump import load_audit


def _events_read(others: int) -> list[int]:
    """Events read by queries of one record's events (by id alone, by id and its user, an
    id no event names, an id of another tenant's) beside ``others`` events of 50 users
    of two tenants, each naming a record of its own; the record ``r7`` is named by 4."""
    log = InMemoryAudit(in_transactions=True)
    log._events = CountingList()
    events = [_event(i, ("acme", "beta")[i % 2], f"u{i % 50}", f"u{i % 50}") for i in range(others)]
    for k in range(1, 4):  # r7's later events: a change, a deletion, a purge of it
        at = others * k // 4
        action = ("update", "delete", "purge")[k - 1]
        events[at] = _event(at, "beta", "u7", "u7", action=action, record_ids=("r7", "rx"))
    log.append_audit(events)
    queries = [
        ("beta", AuditQuery(record_id="r7")),
        ("beta", AuditQuery(user="u7", record_id="r7")),
        ("beta", AuditQuery(record_id="nothing")),
        ("acme", AuditQuery(record_id="r7")),
    ]
    read = []
    for tenant, q in queries:
        CountingList.read = 0
        got = log.query_audit(tenant, q)
        assert len(got) == (4 if q.record_id == "r7" and tenant == "beta" else 0)
        read.append(CountingList.read)
    return read


def test_a_records_events_are_read_not_the_tenants() -> None:
    # Before (the tenant's lane, or the user's when the query names one, walked): 503 /
    # 5,003 events read by the query by id alone, 23 / 203 by id and user, 503 / 5,003 for
    # an id no event names, 497 / 4,997 for another tenant's; now 8, 8, 0 and 4 at both
    # sizes (the record's 4 events, each read for its tenant and time, then by the walk).
    small, large = _events_read(1_000), _events_read(10_000)
    assert small == large
    assert max(small) <= 12


query_st = st.builds(
    AuditQuery,
    user=st.one_of(st.none(), st.sampled_from(NAMES)),
    action=st.one_of(st.none(), st.sampled_from(["add", "set_access"])),
    actor=st.one_of(st.none(), st.sampled_from([*NAMES, "user:ann"])),
    record_id=st.sampled_from(["r1", "r2", "r3", "nope"]),  # always: what this tests
    since=st.one_of(st.none(), at_st),
    until=st.one_of(st.none(), at_st),
    limit=st.integers(1, 6),
)
step_st = st.one_of(
    st.tuples(st.just("append"), st.lists(event_st, max_size=4)),
    st.tuples(st.just("redact"), st.sampled_from(["acme", "beta"]), st.sampled_from(NAMES)),
    st.tuples(st.just("load"), st.lists(event_st, max_size=3)),
    st.tuples(
        st.just("query"),
        st.sampled_from(["acme", "beta"]),
        query_st,
        st.integers(0, 3),
        cursor_st,
    ),
)


def _batch(specs: list[dict[str, Any]], n: int) -> list[Any]:
    out = []
    for k, spec in enumerate(specs):
        readers = spec["readers"]
        out.append(
            _event(
                n + k,
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
    return out


@settings(max_examples=400, deadline=None)
@given(st.lists(step_st, max_size=25))
def test_queries_by_record_as_the_sort_of_every_event(steps: list[Any]) -> None:
    store = InMemoryStore()
    new, old = store.audit_log, OldAudit(in_transactions=True)
    n = 0
    for step in steps:
        if step[0] == "append":
            batch = _batch(step[1], n)
            n += len(batch)
            new.append_audit(batch)
            old.append_audit(batch)
        elif step[0] == "load":  # a dump's events: held ids skipped (memory_dump.py)
            batch = [e for e in _batch(step[1], n) if e.id not in old._ids]
            n += len(step[1])
            batch = [e for i, e in enumerate(batch) if e.id not in {x.id for x in batch[:i]}]
            load_audit(store, batch)
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
    # each record id's positions: those of the events that named it when appended
    named: dict[str, list[int]] = {}
    for i, e in enumerate(old._events):
        for rid in e.record_ids:
            named.setdefault(rid, []).append(i)
    kept = {
        rid: [first, *new._more_by_record.get(rid, ())] for rid, first in new._by_record.items()
    }
    assert all(set(named[rid]) <= set(kept[rid]) for rid in named)
