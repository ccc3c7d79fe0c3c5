"""A user who says a value changed ("we just moved to Kyoto", "is now Olive Tree", 我们刚搬到
杭州) updates their profile fact through the offline heuristic: the statement carries a
change cue, so its confidence beats the plain earlier one and the rule "a different value
replaces only with a higher confidence" lets it through. The old value stays in the fact's
history (nothing lost). Before, the update was recorded as a conflict and the context kept
showing the stale value ("favorite_place_for_falafel: Marrow & Vine")."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.llm.heuristic import HeuristicLLM

CASES = [
    (
        "My favourite place for falafel is Marrow & Vine.",
        "My favourite place for falafel is now Olive Tree.",
        "favorite_place_for_falafel",
        "Marrow & Vine",
        "Olive Tree",
    ),
    ("We live in Lyon.", "We just moved to Kyoto!", "location", "Lyon", "Kyoto"),
    (
        "I work at Harbor Bakery.",
        "I work at Summit Bank now.",
        "employer",
        "Harbor Bakery",
        "Summit Bank",
    ),
    ("我住在上海。", "我们刚搬到杭州！", "location", "上海", "杭州"),
    # a first statement made "these days" (+0.05) must not outrank a later move (+0.1)
    ("我们现在住在成都。", "我们刚搬到杭州！", "location", "成都", "杭州"),
    ("We live in Lyon these days.", "We just moved to Oslo!", "location", "Lyon", "Oslo"),
    (
        "I just started as a baker at Harbor Bakery.",
        "Quick update: I left Harbor Bakery and joined Northwind as a data analyst.",
        "employer",
        "Harbor Bakery",
        "Northwind",
    ),
    (
        "我刚在港湾烘焙开始做面包师。",
        "跟你说一下，我已经离开港湾烘焙，去远航科技做数据分析师了。",
        "employer",
        "港湾烘焙",
        "远航科技",
    ),
]


@pytest.mark.parametrize(("first", "later", "key", "old", "new"), CASES)
def test_a_stated_change_replaces_the_fact_and_keeps_the_old_value(
    tmp_path: Path, first: str, later: str, key: str, old: str, new: str
) -> None:
    with Memory(f"sqlite:///{tmp_path}/m.db", embedder="hashing", background=False) as mem:
        s1, s2 = Scope("acme", "alice", session="s1"), Scope("acme", "alice", session="s2")
        mem.add_message(s1, "user", first)
        mem.end_session(s1)
        assert mem.facts.get(s1, key).content.structured["value"] == old  # type: ignore[union-attr]
        mem.add_message(s2, "user", later)
        mem.end_session(s2)
        current = mem.facts.get(s2, key)
        assert current is not None and current.content.structured["value"] == new
        values = [r.content.structured["value"] for r in mem.facts.history(s2, key)]
        assert old in values and new in values
        assert new in mem.build_context(s2, "where do I live and eat?", 2000).text


def test_a_plain_restatement_of_another_value_stays_a_conflict() -> None:
    """Without a change cue a different value is still a conflict (the rule is unchanged)."""
    llm = HeuristicLLM()
    (plain,) = llm.extract_facts(["I live in Paris."])
    (moved,) = llm.extract_facts(["We just moved to Kyoto!"])
    assert moved.confidence > plain.confidence
    (new_york,) = llm.extract_facts(["I live in New York."])  # "New" in the value is no cue
    assert new_york.confidence == plain.confidence


@pytest.mark.parametrize(
    ("first", "later", "shown"),
    [
        ("I live in Paris.", "I live in Lyon.", "location: Paris (also said: Lyon)"),
        ("我住在上海。", "我住在杭州。", "location: 上海（也说过：杭州）"),
    ],
)
def test_a_conflict_is_shown_beside_the_value_it_did_not_replace(
    tmp_path: Path, first: str, later: str, shown: str
) -> None:
    """A different value said without a change cue does not replace the fact (seed 001's
    rule), but the profile no longer hides it: the fact reads both, in search and context."""
    with Memory(f"sqlite:///{tmp_path}/m.db", embedder="hashing", background=False) as mem:
        s1, s2 = Scope("acme", "alice", session="s1"), Scope("acme", "alice", session="s2")
        mem.add_message(s1, "user", first)
        mem.end_session(s1)
        mem.add_message(s2, "user", later)
        mem.end_session(s2)
        fact = mem.facts.get(s2, "location")
        assert fact is not None and fact.text == shown
        assert shown in mem.build_context(Scope("acme", "alice", session="s3"), "where?", 2000).text
        hits = mem.search(s2.user_scope, later.rstrip("。."), 10, layers="semantic")
        assert any(h.record.id == fact.id for h in hits)


def test_joining_something_without_a_role_is_no_employer() -> None:
    llm = HeuristicLLM()
    assert llm.extract_facts(["I joined the choir last week."]) == []
    assert llm.extract_facts(["我离开北京，到上海工作了。", "我在家开始做饭。"]) == []
    (job,) = llm.extract_facts(["I joined Acme as an engineer."])
    assert (job.key, job.value) == ("employer", "Acme")


@pytest.mark.parametrize(
    ("text", "place"),
    [
        ("I just moved to Lisbon from Berlin for a job at a solar energy startup.", "Lisbon"),
        ("I live in Paris with my wife.", "Paris"),
        ("We moved to Kyoto in 2020.", "Kyoto"),
        ("I live in New York.", "New York"),
    ],
)
def test_a_place_ends_where_the_sentence_goes_on_about_something_else(
    text: str, place: str
) -> None:
    (fact,) = HeuristicLLM().extract_facts([text])
    assert (fact.key, fact.value) == ("location", place)
