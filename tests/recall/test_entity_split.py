"""Questions joining several names are also searched per name (issue 13 §1 lever)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from memstrata import Memory, Message, Role, Scope, SearchConfig
from memstrata.search.entities import entity_queries, merge_lists
from memstrata.store.base import Candidate


def test_english_names_joined_by_a_conjunction_are_split() -> None:
    assert entity_queries("What have Caroline and Melanie both painted?") == [
        "What have Caroline both painted?",
        "What have Melanie both painted?",
    ]
    assert entity_queries("Did Ana, Bo and Cy meet?") == [
        "Did Ana meet?",
        "Did Bo meet?",
        "Did Cy meet?",
    ]


def test_questions_without_two_names_are_not_split() -> None:
    for q in (
        "Where did Jonas work before joining Summit Bank?",
        "What did I and Bob do?",
        "What do cats and dogs eat?",
        "Caroline and Caroline?",
        "",
    ):
        assert entity_queries(q) == []


def test_chinese_names_joined_by_a_conjunction_are_split() -> None:
    assert entity_queries("周涛和郑浩都喜欢什么运动？") == [
        "周涛都喜欢什么运动？",
        "郑浩都喜欢什么运动？",
    ]
    assert entity_queries("周涛领养的鹦鹉取了什么名字？") == []


@given(st.text(max_size=80))
def test_any_text_gives_at_most_four_distinct_questions(text: str) -> None:
    subs = entity_queries(text)
    assert len(subs) <= 4 and len(set(subs)) == len(subs)


def test_merge_keeps_the_top_of_each_list() -> None:
    whole = [Candidate("a", 9.0), Candidate("b", 8.0), Candidate("c", 1.0)]
    first = [Candidate("a", 5.0), Candidate("c", 1.0)]
    second = [Candidate("d", 3.0), Candidate("b", 2.0), Candidate("e", 1.0)]
    merged = merge_lists([whole, first, second], k=4)
    assert [c.id for c in merged][:2] == ["a", "d"]
    assert len(merged) == 4 and all(0.0 <= c.score <= 1.0 for c in merged)
    assert merge_lists([[], []], k=3) == []


def _memory(split: bool) -> Memory:
    return Memory("memory://", embedder="hashing", search_config=SearchConfig(split_entities=split))


def test_the_rarer_entitys_turn_reaches_the_top_only_with_the_split() -> None:
    """Ana's many turns say "painting" three times; Bo's one painting turn says it once, so
    the whole question's BM25 ranks all of Ana's turns above it."""
    scope = Scope("t", "u")
    start = datetime(2024, 1, 1, tzinfo=UTC)
    texts = [
        f"Ana painted a sunset painting again, painting {'number ' * i}{i}." for i in range(30)
    ]
    texts.append("Bo: I paint lighthouses at the weekend.")
    texts += [f"Bo went to the market on day {i}." for i in range(30)]
    found = {}
    for split in (False, True):
        mem = _memory(split)
        try:
            mem.add_messages(
                scope,
                [
                    Message(role=Role.USER, content=t, observed_at=start + timedelta(minutes=i))
                    for i, t in enumerate(texts)
                ],
            )
            hits = mem.search(scope, "What did Ana and Bo paint?", top_k=5, mode="lexical")
            found[split] = [h.record.text for h in hits]
        finally:
            mem.close()
    assert texts[30] in found[True]
    assert texts[30] not in found[False]
