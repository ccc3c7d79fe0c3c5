"""A move the user plans is a fact of its own; where they live stays as it is.

"I'm moving to Porto next month" said nothing to the profile before (the demo's profile
kept `location: Lisbon` with no trace of the move). Now it is `moving_to: Porto, next
month`, dated by the turn like every fact, and `location` changes when the user says they
moved. The move carries out the plan: the plan ends, superseded by the new location (in the
transaction that stores it), and is current again if the move's turn is purged. A move
elsewhere carries out no plan, so both stay.
"""

from __future__ import annotations

import pytest

from memstrata import Memory, Scope
from memstrata.filters import Filters
from memstrata.layers.semantic_types import FactAction
from memstrata.llm.base import ExtractedFact
from memstrata.llm.fact_patterns import extract_explicit_facts
from memstrata.records import RecordType

S1, S2, S3 = (Scope("acme", "mia", session=f"s{i}") for i in (1, 2, 3))
FACTS = Filters(types=frozenset({RecordType.FACT}))


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Yes, I'm moving to Porto next month with Pixel and Byte.", "Porto, next month"),
        ("We are relocating to Berlin in May.", "Berlin, in May"),
        ("I'm going to move to Tokyo soon.", "Tokyo, soon"),
        ("I'm planning to move to New York City in 2027 for work.", "New York City, in 2027"),
        ("I'll move to Rome.", "Rome"),
        ("我下个月要搬到上海。", "上海, 下个月"),
        ("我们明年打算搬去深圳。", "深圳, 明年"),
    ],
)
def test_a_planned_move_is_read_with_when_it_happens(text: str, value: str) -> None:
    facts = extract_explicit_facts([text])
    assert [(f.category, f.key, f.value) for f in facts] == [("plan", "moving_to", value)]


@pytest.mark.parametrize(
    "text",
    [
        "I'm moving to a new apartment next week.",
        "I'm moving to the next level.",
        "我要搬到新家了。",
        "I moved to Lisbon last week.",  # done, not planned: the location
    ],
)
def test_no_place_or_a_done_move_is_no_plan(text: str) -> None:
    assert not [f for f in extract_explicit_facts([text]) if f.key == "moving_to"]


def _tell(mem: Memory, scope: Scope, text: str) -> str:
    rid = mem.add_message(scope, "user", text).id
    mem.end_session(scope)
    return rid


def _current(mem: Memory) -> dict[str, str]:
    return {str(r.content.structured["key"]): r.text for r in mem.store.list(S1.user_scope, FACTS)}


def test_the_plan_sits_beside_where_the_user_lives_until_they_move(mem: Memory) -> None:
    _tell(mem, S1, "I live in Lisbon.")
    _tell(mem, S2, "I'm moving to Porto next month with my cats.")
    assert _current(mem) == {
        "location": "location: Lisbon",
        "moving_to": "moving_to: Porto, next month",
    }
    context = mem.build_context(S2, "Where will I live?", 1000).text
    assert "moving_to: Porto, next month" in context and "location: Lisbon" in context
    _tell(mem, S3, "I moved to Porto last week.")
    assert _current(mem) == {"location": "location: Porto"}


@pytest.mark.parametrize(
    ("before", "plan", "move", "place"),
    [
        ("I live in Lisbon.", "I'm moving to Porto next month.", "I moved to Porto.", "Porto"),
        ("", "We are relocating to Berlin in May.", "We just moved to Berlin!", "Berlin"),
        ("我住在杭州。", "我下个月要搬到上海。", "我们刚搬到上海了。", "上海"),
    ],
)
def test_the_move_carries_out_the_plan_which_ends_linked_to_it(
    mem: Memory, before: str, plan: str, move: str, place: str
) -> None:
    if before:
        _tell(mem, S1, before)
    _tell(mem, S2, plan)
    planned = mem.facts.get(S2, "moving_to")
    assert planned is not None
    _tell(mem, S3, move)
    location = mem.facts.get(S3, "location")
    assert location is not None and location.content.structured["value"] == place
    assert location.content.structured["carries_out"] == planned.id
    assert mem.facts.get(S3, "moving_to") is None
    ended = mem.facts.history(S3, "moving_to")[-1]
    assert ended.superseded_by == location.id and ended.valid_to is not None
    assert ended.content.structured["value"] == planned.content.structured["value"]


def test_a_move_elsewhere_carries_out_no_plan(mem: Memory) -> None:
    _tell(mem, S1, "I'm moving to Porto next month.")
    _tell(mem, S2, "I moved to Faro last week.")
    assert _current(mem) == {
        "location": "location: Faro",
        "moving_to": "moving_to: Porto, next month",
    }
    assert "carries_out" not in mem.facts.get(S2, "location").content.structured  # type: ignore[union-attr]


def test_a_move_from_the_planned_place_is_no_next_plan(mem: Memory) -> None:
    _tell(mem, S1, "I'm moving to Porto next month.")
    _tell(mem, S2, "We moved from Porto to Faro last week.")
    assert _current(mem) == {
        "location": "location: Faro",
        "moving_to": "moving_to: Porto, next month",
    }


def test_purging_the_move_brings_back_the_plan_and_the_old_location(mem: Memory) -> None:
    _tell(mem, S1, "I live in Lisbon.")
    _tell(mem, S2, "I'm moving to Porto next month.")
    move = _tell(mem, S3, "I moved to Porto last week.")
    mem.purge(S3, [move])
    assert _current(mem) == {
        "location": "location: Lisbon",
        "moving_to": "moving_to: Porto, next month",
    }


def test_the_outcome_names_the_value_replaced_not_the_plan(mem: Memory) -> None:
    plan = ExtractedFact(
        category="plan", key="moving_to", value="Porto, next month", confidence=0.8
    )
    move = ExtractedFact(category="identity", key="location", value="Porto", confidence=0.8)
    mem.facts.upsert(S1, plan)
    first = mem.facts.upsert(S2, move)
    assert first.action is FactAction.INSERTED and first.previous is None
    assert mem.facts.get(S2, "moving_to") is None  # the plan ended all the same
    mem.facts.upsert(S2, plan)
    lisbon = mem.facts.upsert(S2, move.model_copy(update={"value": "Lisbon", "confidence": 0.99}))
    assert lisbon.previous is not None and lisbon.previous.content.structured["value"] == "Porto"
