"""A user who says a value no longer holds, and gives no new one ("I no longer live in
Berlin", "I quit my job at Acme", 我已经不在谷歌工作了), ends the fact that held it. Before,
no pattern read such a sentence, and the profile kept "location: Berlin" as current after the
user had said they left.

- The current fact's next version is the ending: "location: no longer Berlin" (不再是柏林),
  ``structured["ended"]``; the old value stays in the key's history.
- Any value the user states later replaces the ending; saying it again confirms it.
- An ending that names a value the current fact does not hold changes nothing.
- Purging the turn that said it brings the value back (nothing lost).
"""

from __future__ import annotations

import pytest

from memstrata import Memory, Scope
from memstrata.filters import Filters
from memstrata.layers.semantic import FactAction, decide
from memstrata.llm.base import ExtractedFact
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.records import RecordType

S1, S2, S3 = (Scope("acme", "alice", session=f"s{i}") for i in (1, 2, 3))
FACTS = Filters(types=frozenset({RecordType.FACT}))


def _tell(mem: Memory, scope: Scope, text: str) -> str:
    rid = mem.add_message(scope, "user", text).id
    mem.end_session(scope)
    return rid


def _current(mem: Memory) -> dict[str, str]:
    return {str(r.content.structured["key"]): r.text for r in mem.store.list(S1.user_scope, FACTS)}


def test_saying_a_value_no_longer_holds_ends_it_and_keeps_its_history(mem: Memory) -> None:
    _tell(mem, S1, "I live in Berlin, near the river.")
    _tell(mem, S2, "I don't live in Berlin anymore. Can you suggest a moving checklist?")
    fact = mem.facts.get(S2, "location")
    assert fact is not None and fact.text == "location: no longer Berlin"
    assert fact.content.structured["ended"] is True
    assert fact.content.structured["value"] == "Berlin"
    old = [r for r in mem.facts.history(S2, "location") if r.id != fact.id]
    assert {r.text for r in old} == {"location: Berlin"}
    assert old[-1].superseded_by == fact.id and old[-1].valid_to is not None
    assert "no longer Berlin" in mem.build_context(S2, "Where do I live?", 1000).text


def test_a_later_value_replaces_the_ending_and_a_repeat_confirms_it(mem: Memory) -> None:
    _tell(mem, S1, "I work at Acme.")
    _tell(mem, S2, "I quit my job at Acme last week.")
    _tell(mem, S2, "I no longer work at Acme.")
    ended = mem.facts.get(S2, "employer")
    assert ended is not None and ended.text == "employer: no longer Acme"
    assert ended.content.structured["mentions"] == 2
    _tell(mem, S3, "I work at Acme.")  # back where they were: a value, not a confirmation
    assert _current(mem) == {"employer": "employer: Acme"}
    texts = {r.text for r in mem.facts.history(S3, "employer")}
    assert texts == {"employer: Acme", "employer: no longer Acme"}
    assert mem.facts.get(S3, "employer").content.structured.get("ended") is None  # type: ignore[union-attr]


def test_ending_a_value_the_current_fact_does_not_hold_changes_nothing(mem: Memory) -> None:
    _tell(mem, S1, "I live in Rome.")
    _tell(mem, S2, "I no longer live in Berlin.")
    assert _current(mem) == {"location": "location: Rome"}
    assert len(mem.facts.history(S2, "location")) == 1


def test_an_ending_with_no_fact_before_it_is_kept(mem: Memory) -> None:
    _tell(mem, S1, "我已经不在谷歌工作了。")
    assert _current(mem) == {"employer": "employer: 不再是谷歌"}


def test_purging_the_ending_brings_the_value_back(mem: Memory) -> None:
    _tell(mem, S1, "我住在北京。")
    ending = _tell(mem, S2, "我已经不住在北京了。")
    assert _current(mem) == {"location": "location: 不再是北京"}
    mem.purge(S2, [ending])
    assert _current(mem) == {"location": "location: 北京"}


def test_the_ending_ends_a_value_confirmed_many_times(mem: Memory) -> None:
    for _ in range(4):  # confidence 1.0: no plain later value could replace it
        _tell(mem, S1, "I live in Lyon.")
    _tell(mem, S2, "I moved out of Lyon.")
    assert _current(mem) == {"location": "location: no longer Lyon"}


def test_an_llm_fact_marked_ended_goes_the_same_way(mem: Memory) -> None:
    _tell(mem, S1, "I live in Porto.")
    fact = ExtractedFact(
        category="identity", key="location", value="Porto", confidence=0.5, ended=True
    )
    outcome = mem.facts.upsert(S2, fact)
    assert outcome.action is FactAction.REPLACED
    assert outcome.record.text == "location: no longer Porto"


