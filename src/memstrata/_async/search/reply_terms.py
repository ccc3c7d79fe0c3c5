"""Index a reply under the question it answers.

In conversation the answer often lives in a short reply whose words do not name what was
asked: "What's your dog called?" — "Max, after my grandfather." A later question "what is
the name of Ana's dog?" shares no word with the reply, so BM25 cannot find it. The reply is
therefore indexed with its own terms *and* the terms of the question sentences of the turn
before it in the same session (only sentences that ask: "?" or "？"); its text, vector and
everything shown stay its own. A turn with no question before it is indexed as before.
The rule itself is pure (:mod:`memstrata.search.search_questions`); this module reads the
turns it needs from the store.

"The turn before" is the one listed just before the reply in its session (time, then
writing order), deleted or not; a deleted turn gives no words. Without a session it is the
turn listed just before the reply among all the user's turns, and counts only when it has
no session either and was written in the same ``add_messages`` call (the same
``created_at``). Since session 29 the write, a new version, an edit, a delete and a purge
all use this one definition, each with reads of the turn beside one: until then a write
took the call's previous turn by time, whatever was listed between them, and a later
version looked for a turn of the call among the 20 listed before it, so a reply with a
turn of another call, or more than 20 of other sessions, dated between it and its
question was indexed under the question at its write and under none after
``set_access``.
The reply follows that turn: since session 28 an edit of its text
(``update(content=...)``), its delete, forget or restore re-terms the reply in the same
transaction (:func:`terms_after_change`: one read of the turn after it, none when its
questions stay the same), as a purge does (:func:`terms_after_purge`). Before, the reply
stayed indexed under the words the question had when the reply was written, edited or
deleted since.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from memstrata._async.store.base import AsyncStore, PurgeReport, RecordWrite
from memstrata.clock import END_OF_TIME, later
from memstrata.filters import Filters
from memstrata.records import MemoryRecord, RecordType
from memstrata.scope import Scope
from memstrata.search.search_questions import question_terms, reply_terms
from memstrata.search.tokenize import tokenize
from memstrata.store.types import ListQuery

__all__ = [
    "index_replies",
    "kept_terms",
    "purge_records",
    "question_terms",
    "reply_terms",
    "terms_after_change",
    "terms_after_purge",
]

_EVERY_TURN = Filters(
    types=frozenset({RecordType.MESSAGE}), include_deleted=True, include_superseded=True
)
_INSTANT = timedelta(microseconds=1)


def _asks(turn: MemoryRecord | None) -> str | None:
    """The text whose questions a turn gives the one after it: none once deleted."""
    return turn.text if turn is not None and turn.is_active else None


async def index_replies(
    store: AsyncStore,
    scope: Scope,
    writes: Sequence[RecordWrite],
    clocked: Sequence[bool] = (),
) -> tuple[list[RecordWrite], dict[str, tuple[str, ...]]]:
    """``writes`` (turns of one ``add_messages`` call, in order) with each message's terms
    extended by the questions of the turn listed before it, and the new terms of the stored
    turn that a new one now comes before (a backfill; for :meth:`AsyncUnitOfWork.reterm`
    in the write's transaction). In a session whose new turns come in time order after its
    newest stored turn (the usual append) that is the call's order and the newest turn: one
    indexed read. Otherwise each new turn's place is read (two indexed reads a turn): until
    session 28 the call's order counted, and a turn dated before the one written before it
    stayed indexed under that turn's words after its delete, edit or purge. Without a
    session a turn counts only when it is of the same call and no turn of the user is
    listed between them: one read (the user's newest turn) when the call's turns come after
    the user's turns in time, else :func:`_placed_user` (until session 29 the call's
    previous turn counted whatever was listed between them, and no read was made). A call
    in a session reads the user's newest turn with the session's (one read,
    ``list_many``): when a new turn comes before it, the session-less turn listed right
    after a new one is re-termed (:func:`_placed_user`).

    ``clocked``: which turns were given no ``observed_at`` (their time is the clock's
    now). Such a turn is dated at least 1 µs after the newest turn read here (the
    session's and the user's of any session; session 31): a wall clock set back must not
    list it before the turns said just before it. A caller's own time is kept."""
    user = Scope(scope.tenant, scope.user)
    if scope.session is None:
        last = await store.list(user, _EVERY_TURN, limit=1, newest_first=True)
        anyone: list[MemoryRecord] = []
    else:
        last, anyone = await store.list_many(
            [
                ListQuery(scope, _EVERY_TURN, limit=1, newest_first=True),
                ListQuery(user, _EVERY_TURN, limit=1, newest_first=True),
            ]
        )
    if (last or anyone) and any(clocked):
        # after the user's newest turn of any session too: a session's turns dated past a
        # stale or stepped-back clock would otherwise lead the next session's (the lead)
        writes = _after(writes, clocked, max(t.observed_at for t in (*last, *anyone)))
    times = [w.record.observed_at for w in writes]
    order = sorted(range(len(writes)), key=lambda i: (times[i], i))
    texts = [w.record.text for w in writes]
    extra: list[tuple[str, ...]] = [()] * len(writes)
    again: dict[str, tuple[str, ...]] = {}
    if scope.session is None:
        if not last or last[0].observed_at <= times[order[0]]:
            # nothing stored is listed among or after the call's turns (the usual case)
            for previous, i in zip(order, order[1:], strict=False):
                extra[i] = question_terms(texts[previous])
        else:
            again = await _placed_user(store, user, writes, order, extra)
        return _with(writes, extra), again
    newest = last[0] if last else None
    if order == sorted(order) and (newest is None or newest.observed_at <= times[0]):
        extra = reply_terms(texts, _asks(newest))  # an append: the call's order
    else:
        again = await _placed(store, scope, writes, order, extra)
    if anyone and anyone[0].observed_at > times[order[0]]:
        # a stored session-less turn listed right after a new one no longer follows its own
        again.update(await _placed_user(store, user, writes, order, None))
    return _with(writes, extra), again


# How far a wall clock may have stepped back for a clocked turn to follow the newest turn:
# a newest turn further ahead of the clock was given its time by a caller (a date in the
# future, a typo), not said a moment ago, and later turns keep the clock's time rather than
# all follow it (the lead, session 31).
STEP_BACK = timedelta(days=2)


def _after(
    writes: Sequence[RecordWrite], clocked: Sequence[bool], newest: datetime
) -> list[RecordWrite]:
    """``writes`` with each clocked turn dated ``max(its time, newest + 1 µs)``, unless the
    newest is more than :data:`STEP_BACK` ahead of its time."""
    least = later(newest, timedelta(microseconds=1))
    return [
        replace(w, record=replace(w.record, observed_at=least))
        if now and w.record.observed_at < least <= later(w.record.observed_at, STEP_BACK)
        else w
        for w, now in zip(writes, clocked, strict=True)
    ]


def _with(writes: Sequence[RecordWrite], extra: Sequence[tuple[str, ...]]) -> list[RecordWrite]:
    """``writes`` with each message's terms extended by its ``extra``."""
    return [
        replace(w, terms=w.terms + more) if more and w.record.type is RecordType.MESSAGE else w
        for w, more in zip(writes, extra, strict=True)
    ]


async def _placed(
    store: AsyncStore,
    scope: Scope,
    writes: Sequence[RecordWrite],
    order: Sequence[int],
    extra: list[tuple[str, ...]],
) -> dict[str, tuple[str, ...]]:
    """:func:`index_replies` for new turns of a session that do not simply follow it: each
    new turn (``order``: by time, then the call's order, as they will be listed) gets in
    ``extra`` the questions of the turn listed before it — the new one before it, or a
    stored one between them in time (a stored turn at a new one's time is listed first: it
    was written first) — and the stored turn listed right after a new one is returned with
    its new terms."""
    times = [w.record.observed_at for w in writes]
    again: dict[str, tuple[str, ...]] = {}
    for n, i in enumerate(order):
        t = times[i]
        upto = None if t >= END_OF_TIME else t + _INSTANT
        before = await store.list(
            scope, replace(_EVERY_TURN, observed_before=upto), limit=1, newest_first=True
        )
        previous = order[n - 1] if n else None
        if previous is not None and (not before or before[0].observed_at <= times[previous]):
            extra[i] = question_terms(writes[previous].record.text)
        else:
            extra[i] = question_terms(_asks(before[0] if before else None))
        if upto is None:
            continue
        after = await store.list(
            scope, replace(_EVERY_TURN, observed_after=upto), limit=1, newest_first=False
        )
        following = order[n + 1] if n + 1 < len(order) else None
        if after and (following is None or after[0].observed_at <= times[following]):
            turn = after[0]
            again[turn.id] = tuple(tokenize(turn.text)) + question_terms(writes[i].record.text)
    return again


def _window(after: datetime, until: datetime | None) -> Filters | None:
    """Every turn listed after a new turn at ``after`` and before one at ``until`` (none:
    to the end): a stored turn at the new one's time is listed before it (written first).
    ``None`` for a new turn at the end of time: no stored turn is listed after it."""
    if after >= END_OF_TIME:
        return None
    end = None if until is None or until >= END_OF_TIME else until + _INSTANT
    return replace(_EVERY_TURN, observed_after=after + _INSTANT, observed_before=end)


async def _placed_user(
    store: AsyncStore,
    user: Scope,
    writes: Sequence[RecordWrite],
    order: Sequence[int],
    extra: list[tuple[str, ...]] | None,
) -> dict[str, tuple[str, ...]]:
    """:func:`index_replies` among the user's stored turns (``order``: the new turns as
    they will be listed): with ``extra`` (a session-less call), each new turn gets the
    questions of the new turn before it unless a stored turn is listed between them; and
    a stored session-less turn listed right after a new one (before the next new one) is
    returned with its own terms only: the turn now before it is of another call. One read
    of the turn after each new turn's place, and with ``extra`` one of the turn before."""
    times = [w.record.observed_at for w in writes]
    again: dict[str, tuple[str, ...]] = {}
    for n, i in enumerate(order):
        following = order[n + 1] if n + 1 < len(order) else None
        window = _window(times[i], None if following is None else times[following])
        after = await store.list(user, window, limit=1, newest_first=False) if window else []
        if after and after[0].session is None:
            again[after[0].id] = tuple(tokenize(after[0].text))
        if extra is not None and following is not None and not after:
            extra[following] = question_terms(writes[i].record.text)
    return again


async def terms_after_purge(
    store: AsyncStore, scope: Scope, ids: Sequence[str]
) -> dict[str, tuple[str, ...]]:
    """New lexical terms for the turns whose turn before changes: the turn listed right
    after a purged one (past other purged ones) in its session, and the session-less one
    listed right after it among the user's turns, each gets its own terms plus the
    questions of the turn now before it (:func:`_beside`'s definition, as
    :func:`kept_terms` reads it). Every other turn keeps the turn before it, so its terms:
    the store holds each turn under what :func:`kept_terms` says (the write, a later write
    before it and a change of the turn before it keep it so, ``tests/reply29``). One read
    of the purged turns, then reads from each one's place (the turn after it and the turn
    before it, in its session and among the user's turns): none grows with the session.
    Until session 30 every session holding a purged turn that asked something was also
    walked, every turn written at or after it re-termed (for turns indexed before session
    28, under the turn before them in their call's order): a purge of one question in a
    10,000-turn session read 10,003 records (docs/measurements.md, session 30). A store
    written before session 29 gets every turn's terms by today's rule once, as it is
    upgraded (SQLite schema 20, PostgreSQL step 27), so its neighbours hold its questions."""
    uscope = Scope(scope.tenant, scope.user)
    gone = set(ids)
    turns = [
        r
        for r in await store.get_many(uscope, list(dict.fromkeys(ids)))
        if r.type is RecordType.MESSAGE
    ]
    out: dict[str, tuple[str, ...]] = {}
    for turn in turns:
        # the turn after it in its session, and the session-less one after it among the
        # user's turns (one read for a session-less turn: its session is the user's turns)
        for user in (False, True) if turn.session is not None else (True,):
            reply = await _past_gone(store, turn, gone, after=True, user=user)
            if reply is None or reply.id in out or (user and reply.session is not None):
                continue
            before = await _past_gone(store, turn, gone, after=False, user=user)
            out[reply.id] = _own_and_asked(reply, before)
    return out


def _own_and_asked(turn: MemoryRecord, before: MemoryRecord | None) -> tuple[str, ...]:
    """A turn's terms when ``before`` is the turn listed before it (:func:`_linked`)."""
    return tuple(tokenize(turn.text)) + question_terms(
        _asks(before) if _linked(turn, before) else None
    )


async def _past_gone(
    store: AsyncStore, turn: MemoryRecord, gone: set[str], *, after: bool, user: bool
) -> MemoryRecord | None:
    """The turn listed next to ``turn`` (after it, or before it) that is not in ``gone``:
    :func:`_next_turn` from turn to turn past the purged ones."""
    found = await _next_turn(store, turn, after=after, user=user)
    while found is not None and found.id in gone:
        found = await _next_turn(store, found, after=after, user=user)
    return found


async def purge_records(store: AsyncStore, scope: Scope, ids: Sequence[str]) -> PurgeReport:
    """``store.purge(scope, ids)`` that also re-indexes the turns that were indexed under
    a purged turn's questions (:func:`terms_after_purge`), in the purge's transaction.

    The new terms are computed just before the purge; a turn appended to one of those
    sessions in between is indexed under the session's newest turn at its own write."""
    return await store.purge(scope, ids, reterm=await terms_after_purge(store, scope, ids))


async def _next_turn(
    store: AsyncStore, turn: MemoryRecord, *, after: bool, user: bool = False
) -> MemoryRecord | None:
    """The turn listed just after ``turn`` (``after``) or just before it in its session
    (without a session, or with ``user``, among all the user's turns), deleted included:
    one read from its place, however many turns share its time."""
    session = None if user else turn.session
    scope = Scope(turn.tenant, turn.user, session=session)
    near = await store.list_after(scope, _EVERY_TURN, turn.id, limit=1, newest_first=not after)
    return near[0] if near else None


def _linked(turn: MemoryRecord, before: MemoryRecord | None) -> bool:
    """Whether ``before``, listed just before ``turn`` (in its session; without one, among
    the user's turns), is the turn it answers: without a session only a session-less turn
    of the same ``add_messages`` call (the same ``created_at``) is."""
    if before is None or turn.session is not None:
        return before is not None
    return before.session is None and before.created_at == turn.created_at


async def _beside(store: AsyncStore, turn: MemoryRecord, *, after: bool) -> MemoryRecord | None:
    """The turn ``turn`` answers (or, ``after``, the one that answers it): one read
    (:func:`_next_turn`). Until session 29 a session-less turn's was looked for among the
    20 turns listed beside it, any session's, and counted when of the same call whatever
    was listed between them."""
    found = await _next_turn(store, turn, after=after)
    if found is None:
        return None
    return found if (_linked(found, turn) if after else _linked(turn, found)) else None


async def kept_terms(store: AsyncStore, record: MemoryRecord) -> tuple[str, ...]:
    """The lexical terms of a new version of ``record`` that keeps its text: its own and,
    for a message, the questions of the turn before it, as :func:`index_replies` indexed it
    and :func:`terms_after_purge` re-indexes it (the turn listed before it in its session;
    without a session, the one listed before it among the user's turns when session-less
    and written in the same call, :func:`_linked`; none when that turn is deleted).
    Until session 27 such a version (``set_access``, tags, importance) was indexed under its
    own words only, and the owner's search lost a reply by the words of the question it
    answers. One read of the turn before it (:func:`_beside`; until session 28 the turns
    up to its time, and the whole session's when more than 20 shared that time: an
    ``add_messages`` call of many turns gives them one)."""
    own = tuple(tokenize(record.text))
    if record.type is not RecordType.MESSAGE:
        return own
    return own + question_terms(_asks(await _beside(store, record, after=False)))


async def terms_after_change(
    store: AsyncStore, old: MemoryRecord, new: MemoryRecord
) -> dict[str, tuple[str, ...]]:
    """The new lexical terms of the reply indexed under a turn's questions, when the turn
    goes from ``old`` to ``new`` (an edit of its text, a delete, a restore): the reply
    (the turn after it, :func:`_beside`) gets its own terms and the questions ``new`` asks
    (none once deleted). Empty, with no read, for a record that is no turn or whose
    questions stay the same; else one read of the turn after it (:func:`_beside`)."""
    if new.type is not RecordType.MESSAGE:
        return {}
    if question_terms(_asks(old)) == question_terms(_asks(new)):
        return {}
    reply = await _beside(store, new, after=True)
    if reply is None:
        return {}
    return {reply.id: tuple(tokenize(reply.text)) + question_terms(_asks(new))}
