"""``InMemoryAudit.redact_subject`` (a whole-user purge's redaction of the memory:// audit
log) looks at the user's events only, with the results of the walk of every event it was
(tests/mem32b/oracle.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.audit_backends import InMemoryAudit
from memstrata.audit_types import PURGED, AuditEvent

from .oracle import WalkedAudit

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NAMES = ["ann", "bob", "carol", "joanna", PURGED, "system:maintenance"]


class CountingList(list):  # type: ignore[type-arg]
    """The log's list, counting the events read out of it."""

    read = 0

    def __iter__(self) -> Any:
        for e in super().__iter__():
            CountingList.read += 1
            yield e

    def __getitem__(self, i: Any) -> Any:
        CountingList.read += 1
        return super().__getitem__(i)


def _event(n: int, tenant: str, user: str | None, actor: str, **kw: Any) -> AuditEvent:
    return AuditEvent(
        id=f"e{n}",
        tenant=tenant,
        actor=actor,
        action=kw.pop("action", "add"),
        at=T0 + timedelta(seconds=n),
        user=user,
        record_ids=(f"r{n}",),
        **kw,
    )


def _events_read(others: int) -> int:
    log = InMemoryAudit(in_transactions=True)
    log._events = CountingList()
    events = [_event(i, "acme", f"other{i % 50}", f"other{i % 50}") for i in range(others)]
    events += [_event(others + i, "acme", "ann", "ann") for i in range(10)]
    events.append(_event(others + 10, "acme", "bob", "ann"))  # acted in by ann
    events.append(
        _event(
            others + 11,
            "acme",
            "bob",
            "bob",
            action="set_access",
            details={"allowed_users": ["ann", "carol"]},
        )
    )
    log.append_audit(events)
    CountingList.read = 0
    assert log.redact_subject("acme", "ann") == 12
    return CountingList.read


def test_redaction_reads_the_users_events_only() -> None:
    # Before (the walk of every event): 1,012 vs 10,012 read; now the user's 12 at both.
    small, large = _events_read(1_000), _events_read(10_000)
    assert small == large == 12


event_st: st.SearchStrategy[dict[str, Any]] = st.builds(
    dict,
    tenant=st.sampled_from(["acme", "other"]),
    user=st.one_of(st.none(), st.sampled_from(NAMES)),
    actor=st.sampled_from([*NAMES, "user:ann", "ann-bot"]),
    action=st.sampled_from(["add", "set_access", "purge"]),
    readers=st.one_of(
        st.none(),
        st.lists(st.sampled_from(NAMES), max_size=3),
        st.just("ann"),  # not a list: left alone
    ),
)
step_st = st.one_of(
    st.tuples(st.just("append"), st.lists(event_st, max_size=4)),
    st.tuples(st.just("redact"), st.sampled_from(["acme", "other"]), st.sampled_from(NAMES)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(step_st, max_size=25))
def test_redaction_as_the_walk_of_every_event(steps: list[Any]) -> None:
    new, old = InMemoryAudit(in_transactions=True), WalkedAudit(in_transactions=True)
    n = 0
    for step in steps:
        if step[0] == "append":
            batch = []
            for spec in step[1]:
                details = {} if spec["readers"] is None else {"allowed_users": spec["readers"]}
                batch.append(
                    _event(
                        n,
                        spec["tenant"],
                        spec["user"],
                        spec["actor"],
                        action=spec["action"],
                        details=details,
                    )
                )
                n += 1
            new.append_audit(batch)
            old.append_audit(batch)
        else:
            _, tenant, user = step
            assert new.redact_subject(tenant, user) == old.redact_subject(tenant, user)
        assert new._events == old._events


def test_a_loaded_log_is_redacted() -> None:
    # A dump's events (load_audit, store/memory_dump.py) are filed by subject as appended.
    from memstrata.store.memory import InMemoryStore
    from memstrata.store.memory_dump import load_audit

    s = InMemoryStore()
    events = [_event(0, "acme", "ann", "user:ann"), _event(1, "acme", "bob", "ann")]
    assert load_audit(s, events) == 2
    assert s.audit_log.redact_subject("acme", "ann") == 2
    assert [(e.user, e.actor) for e in s.audit_log._events] == [(None, PURGED), ("bob", PURGED)]
