"""The code before mem32, kept as the oracle of tests/mem32: a caller's reads as a sort of
every entry the caller may read (found by a walk of every entry of the store), and what a
user's purge deleted by its walks of every user's cache entries, citations, links, quota
rows and key rows (main 661d64c's comprehensions, run on a copy of every row)."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any

from memstrata.filters import Filters
from memstrata.quota_types import subject_hash
from memstrata.records import MemoryRecord
from memstrata.scope import Scope
from memstrata.store.memory import InMemoryStore, _cmp
from memstrata.store.types import ListQuery


class Sorted(InMemoryStore):
    """``list``, ``list_after`` and ``list_pages`` as they were (661d64c), over a walk of
    every entry of the store."""

    @classmethod
    def over(cls, store: InMemoryStore) -> Sorted:
        old = cls.__new__(cls)
        old.__dict__.update(store.__dict__)
        return old

    def _scoped(self, scope: Scope) -> builtins.list[Any]:
        return [e for e in self._entries.values() if e.record.visible_in(scope)]

    def _list(self, q: ListQuery) -> builtins.list[MemoryRecord]:
        scoped = self._scoped(q.scope)
        self.walked += len(scoped)
        rows = [e for e in scoped if q.filters.matches(e.record)]
        rows.sort(key=lambda e: (e.record.observed_at, e.seq), reverse=q.newest_first)
        offset = max(0, q.offset)
        return [e.record for e in rows[offset : offset + q.limit]]

    def list_after(
        self,
        scope: Scope,
        filters: Filters,
        record_id: str,
        *,
        limit: int = 20,
        newest_first: bool = False,
    ) -> builtins.list[MemoryRecord]:
        with self._lock:
            at = self._visible(scope, record_id)
            if at is None or limit <= 0:
                return []
            place = (at.record.observed_at, at.seq)
            sign = -1 if newest_first else 1
            rows = [
                e
                for e in self._scoped(scope)
                if sign * _cmp((e.record.observed_at, e.seq), place) > 0
                and filters.matches(e.record)
            ]
        rows.sort(key=lambda e: (e.record.observed_at, e.seq), reverse=newest_first)
        return [e.record for e in rows[:limit]]

    def list_pages(
        self, scope: Scope, filters: Filters, *, batch_size: int = 1000
    ) -> Iterator[builtins.list[MemoryRecord]]:
        with self._lock:
            rows = [e for e in self._scoped(scope) if filters.matches(e.record)]
        rows.sort(key=lambda e: (e.record.observed_at, e.seq))
        size = max(1, batch_size)
        for start in range(0, len(rows), size):
            yield [e.record for e in rows[start : start + size]]


def flat(store: InMemoryStore) -> dict[str, Any]:
    """Every row of the parts a user's purge deletes, as the code before mem32 keyed them:
    the cache by ``(tenant, user, model, key)``, citations and links by ``(tenant, user,
    id)``, metadata and key rows by their keys."""
    return {
        "cache": {
            (t, u, m, k)
            for (t, u), models in store._cache.items()
            for m, held in models.items()
            for k in held
        },
        "cites": {
            (t, u, i): frozenset(v)
            for (t, u), mine in store._cites.items()
            for i, v in mine.items()
        },
        "links": {
            (t, u, i): frozenset(v)
            for (t, u), mine in store._links.items()
            for i, v in mine.items()
        },
        "meta": dict(store._meta.items()),
        "keys": dict(store._key_rows.items()),
    }


def old_purge_user_effect(before: dict[str, Any], tenant: str, user: str) -> tuple[Any, int]:
    """What 661d64c's ``purge_user`` left of ``before`` (:func:`flat`), by its own walks,
    and its report's ``cache_entries``. (Its records' drops touch their own user's
    citations alone, all of which it then deleted.)"""
    cache = set(before["cache"])
    stale = [k for k in cache if k[:2] == (tenant, user)]
    for key in stale:
        cache.discard(key)
    cites = dict(before["cites"])
    for cite in [k for k in cites if k[:2] == (tenant, user)]:
        del cites[cite]
    links = dict(before["links"])
    for link in [k for k in links if k[:2] == (tenant, user)]:
        del links[link]
    meta = dict(before["meta"])
    mark = f":{subject_hash(tenant, user)}:"
    for meta_key in [k for k in meta if k.startswith("quota:") and mark in k]:
        del meta[meta_key]
    keys = dict(before["keys"])
    bound = [k.id for k in keys.values() if (k.tenant, k.user) == (tenant, user)]
    for key_id in bound:
        del keys[key_id]
    after = {"cache": cache, "cites": cites, "links": links, "meta": meta, "keys": keys}
    return after, len(stale)
