"""kill -9 in the middle of a maintenance pass with retention (``mem.maintain(scope,
retention=Retention.seed_002())``), on SQLite and PostgreSQL. Retention purges for real,
and the pass wrote its audit events only at its end: a pass killed after its purge left
100 turns destroyed and no event naming them. Now the purge's events are appended before
the purge, so every turn gone has its event; a second pass finishes the work."""

from __future__ import annotations

import signal
from datetime import UTC, datetime

import pytest

from memstrata import FixedClock, Memory
from memstrata.filters import Filters
from memstrata.maintenance import Retention
from memstrata.records import RecordType

from .child import VICTIM
from .kill import run

TURNS = 120


def _fill(url: str) -> set[str]:
    """Turns summarised in 2020: retention (30 days after a summary) purges most of them."""
    clock = FixedClock(datetime(2020, 1, 1, tzinfo=UTC))
    with Memory(url, embedder="hashing", background=False, clock=clock) as mem:
        ids = set()
        for i in range(TURNS):
            role = "user" if i % 2 == 0 else "assistant"
            ids.add(mem.add_message(VICTIM, role, f"turn {i}: walking my dog Rex{i:03d}").id)
            clock.advance(minutes=1)
        mem.flush()
    return ids


def _turns(mem: Memory) -> set[str]:
    flt = Filters(types=frozenset({RecordType.MESSAGE}), include_deleted=True)
    return {r.id for r in mem.list(VICTIM.user_scope, filters=flt, limit=10_000)}


def _audited_purges(mem: Memory) -> list[str]:
    return [i for e in mem.audit.query("acme", action="purge") for i in e.record_ids]


GATES = [
    "call:memstrata.search.reply_terms.purge_records@1",  # decided, nothing purged yet
    "after:memstrata.search.reply_terms.purge_records@1",  # purged, pass not ended
    "call:memstrata.maintenance._audit_report@1",  # everything done but its report
]


@pytest.mark.parametrize("gate", GATES)
def test_a_killed_retention_pass_loses_no_purge_from_the_audit(url: str, gate: str) -> None:
    turns = _fill(url)
    assert run(url, gate, "maintain") == -signal.SIGKILL
    with Memory(url, embedder="hashing", background=False) as mem:
        gone = turns - _turns(mem)
        assert _turns(mem) <= turns  # nothing else changed
        if gate.startswith("after"):
            assert gone  # the kill came after the purge
        assert gone <= set(_audited_purges(mem))  # every turn gone has its event
        mem.maintain(VICTIM, retention=Retention.seed_002())  # a second pass finishes
        left = _turns(mem)
        assert len(turns - left) == 100
        assert turns - left <= set(_audited_purges(mem))


def test_a_retention_purge_that_fails_says_so_after_its_events(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The events come first, so a purge that then fails (not a kill: an error) is
    followed by a ``purge_failed`` event naming the same records, and nothing is purged."""
    import memstrata.search.reply_terms as reply_terms
    from memstrata.errors import StoreError

    def refused(*args: object, **kwargs: object) -> None:
        raise StoreError("the store went away")

    turns = _fill(url)
    monkeypatch.setattr(reply_terms, "purge_records", refused)
    with Memory(url, embedder="hashing", background=False) as mem:
        with pytest.raises(StoreError, match="went away"):
            mem.maintain(VICTIM, retention=Retention.seed_002())
        assert _turns(mem) == turns
        (failed,) = mem.audit.query("acme", action="purge_failed")
        assert sorted(failed.record_ids) == sorted(_audited_purges(mem))
        assert "went away" in (failed.reason or "")