@pytest.mark.parametrize(
    ("current", "current_ended", "incoming", "incoming_ended", "action"),
    [
        ("Berlin", False, "Berlin", True, FactAction.REPLACED),
        ("Berlin, Germany", False, "Berlin", True, FactAction.REPLACED),
        ("Rome", False, "Berlin", True, FactAction.UNCHANGED),
        ("Berlin", True, "Berlin", True, FactAction.CONFIRMED),
        ("Berlin", True, "Munich", True, FactAction.UNCHANGED),
        ("Berlin", True, "Berlin", False, FactAction.REPLACED),
        ("Berlin", True, "Rome", False, FactAction.REPLACED),
        (None, False, "Berlin", True, FactAction.INSERTED),
    ],
)
def test_decide_with_endings(
    current: str | None,
    current_ended: bool,
    incoming: str,
    incoming_ended: bool,
    action: FactAction,
) -> None:
    got = decide(
        current,
        1.0,
        5,
        incoming,
        0.1,  # never surer than the current one: the ending decides, not the confidence
        current_ended=current_ended,
        incoming_ended=incoming_ended,
    )
    assert got.action is action


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("I no longer live in Berlin.", [("location", "Berlin", True)]),
        ("I don't live in Berlin anymore.", [("location", "Berlin", True)]),
        ("I don't live in Berlin.", []),  # says nothing about before
        ("I'm no longer living in Berlin.", [("location", "Berlin", True)]),
        ("We moved away from Berlin to Rome.", [("location", "Rome", False)]),
        ("I no longer live in Berlin, I live in Rome now.", [("location", "Rome", False)]),
        ("I don't work for Acme any more.", [("employer", "Acme", True)]),
        (
            "I've left my job with Acme Corp because of the commute.",
            [("employer", "Acme Corp", True)],
        ),
        ("I left my job at Acme and now work at Beta.", [("employer", "Beta", False)]),
        (
            "I no longer live in Berlin and I no longer work at Acme.",
            [("location", "Berlin", True), ("employer", "Acme", True)],
        ),
        ("I no longer live in it.", []),
        ("我不再住在北京。", [("location", "北京", True)]),
        ("我不住在北京。", []),
        ("我们搬离了北京。", [("location", "北京", True)]),
        ("我已经从北京搬走了。", [("location", "北京", True)]),
        ("我从北京搬到了上海。", [("location", "上海", False)]),
        ("我不再在谷歌上班。", [("employer", "谷歌", True)]),
        ("我已经从谷歌辞职了。", [("employer", "谷歌", True)]),
        ("我不在家工作了。", []),
    ],
)
def test_the_heuristic_reads_endings(text: str, facts: list[tuple[str, str, bool]]) -> None:
    got = [(f.key, f.value, f.ended) for f in HeuristicLLM().extract_facts([text])]
    assert got == facts


def test_a_move_from_one_place_to_another_names_the_place_left() -> None:
    (fact,) = HeuristicLLM().extract_facts(["I moved from Berlin to Rome last year."])
    assert (fact.value, fact.replaces) == ("Rome", "Berlin")


@pytest.mark.parametrize(
    ("before", "after", "key", "ended"),
    [
        (
            "Marrow & Vine is my favourite place for falafel.",
            "I've stopped going to Marrow & Vine.",
            "favorite_place_for_falafel",
            "favorite_place_for_falafel: no longer Marrow & Vine",
        ),
        ("我最喜欢的火锅店是金锅小炒。", "我已经不去金锅小炒了。", "favorite_火锅店", None),
    ],
    ids=["en", "zh"],
)
def test_a_place_the_user_stopped_going_to_ends_the_fact_that_names_it(
    mem: Memory, before: str, after: str, key: str, ended: str | None
) -> None:
    """The sentence names no key: the fact holding the place is found by its value. Before,
    "I've stopped going to X" with no new favourite changed nothing."""
    _tell(mem, S1, before)
    assert key in _current(mem)
    _tell(mem, S2, after)
    fact = mem.facts.get(S2, key)
    assert fact is not None and fact.content.structured["ended"] is True
    if ended is not None:
        assert fact.text == ended
    assert "goes_to" not in _current(mem)  # no second fact beside the one it ended
    history = mem.facts.history(S2, key)  # the favourite stays in the key's history
    assert any(not r.content.structured.get("ended") for r in history)


def test_a_place_no_fact_names_is_remembered_as_left(mem: Memory) -> None:
    _tell(mem, S1, "I no longer go to Iron Temple Gym.")
    assert _current(mem) == {"goes_to": "goes_to: no longer Iron Temple Gym"}
    _tell(mem, S2, "I stopped going to work early and I stopped going to bed late.")
    assert set(_current(mem)) == {"goes_to"}  # work and bed are no places one left


def test_leaving_a_place_for_a_new_favourite_is_one_replacement() -> None:
    facts = HeuristicLLM().extract_facts(
        ["I stopped going to Marrow & Vine; Olive Tree is my favourite now."]
    )
    assert [(f.value, f.ended, f.replaces) for f in facts] == [
        ("Olive Tree", False, "Marrow & Vine")
    ]


def test_a_place_the_user_stopped_visiting_is_not_where_they_stopped_living(mem: Memory) -> None:
    _tell(mem, S1, "I live in Porto.")
    _tell(mem, S2, "I stopped going to Porto, the city is too crowded in summer.")
    assert _current(mem) == {"location": "location: Porto", "goes_to": "goes_to: no longer Porto"}
