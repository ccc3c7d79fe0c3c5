"""Counters that go into the caller's next write transaction (session 33).

A write that counts its embeddings with no limit (a process without quotas on a store whose
quotas are in use; a process whose quotas limit no embeddings) used to take the counters in
a transaction of its own before the write: on PostgreSQL one more ``BEGIN``/``COMMIT`` per
write (4.4-6.2 ms measured in session 32), and a process that died between the take and
the write kept a count with no write. Now :func:`carried` puts the counts in the caller's
context and the store's next write transaction adds them just before its ``COMMIT``: the
write and its count commit together or not at all.

A durable store that can do this names itself with a :class:`Home` in its ``counts_home``
attribute (SQLite, PostgreSQL); the stores that cannot (``memory://``, where a take costs
a dict update, and the Redis hot tier, whose mirror must see the take: ``counts_home =
None``) keep the take of their own, as before. The store claims the entries of its home
in its write transaction (so two transactions of tasks sharing a context never both add
them) and marks them :attr:`Counted.written` once its ``COMMIT`` returned; a
transaction that fails gives the claim back, and the next write of the block (or the
caller, at the block's end: :mod:`memstrata._async.quotas`) counts them.

Only a caller's write transactions carry them: not the writes behind a search (counters
and cache entries, PostgreSQL's pipelined relaxed transactions), nor a background thread
(a thread or task started before the block has its own context).

Session 34: the entries are claimed just before the count is added (at the end of the
transaction, not when it begins), so of two transactions running at once inside one block
(``asyncio.gather`` of two writes, threads) the one that reaches its ``COMMIT`` first
carries them, and one that fails hands them back while its sibling may still take them. A
transaction that commits marks every entry it saw :attr:`Counted.landed` (a write of the
block is stored), carrying it or not: a block whose count was handed back after a sibling
landed without it counts it apart at its end (:func:`close`), so no written embedding goes
uncounted. A ``COMMIT`` whose outcome the driver could not tell (the connection lost while
committing) is resolved by the store when it can (PostgreSQL: ``txid_status`` of the
transaction on another connection); when it cannot, the count is handed back (kept
pending): counted twice at worst, never lost.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from memstrata.store.counter_types import Take

__all__ = ["NOTHING", "Claim", "Counted", "Home", "carried", "claim", "close", "merged", "settle"]


class Home:
    """A durable store's name for its counted writes (one per store object): the counts
    a caller gave this store are added by this store's transactions only."""

    __slots__ = ()


@dataclass(slots=True, eq=False)
class Counted:
    """Counts waiting for ``home``'s next write transaction of the caller."""

    takes: tuple[Take, ...]
    home: Home
    written: bool = False  # committed with a write (or counted apart: closed)
    claimed: bool = False  # a write transaction holds them now
    landed: bool = False  # a write transaction of the block committed (with them or not)


@dataclass(slots=True, eq=False)
class Claim:
    """What one write transaction took: the entries it carries (``mine``) and every entry
    of its home it saw unwritten (``seen``: landed once it commits)."""

    mine: list[Counted]
    seen: list[Counted]

    def __bool__(self) -> bool:
        return bool(self.mine)


NOTHING = Claim([], [])


_PENDING: ContextVar[tuple[Counted, ...]] = ContextVar("memstrata_counted_writes", default=())
_LOCK = threading.Lock()  # a sync store's transactions run on several threads


@contextmanager
def carried(entry: Counted) -> Iterator[Counted]:
    """The block's write transactions on ``entry.home`` carry ``entry``'s counts."""
    token = _PENDING.set((*_PENDING.get(), entry))
    try:
        yield entry
    finally:
        _PENDING.reset(token)


def claim(home: Home | None) -> Claim:
    """The entries this caller gave ``home`` that no write carries yet, now claimed (call
    it just before adding the counts, at the end of the transaction), and every unwritten
    entry of ``home`` the caller has (landed when this transaction commits)."""
    found = _PENDING.get()
    if not found or home is None:
        return NOTHING
    with _LOCK:
        seen = [e for e in found if e.home is home and not e.written]
        mine = [e for e in seen if not e.claimed]
        for e in mine:
            e.claimed = True
    return Claim(mine, seen)


def settle(taken: Claim, *, committed: bool) -> None:
    """After the transaction: written with it (and every entry it saw landed), or given
    back to the next write (or a sibling transaction still open)."""
    if not taken.seen:
        return
    with _LOCK:
        for e in taken.mine:
            e.claimed = False
            e.written = e.written or committed
        if committed:
            for e in taken.seen:
                e.landed = True


def close(entry: Counted, *, force: bool = False) -> bool | None:
    """At the block's end: whether its counts must be added apart now (none of its writes
    carried them); after True or False no transaction carries them. None: a sibling
    transaction holds them (its ``COMMIT`` under way): ask again once it ended
    (:mod:`memstrata._async.quotas` waits a bounded time, then ``force``: counted apart,
    and that transaction, should it commit, counts them a second time: never lost)."""
    with _LOCK:
        if entry.written:
            return False
        if entry.claimed and not force:
            return None
        entry.written = True
        return True


def merged(entries: Sequence[Counted]) -> list[Take]:
    """One unlimited take per counter key, in key order (as every take locks its rows)."""
    by_key: dict[str, Take] = {}
    for e in entries:
        for t in e.takes:
            had = by_key.get(t.key)
            amount = t.amount + (had.amount if had is not None else 0)
            by_key[t.key] = Take(t.key, amount, None, t.ttl_seconds, t.family, t.keep_from)
    return [by_key[k] for k in sorted(by_key)]
