"""Helpers of the tests of memory://'s per-user and per-caller bookkeeping (mem31's shared
entries, mem31b's per-user indexes): a dict of entries that counts what its walks yield,
the records their scripts and state machines write, the list reads they compare, and the
``bm25s`` index the store built anew at each search until session 31."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import bm25s
import numpy as np

from memstrata.filters import Filters
from memstrata.records import AccessControl, Content, MemoryRecord, RecordType
from memstrata.scope import Scope
from memstrata.store.memory import InMemoryStore

__all__ = ["T0", "CountingDict", "bm25_hits", "drawn", "listing_reads", "note"]

T0 = datetime(2024, 1, 1, tzinfo=UTC)


class CountingDict(dict[Any, Any]):
    """A dict that counts the entries its walks yield."""

    walked = 0

    def _count(self, it: Iterator[Any]) -> Iterator[Any]:
        for x in it:
            self.walked += 1
            yield x

    def values(self) -> Any:
        return self._count(iter(dict.values(self)))

    def items(self) -> Any:
        return self._count(iter(dict.items(self)))

    def keys(self) -> Any:
        return self._count(iter(dict.keys(self)))

    def __iter__(self) -> Iterator[Any]:
        return self._count(dict.__iter__(self))


def note(i: int, user: str, rid: str, words: Sequence[str], **fields: Any) -> MemoryRecord:
    """Note ``i`` of ``user`` (of tenant ``acme``), id ``rid``: two of ``words`` and its
    number, observed ``i`` minutes after :data:`T0`; ``fields`` set the rest."""
    text = f"{words[i % len(words)]} {words[(i * 7 + 3) % len(words)]} note {i}"
    when = T0 + timedelta(minutes=i)
    return MemoryRecord(
        id=rid,
        tenant="acme",
        user=user,
        type=RecordType.NOTE,
        content=Content(text),
        created_at=when,
        updated_at=when,
        observed_at=when,
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
        **fields,
    )


def drawn(
    n: int, owner: tuple[str, str], text: str, access: AccessControl, message: bool
) -> MemoryRecord:
    """A state machine's ``n``-th record of ``owner`` (a tenant and a user): a message or a
    note in session s1 or s2, its time drawn so that times tie and come out of order."""
    when = T0 + timedelta(minutes=(n * 7) % 23)  # observed_at ties and disorder
    return MemoryRecord(
        id=f"r{n:03d}",
        tenant=owner[0],
        user=owner[1],
        type=RecordType.MESSAGE if message else RecordType.NOTE,
        content=Content(text),
        session="s1" if n % 2 else "s2",
        created_at=when,
        updated_at=when,
        observed_at=when,
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
        access=access,
    )


def listing_reads(store: InMemoryStore, scope: Scope, f: Filters) -> list[Any]:
    """What ``scope`` lists of ``f``: a page and the whole list each way, what comes after
    the first record, the count and the pages of three."""
    out: list[Any] = []
    for newest in (True, False):
        page = store.list(scope, f, limit=4, offset=1, newest_first=newest)
        out.append([r.id for r in page])
        whole = store.list(scope, f, limit=100, newest_first=newest)
        out.append([r.id for r in whole])
        if whole:  # a cursor: what comes after the first record
            after = store.list_after(scope, f, whole[0].id, limit=3, newest_first=newest)
            out.append([r.id for r in after])
    out.append(store.count(scope, f))
    out.append([[r.id for r in p] for p in store.list_pages(scope, f, batch_size=3)])
    return out


def bm25_hits(
    entries: list[Any],
    terms: list[list[str]],
    query: Sequence[str],
    admits: Callable[[MemoryRecord], bool],
) -> list[tuple[str, float]]:
    """The ids and scores of a ``bm25s`` index of ``terms`` (those of ``entries``, the
    store's entries, in order) built anew for ``query``, best first (ties in the store's
    order, ``seq``), of the records ``admits`` keeps: what the store gave until session 31."""
    if not any(terms):
        return []
    index = bm25s.BM25()
    index.index(terms, show_progress=False)
    known = [t for t in query if t in index.vocab_dict]
    if not known:
        return []
    scores = np.asarray(index.get_scores(known), dtype=np.float64)
    hits = []
    for i in np.flatnonzero(scores > 0):
        e = entries[i]
        if admits(e.record):
            hits.append((-float(scores[i]), e.seq, e.record.id))
    hits.sort()
    return [(rid, -neg) for neg, _, rid in hits]
