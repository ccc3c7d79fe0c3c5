"""A move the user plans is a fact of its own; where they live stays as it is.

"I'm moving to Porto next month" said nothing to the profile before (the demo's profile
kept `location: Lisbon` with no trace of the move). Now it is `moving_to: Porto, next
month`, dated by the turn like every fact, and `location` changes when the user says they
moved.
"""

from __future__ import annotations

import pytest

from memstrata import Memory, Scope
from memstrata.filters import Filters
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


def _tell(mem: Memory, scope: Scope, text: str) -> None:
    mem.add_message(scope, "user", text)
    mem.end_session(scope)


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
    assert _current(mem)["location"] == "location: Porto"
