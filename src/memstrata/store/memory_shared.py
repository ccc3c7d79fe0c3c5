"""What callers may read of an owner's records on memory://, kept up to date by each write.

A caller (``Scope.caller``: another user, a role, or anyone for ``public``) reads only the
owner's records that are public or name readers or roles: :class:`Shared` holds those
entries of one owner, and for each caller who searched, a :class:`CallerIndex` of what that
caller may read. Until session 31 both were gathered again by a walk of every record of the
store after each change of the owner's records (caller30's shared entries, session 28's
caller BM25 index): one add of a private note cost a caller's next read a walk of the whole
store. Now each write hands the ids it touched (``InMemoryStore._changed``) and only those
entries are looked at again (:meth:`Shared.touch`).

A caller's lexical scores are those ``bm25s`` gives an index built of the caller's readable
records (the index the store rebuilt before; ``tests/mem31`` compares them after every step
of random writes): Lucene's BM25 (``k1`` 1.5, ``b`` 0.75, ``idf = log(1 + (N - n + 0.5) /
(n + 0.5))``), a term's score in a document stored as float32 and a query's terms summed in
float32 in the query's order. The statistics (``N``, the total length, each term's
documents) are kept as counts, so a score is computed at search time from the postings of
the query's terms. The owner's own index of every record's terms is one too (a
:class:`Postings`, mem31b: until then a ``bm25s`` index rebuilt after each write).

A caller's ``list`` (and ``list_after``, ``list_pages``) sorted every shared entry the
caller may read at each call until session 32; each caller who lists now has a
:class:`CallerOrder`, what it may read kept in list order ``(observed_at, seq)`` by the same
touched ids, which a page walks from the asked end (mem32); and by type, session and tag,
so a page or count with those filters walks what they may match (mem33); and by
``superseded_by``, importance and metadata (mem34).
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections import Counter, OrderedDict
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from ..filters import Filters
from ..records import MemoryRecord, RecordType, Visibility
from ..scope import Scope
from ..search.tokenize import tokenize

__all__ = [
    "CALLERS_KEPT",
    "CallerIndex",
    "CallerOrder",
    "Postings",
    "Shared",
    "is_shared",
    "lane_keys",
    "own_tokens",
]

K1 = 1.5  # bm25s.BM25's defaults, the index the store built before
B = 0.75
# The caller indexes one owner keeps (the most recently searched); another caller's first
# search builds its index from the shared entries.
CALLERS_KEPT = 32


class _Entry(Protocol):
    seq: int
    record: MemoryRecord
    terms: tuple[str, ...]


def is_shared(record: MemoryRecord) -> bool:
    """Whether some caller may read ``record`` (when it is active): public, or naming
    readers or roles."""
    a = record.access
    return a.visibility is Visibility.PUBLIC or bool(a.allowed_users) or bool(a.allowed_roles)


def own_tokens(entry: _Entry) -> list[str]:
    """What a caller's index holds of ``entry``: a message by its own text's terms, not
    those of the question it is also indexed under (:mod:`memstrata.store.caller_bm25`)."""
    if entry.record.type is RecordType.MESSAGE:
        return tokenize(entry.record.text)
    return list(entry.terms)


class Postings:
    """BM25 statistics and postings of a set of documents (a record's id and its tokens),
    kept up to date one document at a time: an owner's index of all their records' terms
    (``InMemoryStore``'s own search, mem31b) and each caller's (:class:`CallerIndex`)."""

    def __init__(self) -> None:
        self.docs: dict[str, tuple[int, Counter[str]]] = {}  # id: (length, term counts)
        self.postings: dict[str, dict[str, int]] = {}  # term: {id: count}
        self.total = 0  # the documents' lengths summed

    def put_tokens(self, rid: str, tokens: Sequence[str]) -> None:
        """Document ``rid`` is now ``tokens`` (in the index, with no token too: it counts
        among the documents, as in a ``bm25s`` index built of them)."""
        self.drop(rid)
        counts = Counter(tokens)
        self.docs[rid] = (len(tokens), counts)
        self.total += len(tokens)
        for term, n in counts.items():
            self.postings.setdefault(term, {})[rid] = n

    def drop(self, rid: str) -> None:
        doc = self.docs.pop(rid, None)
        if doc is None:
            return
        length, counts = doc
        self.total -= length
        for term in counts:
            held = self.postings[term]
            del held[rid]
            if not held:
                del self.postings[term]

    def scores(self, query: Sequence[str]) -> dict[str, float]:
        """Each document holding a term of ``query`` (distinct terms), with its score: what
        ``bm25s.BM25.get_scores`` gives an index of the documents, bit for bit (every
        operation on the types bm25s uses, a term's scores added in float32 in the query's
        order as its ``np.add.at``; tests/mem31 and tests/mem31b hold them equal)."""
        n_docs = len(self.docs)
        if n_docs == 0 or self.total == 0:  # bm25s is given no documents then (0 mean length)
            return {}
        found = [held for held in (self.postings.get(t) for t in query) if held]
        if not found:
            return {}
        l_avg = np.float64(self.total) / n_docs  # numpy's mean of the lengths
        where: dict[str, int] = {}  # id: its place in ``acc``
        parts: list[tuple[Any, Any]] = []
        for held in found:
            idf = np.float32(math.log(1 + (n_docs - len(held) + 0.5) / (len(held) + 0.5)))
            n = len(held)
            tf = np.fromiter(held.values(), dtype=np.float32, count=n)
            l_d = np.fromiter((self.docs[i][0] for i in held), dtype=np.int64, count=n)
            tfc = tf / (K1 * ((1 - B) + B * l_d / l_avg) + tf)
            at = np.fromiter((where.setdefault(i, len(where)) for i in held), np.int64, count=n)
            parts.append((at, (idf * tfc).astype(np.float32)))
        acc = np.zeros(len(where), dtype=np.float32)
        for at, part in parts:  # an id once per term: a plain float32 add per id
            acc[at] += part
        return {rid: v for rid, v in zip(where, acc.tolist(), strict=True) if v > 0}


class CallerIndex(Postings):
    """BM25 statistics and postings of the records one caller may read (``readable``: the
    caller's ``user_scope``)."""

    def __init__(self, readable: Scope) -> None:
        super().__init__()
        self.readable = readable

    def put(self, entry: _Entry, tokens: list[str] | None = None) -> None:
        """``entry`` as it is now: in the index if the caller may read it, out if not
        (``tokens``: its :func:`own_tokens`, when already made)."""
        rid = entry.record.id
        if not entry.record.visible_in(self.readable):
            self.drop(rid)
            return
        self.put_tokens(rid, own_tokens(entry) if tokens is None else tokens)


Place = tuple[datetime, int, str]  # a record's place in a list: (observed_at, seq, id)
# A lane of a caller's order (:class:`CallerOrder`): ``("type", type)``, ``("session",
# name)``, ``("tag", tag)``; ``("current",)`` (no ``superseded_by``), ``("importance",
# tenth)`` (:func:`_tenth`), ``("meta", key)`` (the key held) and ``("meta", key, part)``
# (a JSON scalar value, by its hash's part: :func:`_part`; mem34): the places of the records
# it holds, in list order.
LaneKey = tuple[Any, ...]
_SCALARS = (str, int, float, bool, type(None))
# A metadata key's values are kept in this many lanes at most (by their hash): a lane per
# value would cost a list for each record whose value is its own (an id, a time, a score).
META_PARTS = 64


def _part(value: Any) -> int:
    """The lane of a scalar metadata value among its key's :data:`META_PARTS`: equal values
    (``1``, ``1.0`` and ``True`` too, as the filter compares them) hash alike."""
    return hash(value) % META_PARTS


def _tenth(importance: Any) -> int:
    """The importance lane of ``importance``: its tenth, 0 to 10 (below 0: 0; 1 and above,
    or NaN, which every ``min_importance`` lets through: 10). Monotonic: every record of
    importance at least ``m`` is in the lanes from ``_tenth(m)`` on."""
    if not importance < 1.0:
        return 10
    return int(importance * 10) if importance >= 0.0 else 0


def lane_keys(record: MemoryRecord) -> tuple[LaneKey, ...]:
    """The lanes ``record`` is placed in: its type's, its session's, each of its tags',
    the current records' if it is one, its importance's tenth's, and each metadata key's
    (and the part of its values holding the value, for a JSON scalar)."""
    keys: list[LaneKey] = [("type", record.type)]
    if record.session is not None:
        keys.append(("session", record.session))
    keys.extend(("tag", t) for t in dict.fromkeys(record.tags))
    if record.superseded_by is None:
        keys.append(("current",))
    keys.append(("importance", _tenth(record.importance)))
    for k, v in record.metadata.items():
        keys.append(("meta", k))
        if isinstance(v, _SCALARS):
            keys.append(("meta", k, _part(v)))
    return tuple(keys)


class CallerOrder:
    """The owner's records one caller may read (``readable``: the caller's ``user_scope``;
    active ones alone: a caller reads no deleted record), in list order: ``places`` sorted,
    so a page is walked from either end (bisect to a cursor or a time bound) instead of
    sorting everything the caller may read. The same places are kept by type, session and
    tag (``lanes``, mem33), whether current, by importance's tenth and by metadata key
    and scalar value (mem34), so a list or count with those filters walks the narrowest
    (:meth:`narrowest`), not everything the caller may read."""

    def __init__(self, readable: Scope, entries: Sequence[Any]) -> None:
        self.readable = readable
        self.places: list[Place] = []
        self.placed: dict[str, Place] = {}
        self.lanes: dict[LaneKey, list[Place]] = {}
        self.filed: dict[str, tuple[LaneKey, ...]] = {}  # id: the lanes it is placed in
        for e in entries:
            if e.record.visible_in(readable):
                place = (e.record.observed_at, e.seq, e.record.id)
                self.places.append(place)
                self.placed[place[2]] = place
                keys = self.filed[place[2]] = lane_keys(e.record)
                for key in keys:
                    self.lanes.setdefault(key, []).append(place)
        self.places.sort()
        for lane in self.lanes.values():
            lane.sort()

    def put(self, rid: str, entry: Any | None) -> None:
        """Record ``rid`` is now ``entry`` (``None``: gone): placed if the caller may read it."""
        now: Place | None = None
        keys: tuple[LaneKey, ...] = ()
        if entry is not None and entry.record.visible_in(self.readable):
            now = (entry.record.observed_at, entry.seq, rid)
            keys = lane_keys(entry.record)
        held = self.placed.get(rid)
        if held == now and self.filed.get(rid, ()) == keys:
            return
        if held is not None:
            del self.places[bisect_left(self.places, held)]
            del self.placed[rid]
            for key in self.filed.pop(rid):
                lane = self.lanes[key]
                del lane[bisect_left(lane, held)]
                if not lane:
                    del self.lanes[key]
        if now is not None:
            _place(self.places, now)
            self.placed[rid] = now
            self.filed[rid] = keys
            for key in keys:
                _place(self.lanes.setdefault(key, []), now)

    def narrowest(self, session: str | None, filters: Filters) -> list[list[Place]]:
        """The fewest places holding every record a walk of ``session`` (a scope's) and
        ``filters`` may yield: the whole order, the session's lane, the lanes of the
        filter's types (one record in one), the smallest lane of ``tags_all``, the lanes
        of ``tags_any`` (a record in several: the walk yields it once), the current
        records' (superseded ones left out), the importance tenths from ``min_importance``'s
        on, or a metadata condition's lanes (:meth:`_meta_lanes`)."""
        options = [[self.places]]
        if session is not None:
            options.append([self.lanes.get(("session", session), [])])
        if filters.types is not None:
            options.append([self.lanes.get(("type", t), []) for t in filters.types])
        if filters.tags_all:
            tags = (self.lanes.get(("tag", t), []) for t in filters.tags_all)
            options.append([min(tags, key=len)])
        if filters.tags_any is not None:
            options.append([self.lanes.get(("tag", t), []) for t in filters.tags_any])
        if filters.valid_at is None and not filters.include_superseded:
            options.append([self.lanes.get(("current",), [])])
        m = filters.min_importance
        if isinstance(m, int | float) and m == m:  # NaN lets every record through
            options.append([self.lanes.get(("importance", t), []) for t in range(_tenth(m), 11)])
        for c in filters.metadata:
            options.append(self._meta_lanes(c.key, c.op, c.value))
        return min(options, key=lambda lanes: sum(map(len, lanes)))

    def _meta_lanes(self, key: str, op: str, value: Any) -> list[list[Place]]:
        """The lanes holding every record a metadata condition may match: the value's part
        (an ``eq`` of a scalar), the values' parts (``in``), or the key's (any condition but
        ``ne``, which a record without the key matches: then the whole order)."""
        if op == "ne":
            return [self.places]
        if op == "eq" and isinstance(value, _SCALARS):
            return [self.lanes.get(("meta", key, _part(value)), [])]
        if op == "in" and all(isinstance(v, _SCALARS) for v in value):
            parts = sorted({_part(v) for v in value})
            return [self.lanes.get(("meta", key, p), []) for p in parts]
        return [self.lanes.get(("meta", key), [])]


def _place(places: list[Place], place: Place) -> None:
    """``place`` into sorted ``places``: appended when it is the last (a new record, the
    usual write), else bisected to."""
    if not places or places[-1] < place:
        places.append(place)
    else:
        insort(places, place)


class Shared:
    """One owner's entries some caller may read, in the store's order, and the indexes of
    what each caller who searched may read of them; each write's touched ids update them
    (:meth:`touch`)."""

    def __init__(self, entries: list[Any]) -> None:
        self.entries: dict[str, Any] = {e.record.id: e for e in entries if is_shared(e.record)}
        self._ordered: list[Any] | None = sorted(self.entries.values(), key=lambda e: e.seq)
        self.callers: OrderedDict[tuple[str, frozenset[str]], CallerIndex] = OrderedDict()
        self.orders: OrderedDict[tuple[str, frozenset[str]], CallerOrder] = OrderedDict()

    def ordered(self) -> list[Any]:
        """The shared entries in the store's order (insertion, ``seq``)."""
        if self._ordered is None:
            self._ordered = sorted(self.entries.values(), key=lambda e: e.seq)
        return self._ordered

    def touch(self, rid: str, entry: Any | None) -> None:
        """Record ``rid`` is now ``entry`` (``None``: gone)."""
        held = self.entries.get(rid)
        now = entry if entry is not None and is_shared(entry.record) else None
        if held is not None and held is not now:
            del self.entries[rid]
            self._ordered = None
        if now is not None and held is not now:
            self.entries[rid] = now
            last = self._ordered
            if last is not None and (not last or last[-1].seq < now.seq):
                last.append(now)
            else:
                self._ordered = None
        tokens = own_tokens(now) if now is not None and self.callers else None
        for index in self.callers.values():
            if now is None:
                index.drop(rid)
            else:
                index.put(now, tokens)
        for order in self.orders.values():
            order.put(rid, now)

    def caller(self, scope: Scope) -> CallerIndex:
        """The index of what ``scope``'s caller may read (its whole ``user_scope``)."""
        who = (scope.caller or "", scope.roles)
        found = self.callers.get(who)
        if found is None:
            found = CallerIndex(scope.user_scope)
            for e in self.ordered():
                found.put(e)
            self.callers[who] = found
            while len(self.callers) > CALLERS_KEPT:
                self.callers.popitem(last=False)
        else:
            self.callers.move_to_end(who)
        return found

    def order(self, scope: Scope) -> CallerOrder:
        """What ``scope``'s caller may read in list order (its whole ``user_scope``); the
        orders of the :data:`CALLERS_KEPT` callers who listed last are kept."""
        who = (scope.caller or "", scope.roles)
        found = self.orders.get(who)
        if found is None:
            found = CallerOrder(scope.user_scope, self.ordered())
            self.orders[who] = found
            while len(self.orders) > CALLERS_KEPT:
                self.orders.popitem(last=False)
        else:
            self.orders.move_to_end(who)
        return found
