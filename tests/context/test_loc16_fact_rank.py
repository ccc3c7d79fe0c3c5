"""Profile facts are scored by the question (ContextConfig.fact_step, context/fact_rank.py):
the tail of a large profile no longer outranks the turns that answer, and a fact the
question names keeps the top score (docs/measurements.md, "Issue 13, sixteenth session")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memstrata import Memory, Message, Role, Scope, ValidationError
from memstrata.context.config import ContextConfig
from memstrata.context.fact_rank import FACT_FLOOR, FACT_TOP, rank_facts
from memstrata.llm.base import ExtractedFact
from memstrata.search.tokenize import tokenize

_HOBBIES = (
    "chess hiking jazz sushi tennis origami kayaking salsa poetry knitting gardening astronomy "
    "baking cycling yoga surfing fencing archery juggling rowing"
).split()
_GLAZES = "blue green red yellow white black grey pink".split()


def _terms(text: str) -> frozenset[str]:
    return frozenset(tokenize(text))


def test_rank_facts_scores_by_rank_with_shared_terms_first() -> None:
    facts = ["likes_chess: chess", "location: Oslo", "favorite_drink: matcha latte"]
    ranked = rank_facts(facts, str, _terms("What is my favorite drink?"), _terms, 0.05)
    assert ranked == [
        ("favorite_drink: matcha latte", pytest.approx(FACT_TOP)),
        ("likes_chess: chess", pytest.approx(FACT_TOP - 0.05)),
        ("location: Oslo", pytest.approx(FACT_TOP - 0.10)),
    ]
    # no question term shared (or none at all): the similarity order stands
    for question in ("Where was I?", ""):
        got = rank_facts(facts, str, _terms(question), _terms, 0.05)
        assert [f for f, _ in got] == facts
    assert rank_facts([], str, _terms("drink"), _terms, 0.05) == []


def test_a_large_profile_stops_at_the_floor() -> None:
    facts = [f"likes_{hobby}: {hobby}" for hobby in _HOBBIES]
    scores = [score for _, score in rank_facts(facts, str, frozenset(), _terms, 0.05)]
    assert scores[:3] == pytest.approx([FACT_TOP, FACT_TOP - 0.05, FACT_TOP - 0.10])
    assert scores == sorted(scores, reverse=True)
    assert min(scores) == FACT_FLOOR
    # above the fixed scores of the digests that fill what turns leave
    assert ContextConfig().cluster_score < FACT_FLOOR


def test_config_is_checked() -> None:
    with pytest.raises(ValidationError, match="fact_step"):
        ContextConfig(fact_step=-0.01)
    assert ContextConfig.before().fact_step == 0.01
    assert ContextConfig().fact_step == 0.05


@pytest.fixture
def mem() -> Iterator[Memory]:
    """Twenty profile facts about hobbies, eight turns about pottery glazes, twenty about
    the weather."""
    memory = Memory("memory://", embedder="hashing", background=False)
    user = Scope("acme", "alice")
    for hobby in _HOBBIES:
        memory.facts.upsert(
            user,
            ExtractedFact(category="preference", key=f"likes_{hobby}", value=hobby, confidence=0.8),
        )
    turns = [f"In pottery class I glazed a {g} bowl and a {g} vase." for g in _GLAZES]
    turns += [f"The weather was fine on day {i}." for i in range(20)]
    memory.add_messages(user.with_session("s1"), [Message(Role.USER, t) for t in turns])
    memory.flush()
    yield memory
    memory.close()


def _shown(mem: Memory, question: str, budget: int) -> list[str]:
    ctx = mem.build_context(
        Scope("acme", "alice", session="s2"), question, token_budget=budget, reserve_ratio=0.0
    )
    return [it.text for it in ctx.items]


def test_unrelated_facts_rank_below_the_turns_that_answer(mem: Memory) -> None:
    question = "What did I glaze in pottery class?"
    mem.context_config = ContextConfig(fact_step=0.01)  # the fixed score of before
    before = _shown(mem, question, 300)
    mem.context_config = ContextConfig()
    after = _shown(mem, question, 300)
    glazed = [g for g in _GLAZES if any(f"{g} bowl" in text for text in after)]
    assert glazed == _GLAZES  # every glazing turn fits
    assert sum("bowl" in text for text in before) < len(_GLAZES)
    # the profile is still there, its best facts first
    facts = [text for text in after if text.startswith("likes:")]
    assert 0 < len(facts) < len(_HOBBIES)


def test_a_fact_the_question_names_keeps_the_top_score(mem: Memory) -> None:
    ctx = mem.build_context(
        Scope("acme", "alice", session="s2"),
        "How often do I practise yoga?",
        token_budget=150,
        reserve_ratio=0.0,
    )
    facts = {it.text: it.score for it in ctx.items if it.block == "facts"}
    assert facts["likes: yoga"] == pytest.approx(FACT_TOP)
    assert len(facts) < len(_HOBBIES)
