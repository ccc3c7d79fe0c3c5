"""A user who says they left a value ("I've stopped going to Marrow & Vine; Olive Tree is my
favourite now", 我已经不去金锅小炒了，现在最喜欢巷子里火锅) updates the fact that held it, though
the new sentence names no key the old one had. Before, neither sentence matched a pattern,
and the profile kept the stale favourite as current.

- The fact that held the left value is a slot (``favorite_place_for_lasagna``): the new value
  is its next value, the old one stays in its history.
- It is one of several likes (``likes_去金锅小炒吃火锅``): it ends (a new version, superseded by the
  new fact), and comes back if the new fact's turn is purged.
- Saying the current value was left replaces it whatever the confidences (a value confirmed
  often used to take every later one as a conflict).
"""

from __future__ import annotations

import pytest

from memstrata import Memory, Scope
from memstrata.filters import Filters
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.records import RecordType

S1, S2 = Scope("acme", "alice", session="s1"), Scope("acme", "alice", session="s2")
FACTS = Filters(types=frozenset({RecordType.FACT}))


def _tell(mem: Memory, scope: Scope, text: str) -> str:
    rid = mem.add_message(scope, "user", text).id
    mem.end_session(scope)
    return rid


def _current(mem: Memory) -> dict[str, str]:
    return {
        str(r.content.structured["key"]): str(r.content.structured["value"])
        for r in mem.store.list(S1.user_scope, FACTS, limit=1000)
    }


def test_the_left_value_of_a_slot_is_replaced_under_its_key(mem: Memory) -> None:
    _tell(mem, S1, "My favourite place for lasagna is Marrow & Vine. Any recipe ideas?")
    _tell(mem, S2, "I've stopped going to Marrow & Vine; Olive Tree is my favourite now.")
    assert _current(mem) == {"favorite_place_for_lasagna": "Olive Tree"}
    values = [
        r.content.structured["value"] for r in mem.facts.history(S2, "favorite_place_for_lasagna")
    ]
    assert "Marrow & Vine" in values and "Olive Tree" in values
    assert "Olive Tree" in mem.build_context(S2, "What is my favourite restaurant?", 1000).text


def test_a_like_the_user_left_ends_and_comes_back_when_its_update_is_purged(mem: Memory) -> None:
    _tell(mem, S1, "我最喜欢去金锅小炒吃火锅。")
    update = _tell(mem, S2, "我已经不去金锅小炒了，现在最喜欢巷子里火锅。下次去点什么好？")
    assert _current(mem) == {"favorite": "巷子里火锅"}
    ended = mem.facts.history(S2, "likes_去金锅小炒吃火锅")[-1]
    new = mem.facts.get(S2, "favorite")
    assert new is not None and ended.superseded_by == new.id and ended.valid_to is not None
    mem.purge(S2, [update])
    assert _current(mem) == {"likes_去金锅小炒吃火锅": "去金锅小炒吃火锅"}


def test_saying_the_current_value_was_left_replaces_a_confirmed_one(mem: Memory) -> None:
    for _ in range(4):  # confirmed: 0.85 → 1.0, no later statement can be surer
        _tell(mem, S1, "I live in Lyon.")
    assert mem.facts.get(S1, "location").confidence == 1.0  # type: ignore[union-attr]
    _tell(mem, S2, "I no longer live in Lyon, we live in Oslo now.")
    fact = mem.facts.get(S2, "location")
    assert fact is not None and fact.text == "location: Oslo"


def test_a_left_value_no_fact_holds_ends_nothing(mem: Memory) -> None:
    _tell(mem, S1, "I love hiking. My favourite city is Porto.")
    _tell(mem, S2, "I've stopped going to Casa Verde; Blue Lantern is my favourite now.")
    assert _current(mem) == {
        "likes_hiking": "hiking",
        "favorite_city": "Porto",
        "favorite": "Blue Lantern",
    }


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("Paris is my favourite city.", [("favorite_city", "Paris", "")]),
        ("This one is my favourite!", []),
        ("It is my favourite.", []),
        (
            "I've stopped going to Marrow & Vine; Olive Tree is my favourite now.",
            [("favorite", "Olive Tree", "Marrow & Vine")],
        ),
        (
            "I no longer work at Acme, and I work at Globex now.",
            [("employer", "Globex", "Acme")],
        ),
        (  # make demo's last turn: "now work at" after "I left … and" was no employer
            "Big news: I left the solar startup and now work at a wind-turbine company.",
            [("employer", "a wind-turbine company", "the solar startup")],
        ),
        ("I now work as a nurse.", [("occupation", "nurse", "")]),
        ("I left my keys at home and went back.", []),
        ("我现在最喜欢的运动是游泳。", [("favorite_运动", "游泳", "")]),
        ("我已经不去金锅小炒了，现在最喜欢巷子里火锅。", [("favorite", "巷子里火锅", "金锅小炒")]),
    ],
)
def test_the_heuristic_reads_favourites_and_left_values(
    text: str, facts: list[tuple[str, str, str]]
) -> None:
    got = [(f.key, f.value, f.replaces) for f in HeuristicLLM().extract_facts([text])]
    assert got == facts
