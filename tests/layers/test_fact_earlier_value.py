"""A value said before the key's current value began (older turns replayed after newer
ones: a backfill of last year's chats, an import of sessions out of order) goes into the
key's history for the time it held, and the current value stays current.

Before (noticed in session 21's note: "facts replaced out of order valid_to < valid_from"):
a more confident older statement replaced the current value — "We just moved to Kyoto"
said in 2023 and ingested after "We live in Lyon" said in 2024 left the profile at Kyoto —
and the value it replaced ended before it had begun."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata import Filters, Memory, RecordType, Scope
from memstrata.layers.semantic_types import FactAction

ALICE = Scope("acme", "alice")
DAY0 = datetime(2023, 1, 1, tzinfo=UTC)


def _fact(value: str, confidence: float) -> dict[str, Any]:
    return {"category": "location", "key": "location", "value": value, "confidence": confidence}


def _at(day: int) -> datetime:
    return DAY0 + timedelta(days=day)


def _spans(mem: Memory) -> list[tuple[str, datetime | None, datetime | None]]:
    """Each record of the key as it stands: value, valid from, valid to; by start."""
    records = mem.list(
        ALICE, filters=Filters(types={RecordType.FACT}, include_superseded=True), limit=1000
    )
    return sorted(
        (
            (str(r.content.structured["value"]), r.valid_from, r.valid_to)
            for r in records
            if r.metadata.get("key") == "location"
        ),
        key=lambda s: s[1] or DAY0,
    )


@pytest.fixture(params=["memory", "sqlite"])
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'm.db'}"
    m = Memory(url, embedder="hashing", background=False)
    yield m
    m.close()


def test_an_earlier_value_goes_into_the_history(mem: Memory) -> None:
    kyoto = mem.facts.upsert(ALICE, _fact("Kyoto", 0.7), observed_at=_at(400))
    out = mem.facts.upsert(ALICE, _fact("Paris", 0.9), observed_at=_at(0))
    assert out.action is FactAction.EARLIER
    assert out.record.id == kyoto.record.id  # the current fact afterwards
    paris = out.previous
    assert paris is not None and paris.superseded_by == kyoto.record.id
    assert (paris.valid_from, paris.valid_to) == (_at(0), _at(400))
    current = mem.facts.get(ALICE, "location")
    assert current is not None and current.content.structured["value"] == "Kyoto"
    assert [v.content.structured["value"] for v in mem.facts.history(ALICE, "location")] == [
        "Kyoto",
        "Paris",
    ]
    then = mem.list(ALICE, filters=Filters(types={RecordType.FACT}, valid_at=_at(100)))
    assert [r.content.structured["value"] for r in then] == ["Paris"]
    assert _spans(mem) == [("Paris", _at(0), _at(400)), ("Kyoto", _at(400), None)]


def test_a_value_between_two_ends_the_one_before_it(mem: Memory) -> None:
    mem.facts.upsert(ALICE, _fact("Lyon", 0.6), observed_at=_at(0))
    mem.facts.upsert(ALICE, _fact("Oslo", 0.7), observed_at=_at(200))
    assert mem.facts.upsert(ALICE, _fact("Faro", 0.8), observed_at=_at(100)).action == "earlier"
    assert _spans(mem) == [
        ("Lyon", _at(0), _at(100)),
        ("Faro", _at(100), _at(200)),
        ("Oslo", _at(200), None),
    ]
    lyon = next(v for v in mem.facts.history(ALICE, "location") if v.valid_to == _at(200))
    assert lyon.content.structured["value"] == "Lyon"  # its earlier end, kept as a version


def test_a_value_said_before_the_current_one_was_confirmed_is_a_conflict(mem: Memory) -> None:
    mem.facts.upsert(ALICE, _fact("Oslo", 0.5), observed_at=_at(0))
    mem.facts.upsert(ALICE, _fact("Oslo", 0.5), observed_at=_at(200))  # confirmed later
    out = mem.facts.upsert(ALICE, _fact("Lyon", 0.9), observed_at=_at(100))
    assert out.action is FactAction.CONFLICT
    assert out.record.content.structured["value"] == "Oslo"
    [conflict] = out.record.content.structured["conflicts"]
    assert (conflict["value"], conflict["observed_at"]) == ("Lyon", _at(100).isoformat())


def test_turns_replayed_out_of_order_keep_the_latest_value_current(mem: Memory) -> None:
    mem.add_message(
        Scope("acme", "alice", session="s2"), "user", "We live in Lyon.", observed_at=_at(500)
    )
    mem.add_message(
        Scope("acme", "alice", session="s1"), "user", "We just moved to Kyoto!", observed_at=_at(0)
    )
    mem.flush()
    current = mem.facts.get(ALICE, "location")
    assert current is not None and current.content.structured["value"] == "Lyon"
    assert ("Kyoto", _at(0), _at(500)) in _spans(mem)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["Lyon", "Oslo", "Faro", "Kyoto"]), st.integers(0, 1000)),
        min_size=1,
        max_size=8,
        unique_by=lambda op: op[1],  # distinct days: the latest day is the current value
    )
)
def test_any_order_leaves_the_latest_value_current_and_spans_that_meet(
    ops: list[tuple[str, int]],
) -> None:
    with Memory("memory://", embedder="hashing", background=False) as mem:
        for i, (value, day) in enumerate(ops):  # each surer than the last: none a conflict
            mem.facts.upsert(ALICE, _fact(value, 0.1 + 0.1 * i), observed_at=_at(day))
        current = mem.facts.get(ALICE, "location")
        assert current is not None
        assert current.content.structured["value"] == max(ops, key=lambda op: op[1])[0]
        spans = _spans(mem)
        assert spans[-1][2] is None  # the current value has no end
        for (_, start, end), (_, nxt, _) in zip(spans, spans[1:], strict=False):
            assert start is not None and end == nxt and start < end  # no gap, no overlap
