"""A caller's mean length (BM25's ``avgdl``) counted a shared reply by its indexed length,
the words of the question it is indexed under included (``search/reply_terms.py``), while
the reply's own score and the rows holding a word counted its own words only (caller28): the
length of a question the caller may not read moved the caller's scores of every shared
note. A message now counts by its own words in the mean length too (caller29, every part of
what a caller reads: by name, by role, public), as memory:// counted it already. Fails before
on SQLite and PostgreSQL (the two owners' notes scored apart)."""

from __future__ import annotations

from memstrata import Memory, Scope
from memstrata.filters import Filters


def _owner(mem: Memory, scope: Scope, question: str, how: dict[str, object]) -> float:
    mem.add_messages(
        scope.with_session("s1"),
        [{"role": "user", "content": question}, {"role": "assistant", "content": "It is 4512."}],
    )
    reply = next(r for r in mem.list(scope) if r.role == "assistant")
    mem.set_access(scope, reply.id, **how)  # type: ignore[arg-type]
    note = mem.add(scope, "harbour ferry timetable")
    mem.set_access(scope, note.id, **how)  # type: ignore[arg-type]
    # the store's BM25 score (a search's own score is scaled to its best hit)
    (hit,) = mem.store.lexical_search(
        scope.as_caller("carol", {"editor"}), ["harbour"], 10, Filters()
    )
    assert hit.id == note.id
    return hit.score


def test_an_unshared_questions_length_does_not_move_a_callers_scores(mem: Memory) -> None:
    long_question = "what is the " + " ".join(f"zanzibar{i}" for i in range(40)) + " code?"
    for n, how in enumerate(
        (
            {"visibility": "shared", "allowed_users": ["carol"]},
            {"visibility": "shared", "allowed_roles": ["editor"]},
            {"visibility": "public"},
        )
    ):
        short = _owner(mem, Scope("acme", f"ann{n}"), "what is the code?", how)
        long = _owner(mem, Scope("acme", f"bob{n}"), long_question, how)
        assert long == short, how
