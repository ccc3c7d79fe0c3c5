"""Bulk read and write of an :class:`~memstrata.store.memory.InMemoryStore`
(:class:`~memstrata.store.base.StoreCopy`), so a copy between any two stores can be tested
against the plain-dict reference too.

The in-memory cache is keyed by tenant and user, the SQL stores' by the user's scope token;
a loaded cache entry is filed under the user its token names among the users this store
knows (records, jobs, cache). One naming no known user yet (a migration loads the cache
before the records) is kept aside under its token, dumped as it is, and filed under its
user when a record of that user is loaded: never dropped.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..audit import AuditEvent, InMemoryAudit, audit_store
from ..errors import StoreError
from ..jobs import Job
from ..records import MemoryRecord
from .base import CacheEntry, RecordDump, Vector
from .history_parts import EarlierVersions, part_size
from .key_rows import KeyRow
from .memory_filed import key_hash_owner
from .past_versions import checked_parts
from .sqlite.codec import scope_token

if TYPE_CHECKING:
    from .memory import InMemoryStore, _Entry

__all__ = [
    "dump_audit",
    "dump_cache",
    "dump_jobs",
    "dump_keys",
    "dump_records",
    "load_audit",
    "load_cache",
    "load_jobs",
    "load_keys",
    "load_records",
]

# store -> scope token -> (model_id, key) -> vector: entries of users not known yet.
_ASIDE: weakref.WeakKeyDictionary[InMemoryStore, dict[str, dict[tuple[str, str], Vector]]] = (
    weakref.WeakKeyDictionary()
)


def _aside(s: InMemoryStore) -> dict[str, dict[tuple[str, str], Vector]]:
    return _ASIDE.setdefault(s, {})


def dump_records(s: InMemoryStore, batch_size: int = 500) -> Iterator[list[RecordDump]]:
    limit = part_size()
    with s._lock:
        dumps = [_dump(e, limit) for e in sorted(s._entries.values(), key=lambda e: e.seq)]
    for start in range(0, len(dumps), max(1, batch_size)):
        yield dumps[start : start + max(1, batch_size)]


def _dump(e: _Entry, limit: int) -> RecordDump:
    """An entry as the SQL stores dump it: a history of more than ``limit`` versions in
    parts (``RecordDump.earlier``; the list as it is now, as their one read)."""
    vector = None if e.vector is None else e.vector.copy()
    if len(e.history) > limit:
        earlier = EarlierVersions.of(tuple(e.history), limit)
        return RecordDump((e.record,), vector, tuple(e.terms), dict(e.counters), earlier)
    return RecordDump((*e.history, e.record), vector, tuple(e.terms), dict(e.counters))


def load_records(s: InMemoryStore, dumps: Sequence[RecordDump]) -> int:
    from .memory import _Entry, _key, _vector

    new = 0
    with s._lock:
        for d in dumps:
            key = _key(d.record)
            if key in s._entries:
                continue
            s._seq += 1
            s._add_entry(
                _Entry(
                    s._seq,
                    d.record,
                    tuple(d.terms),
                    None if d.vector is None else _vector(d.vector),
                    _history(d),
                    dict(d.counters),
                )
            )
            s._cite(d.record)  # what it cites (store/citations.py)
            s._link(s._entries[key].history)  # what its earlier versions name (purge31b)
            s._changed(d.record.tenant, d.record.user, d.record.id)
            new += 1
            waiting = _aside(s).pop(scope_token(d.record.tenant, d.record.user), None)
            for (model_id, k), vector in (waiting or {}).items():
                mine = s._cache.setdefault((d.record.tenant, d.record.user), {})
                mine.setdefault(model_id, {}).setdefault(k, vector)
    return new


def _history(d: RecordDump) -> list[MemoryRecord]:
    """The record's earlier versions, oldest first (a long history's parts come newest
    part first, each checked as the SQL stores check them)."""
    if d.earlier is None:
        return list(d.versions[:-1])
    parts = [list(part) for part, _ in checked_parts(d.record, d.earlier)]
    return [v for part in reversed(parts) for v in part]


def dump_cache(s: InMemoryStore, batch_size: int = 500) -> Iterator[list[CacheEntry]]:
    with s._lock:
        entries = [
            CacheEntry(scope_token(t, u), m, k, v.copy())
            for (t, u), models in s._cache.items()
            for m, held in models.items()
            for k, v in held.items()
        ]
        entries += [
            CacheEntry(tok, m, k, v.copy())
            for tok, waiting in _aside(s).items()
            for (m, k), v in waiting.items()
        ]
        entries.sort(key=lambda e: (e.scope_tok, e.model_id, e.key))
    for start in range(0, len(entries), max(1, batch_size)):
        yield entries[start : start + max(1, batch_size)]


def load_cache(s: InMemoryStore, entries: Sequence[CacheEntry]) -> int:
    new = 0
    with s._lock:
        users = set(s._owned)
        users |= s._jobs.users()
        users |= set(s._cache)
        by_token = {scope_token(t, u): (t, u) for t, u in users}
        for e in entries:
            owner = by_token.get(e.scope_tok)
            if owner is None:
                waiting = _aside(s).setdefault(e.scope_tok, {})
                if (e.model_id, e.key) not in waiting:
                    waiting[(e.model_id, e.key)] = np.array(e.vector, dtype=np.float32)
                    new += 1
                continue
            held = s._cache.setdefault(owner, {}).setdefault(e.model_id, {})
            if e.key not in held:
                held[e.key] = np.array(e.vector, dtype=np.float32)
                new += 1
    return new


def dump_jobs(s: InMemoryStore, batch_size: int = 500) -> Iterator[list[Job]]:
    with s._lock:
        jobs = sorted(s._jobs.values(), key=lambda j: j.id.encode())
    for start in range(0, len(jobs), max(1, batch_size)):
        yield jobs[start : start + max(1, batch_size)]


def load_jobs(s: InMemoryStore, jobs: Sequence[Job]) -> int:
    with s._lock:
        fresh = {j.id: j for j in jobs if j.id not in s._jobs}
        for job in fresh.values():
            s._jobs.put(job)
    return len(fresh)


def _audit(s: InMemoryStore) -> InMemoryAudit:
    backend = audit_store(s)
    if not isinstance(backend, InMemoryAudit):  # pragma: no cover - audit_store's contract
        raise StoreError("a memory:// store keeps its audit log in process memory")
    return backend


def dump_audit(s: InMemoryStore, batch_size: int = 500) -> Iterator[list[AuditEvent]]:
    backend = _audit(s)
    with backend._lock:
        events = list(backend._events)
    for start in range(0, len(events), max(1, batch_size)):
        yield events[start : start + max(1, batch_size)]


def load_audit(s: InMemoryStore, events: Sequence[AuditEvent]) -> int:
    backend = _audit(s)
    with backend._lock:
        fresh = [e for e in events if e.id not in backend._ids]  # held ids: no walk
        backend._extend(fresh)
    return len(fresh)


def dump_keys(s: InMemoryStore, batch_size: int = 500) -> Iterator[list[KeyRow]]:
    with s._lock:
        keys = sorted(s._key_rows.values(), key=lambda k: k.id)
    for start in range(0, len(keys), max(1, batch_size)):
        yield keys[start : start + max(1, batch_size)]


def load_keys(s: InMemoryStore, keys: Sequence[KeyRow]) -> int:
    new = 0
    with s._lock:  # the rows are filed by hash (memory_filed.key_row_owners): no walk of them
        held = s._key_rows
        for key in keys:  # a held id or hash is skipped, as the databases' ON CONFLICT does
            if key.id not in held and not held.holds(key_hash_owner(key.key_hash)):
                held[key.id] = key
                new += 1
    return new
