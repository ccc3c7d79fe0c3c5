"""Purging a question turn leaves none of its words in the reply's index entry (issue 10 §6).

A reply is also indexed under the question sentences of the turn before it
(``search/reply_terms.py``). Purging the question alone must take those terms out of the
reply's lexical entry too: the reply is indexed again under the question of its *new*
predecessor (the turn before the purged one), so a search for the purged words finds
nothing, no store keeps them (record dump, SQLite bytes after the checkpoint, PostgreSQL
rows), and the reply stays findable by its own words and by its new predecessor's question.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import FixedClock, Memory, Message, Scope
from memstrata.search.tokenize import tokenize
from turn_calls import add_in_calls, word

from .test_purge_record_traces import _pg_rows_containing

S = Scope("acme", "victim", session="s1")
OTHER = Scope("acme", "bystander", session="s9")
EARLIER = "Where did you park the gazebo trailer?"
QUESTION = "Do you still remember the zorblatt frimpleton from Quibbleton?"
REPLY = "Yes, it was blue and very loud."
BYSTANDER = "Quibbleton is where my aunt lives."  # another user shares one word
# stems of the purged question's words (as the lexical index holds them)
PURGED = sorted(t for t in tokenize(QUESTION) if len(t) >= 6)


def _conversation(mem: Memory) -> tuple[str, str]:
    mem.add_messages(
        S,
        [
            Message(role="user", content="I went to the garden centre today."),
            Message(role="assistant", content=EARLIER),
        ],
    )
    q, r = mem.add_messages(
        S,
        [Message(role="assistant", content=QUESTION), Message(role="user", content=REPLY)],
    )
    mem.add_message(S, "assistant", "Good to know, thanks.")
    mem.add_message(OTHER, "user", BYSTANDER)
    return q.id, r.id


def _lexical_ids(mem: Memory, scope: Scope, query: str) -> set[str]:
    return {h.record.id for h in mem.search(scope.user_scope, query, mode="lexical")}


def _stored_terms(mem: Memory) -> dict[str, tuple[str, ...]]:
    store: Any = mem.store
    durable = getattr(store, "durable", store)  # the Redis buffer wraps a durable store
    return {d.record.id: d.terms for batch in durable.dump_records() for d in batch}


def test_purged_question_leaves_no_terms_in_the_reply(mem: Memory) -> None:
    assert PURGED and "zorblatt" in PURGED
    qid, rid = _conversation(mem)
    assert rid in _lexical_ids(mem, S, "zorblatt frimpleton")  # indexed under the question
    before = _stored_terms(mem)
    assert "zorblatt" in before[rid]

    report = mem.purge(S, [qid])

    assert report.records == 1 and report.remaining == 0
    assert _lexical_ids(mem, S, "zorblatt frimpleton") == set()
    terms = _stored_terms(mem)
    assert qid not in terms
    leaked = {i: sorted(set(t) & set(PURGED)) for i, t in terms.items() if set(t) & set(PURGED)}
    other = {r.id for r in mem.list(OTHER.user_scope)}
    assert set(leaked) <= other, f"purged question terms still indexed: {leaked}"
    # the reply keeps its own words and is now indexed under its new predecessor's question
    assert rid in _lexical_ids(mem, S, "blue loud")
    assert set(tokenize(REPLY)) <= set(terms[rid])
    assert set(tokenize(EARLIER)) - set(tokenize(REPLY)) <= set(terms[rid])
    assert rid in _lexical_ids(mem, S, "gazebo trailer")
    # nothing else changed: the other user's turn is still found by the shared word
    assert _lexical_ids(mem, OTHER, "Quibbleton")
    # every other record keeps its index entry exactly
    assert {i: set(t) for i, t in terms.items() if i != rid} == {
        i: set(t) for i, t in before.items() if i not in (qid, rid)
    }


def test_sqlite_purged_question_leaves_no_byte(tmp_path: Path, clock: FixedClock) -> None:
    path = tmp_path / "reply.db"
    mem = Memory(f"sqlite:///{path}", embedder="hashing", clock=clock, background=False)
    try:
        qid, rid = _conversation(mem)
        for i in range(200):  # enough rows that the FTS index has several segments
            mem.add(S, f"filler note number {i} about gardening and tomatoes", dedup=False)
        mem.purge(S, [qid])
        assert _lexical_ids(mem, S, "zorblatt frimpleton") == set()
        assert rid in _lexical_ids(mem, S, "gazebo")
    finally:
        mem.close()
    data = b"".join(
        Path(f"{path}{s}").read_bytes() for s in ("", "-wal") if Path(f"{path}{s}").exists()
    ).lower()
    left = sorted(t for t in set(PURGED) - set(tokenize(BYSTANDER)) if t.encode() in data)
    assert left == [], f"purged question stems still in the file: {left}"
    assert b"quibbleton" in data  # the bystander's own turn is intact
    assert b"gazebo" in data and b"blue" in data


def test_postgres_purged_question_leaves_no_row(pg_url: str, clock: FixedClock) -> None:
    mem = Memory(pg_url, embedder="hashing", clock=clock, background=False)
    try:
        qid, _ = _conversation(mem)
        mem.purge(S, [qid])
        found = _pg_rows_containing(mem, ["zorblatt", "frimpleton"])
        assert found == {}, f"rows still holding the purged question's terms: {found}"
        assert _pg_rows_containing(mem, ["gazebo"])
    finally:
        mem.close()


def test_turns_without_a_session_follow_their_own_call(clock: FixedClock) -> None:
    """Without a session a reply is indexed under the turn before it in the same
    ``add_messages`` call only; after the question's purge it keeps its own terms (the
    turn before it now belongs to another call), and a later call is not touched."""
    user = Scope("acme", "victim")
    mem = Memory("memory://", embedder="hashing", clock=clock, background=False)
    try:
        mem.add_messages(user, [Message(role="assistant", content=EARLIER)])
        clock.advance(seconds=5)
        q, r = mem.add_messages(
            user,
            [Message(role="assistant", content=QUESTION), Message(role="user", content=REPLY)],
        )
        assert r.id in _lexical_ids(mem, user, "zorblatt")
        mem.purge(user, [q.id])
        terms = _stored_terms(mem)
        assert set(terms[r.id]) == set(tokenize(REPLY))
        assert _lexical_ids(mem, user, "zorblatt frimpleton") == set()
        assert r.id not in _lexical_ids(mem, user, "gazebo trailer")
    finally:
        mem.close()


def test_retention_purge_of_a_question_cleans_the_reply(mem: Memory, clock: FixedClock) -> None:
    """Retention (seed 002: turns 30 days after a summary covered them) purges the question
    but not a later reply no summary covers yet: the reply loses the question's terms."""
    from memstrata.maintenance import Retention

    mem.add_messages(
        S,
        [Message(role="user", content=EARLIER), Message(role="assistant", content=QUESTION)],
    )
    mem.end_session(S)  # a summary covers both turns
    clock.advance(days=1)
    reply = mem.add_message(S, "user", REPLY)  # indexed under QUESTION, summarised by nobody
    assert reply.id in _lexical_ids(mem, S, "zorblatt frimpleton")
    clock.advance(days=31)
    report = mem.maintain(S, retention=Retention.seed_002())
    assert report.purged == 2
    # the summary keeps what it says (retention keeps summaries); the reply only its words
    assert reply.id not in _lexical_ids(mem, S, "zorblatt frimpleton")
    assert set(_stored_terms(mem)[reply.id]) == set(tokenize(REPLY))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    asks=st.lists(st.booleans(), min_size=2, max_size=12),
    sessions=st.lists(st.sampled_from(["a", "b", None]), min_size=12, max_size=12),
    order=st.randoms(use_true_random=False),
    cuts=st.sets(st.integers(1, 11), max_size=4),
    purge=st.sets(st.integers(0, 11), min_size=1, max_size=4),
    dated=st.booleans(),
)
def test_no_surviving_turn_keeps_a_purged_words(
    asks: list[bool],
    sessions: list[str | None],
    order: Any,
    cuts: set[int],
    purge: set[int],
    dated: bool,
) -> None:
    """Any sessions, any split into add_messages calls, observed times in or out of order:
    after purging some turns no turn left is indexed under a word only a purged turn had."""
    clock = FixedClock(datetime(2026, 1, 1, 12, 0, tzinfo=UTC))
    mem = Memory("memory://", embedder="hashing", clock=clock, background=False)
    try:
        n = len(asks)
        times = [datetime(2025, 6, 1, tzinfo=UTC) + timedelta(hours=h) for h in range(n)]
        order.shuffle(times)
        ids = add_in_calls(mem, clock, asks, sessions, [t if dated else None for t in times], cuts)
        gone = {i for i in purge if i < n}
        mem.purge(Scope("acme", "victim"), [ids[i] for i in sorted(gone)])
        words = {word(i) for i in gone}
        terms = _stored_terms(mem)
        leaked = {rid: sorted(set(t) & words) for rid, t in terms.items() if set(t) & words}
        assert leaked == {}
    finally:
        mem.close()
