"""A reply is found by the words of the question it answers (issue 13, index keys)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata import Memory, Scope
from memstrata.search.reply_terms import question_terms, reply_terms
from memstrata.search.tokenize import tokenize


def test_only_the_sentences_that_ask_give_terms() -> None:
    assert question_terms("Great hike! What did you name the puppy?") == tuple(
        tokenize("What did you name the puppy?")
    )
    assert question_terms("We adopted a puppy.") == ()
    assert question_terms(None) == ()
    assert set(question_terms("太好了！你给小狗起了什么名字？")) >= {"小狗", "名字"}


def test_each_turn_gets_the_questions_of_the_turn_before() -> None:
    extra = reply_terms(["Max. My niece picked it.", "Cute!"], "What did you name the puppy?")
    assert set(extra[0]) >= {"name", "puppi"}
    assert extra[1] == ()  # "Max. My niece picked it." asks nothing


# no deadline: the first example builds the tokenizer's tables (scripts._mark_class, ~0.2 s)
@settings(deadline=None)
@given(st.lists(st.text(max_size=60), max_size=6), st.one_of(st.none(), st.text(max_size=60)))
def test_one_entry_per_turn_and_only_question_terms(texts: list[str], before: str | None) -> None:
    extra = reply_terms(texts, before)
    assert len(extra) == len(texts)
    for previous, more in zip([before, *texts], extra, strict=False):
        assert set(more) <= set(tokenize(previous or ""))


def test_a_short_reply_is_found_by_the_question_it_answers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    mem = Memory(f"sqlite:///{tmp_path}/m.db", embedder="hashing", background=False)
    try:
        s = Scope("t", "ana", session="s1")
        mem.add_message(s, "user", "We adopted a puppy this weekend!")
        mem.add_message(s, "assistant", "Lovely! What did you name the puppy?")
        reply = mem.add_message(s, "user", "Biscuit. My niece picked it.")
        mem.add_messages(
            Scope("t", "ana", session="s2"),
            [
                {"role": "user", "content": "Any name ideas for the project?"},
                {"role": "user", "content": "Not yet."},
            ],
        )
        hits = mem.search(Scope("t", "ana"), "puppy name", top_k=5, mode="lexical")
        assert reply.id in [h.record.id for h in hits]
        assert mem.get(s, reply.id).text == "Biscuit. My niece picked it."  # text unchanged
        # Another session's question does not leak into this reply's terms.
        hits = mem.search(Scope("t", "ana"), "project", top_k=5, mode="lexical")
        assert reply.id not in [h.record.id for h in hits]
    finally:
        mem.close()
