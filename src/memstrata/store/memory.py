"""``InMemoryStore``: the store protocol over plain dicts, for tests and throwaway agents.

It is a second, independent implementation of the contract (no SQL), so the contract suite
comparing it with SQLite catches mistakes in either. Lexical search is BM25 over one user's
terms, scored as ``bm25s`` scores them (store/memory_shared.py); vectors are scored with
numpy. Each user's entries, their BM25 statistics and their vectors are kept per user and
updated by each write for the records it touched (mem31b), so a write and a search cost what
the user holds, not what the store holds. Nothing persists beyond the process.
"""

from __future__ import annotations

import builtins
import heapq
import itertools
import threading
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

import numpy as np

from ..audit import AuditEvent
from ..audit_backends import InMemoryAudit
from ..clock import later
from ..errors import NotFoundError, ValidationError, closed_store
from ..filters import Filters
from ..jobs import (
    DONE_SWEEP_BATCH,
    Job,
    JobStatus,
    LeaseLostError,
    job_status,
    new_lease_token,
)
from ..records import MemoryRecord, RecordStatus, RecordType
from ..scope import Scope
from ..validation import counted
from . import memory_dump as dump
from . import quota_counters as qc
from .base import (
    CacheEntry,
    Candidate,
    PurgeReport,
    RecordDump,
    RecordWrite,
    StoreStats,
    UnitOfWork,
    Vector,
)
from .citations import cited, linked
from .counter_types import SWEEP_BATCH, CounterFamilies
from .history_parts import readable_part
from .key_rows import KeyRow
from .memory_filed import Filed, key_row_owners, quota_subjects
from .memory_jobs import JobIndex
from .memory_shared import Place, Postings, Shared
from .one_model import MODEL_KEY
from .past_versions import check_finished, check_past, history_key, newer_of
from .purged_reader import without_links, without_reader
from .types import (
    KeyVersions,
    ListQuery,
    RecordView,
    StoredVector,
    check_replace,
    history_of,
    kept_records,
    name_field,
    name_type,
    readable_versions,
)

__all__ = ["InMemoryStore"]

_OPEN = (JobStatus.PENDING, JobStatus.RUNNING)


class _Lock:
    """The store's lock; once the store is closed, taking it refuses the call."""

    def __init__(self, store: object) -> None:
        self._lock = threading.RLock()
        self._store = store
        self.closed = False

    def __enter__(self) -> None:
        self._lock.acquire()
        if self.closed:
            self._lock.release()
            raise closed_store(self._store)

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def _vector(v: Vector) -> Vector:
    arr = np.array(v, dtype=np.float32).ravel()
    if arr.size == 0 or not np.all(np.isfinite(arr)):
        raise ValidationError("a vector must be a non-empty 1-D array of finite numbers")
    return arr


@dataclass
class _Entry:
    """One record's current version with what is indexed for it."""

    seq: int
    record: MemoryRecord
    terms: tuple[str, ...]
    vector: Vector | None
    history: list[MemoryRecord] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    filed: str | None = None  # the session it is filed under (``InMemoryStore._sessions``)
    placed: TurnKey | None = None  # its key in its user's turns (``InMemoryStore._turns``)


Undo = list[Callable[[], None]]
_TURNS = frozenset({RecordType.MESSAGE})
TurnKey = tuple[datetime, int]  # a turn's place in its user's: (observed_at, seq)


class _Dense:
    """A user's vectors of one dimension and of the store's ``model`` (a re-embedding that
    stopped half way leaves two: store/one_model.py), one row each in the store's order
    (``seq``), as the stacked matrix rebuilt after each write until session 31 held them
    (so equal scores keep that order). Each write updates the rows of the records it
    touched (:meth:`touch`): a new record's row is appended, a dropped one's emptied (its
    id ``None``); a record that gains a vector behind the last row marks the matrix
    ``stale`` (rebuilt from the user's entries at the next search, as when half its rows
    are empty)."""

    def __init__(self, dims: int, model: str | None, entries: Iterable[_Entry]) -> None:
        self.dims = dims
        self.model = model
        held = [e for e in entries if self.fits(e)]
        self.ids: list[str | None] = [e.record.id for e in held]
        self.rows: dict[str, int] = {rid: i for i, rid in enumerate(self.ids) if rid}
        self.buf: Vector = (
            np.stack([e.vector for e in held if e.vector is not None])
            if held
            else np.zeros((16, dims), np.float32)
        )
        self.last = held[-1].seq if held else 0  # the ``seq`` of the last row appended
        self.empty = 0
        self.stale = False

    @property
    def matrix(self) -> Vector:
        return self.buf[: len(self.ids)]

    def fits(self, e: _Entry) -> bool:
        return (
            e.vector is not None
            and e.vector.size == self.dims
            and (self.model is None or e.record.embedding_model in (None, self.model))
        )

    def worn(self) -> bool:
        """Whether it is to be rebuilt: stale, or more than half its rows empty."""
        return self.stale or (self.empty > 32 and 2 * self.empty > len(self.ids))

    def _append(self, e: _Entry) -> None:
        n = len(self.ids)
        if n == len(self.buf):
            grown = np.zeros((2 * n, self.dims), np.float32)
            grown[:n] = self.buf
            self.buf = grown
        self.buf[n] = e.vector
        self.ids.append(e.record.id)
        self.rows[e.record.id] = n
        self.last = e.seq

    def touch(self, rid: str, entry: _Entry | None) -> None:
        """Record ``rid`` is now ``entry`` (``None``: gone)."""
        row = self.rows.get(rid)
        if entry is not None and self.fits(entry):
            if row is not None:
                self.buf[row] = entry.vector
            elif entry.seq > self.last:
                self._append(entry)
            else:
                self.stale = True
        elif row is not None:
            del self.rows[rid]
            self.ids[row] = None
            self.buf[row] = 0
            self.empty += 1


def _key(r: MemoryRecord) -> tuple[str, str, str]:
    return (r.tenant, r.user, r.id)


def _is(stored: object, value: str) -> bool:
    """``stored == value`` for a string ``value``, as ``Filters.matches`` compares them."""
    return isinstance(stored, str) and stored == value


class InMemoryStore:
    """A :class:`~memstrata.store.base.Store` kept in process memory."""

    stores_nul = True  # the store refuses NUL in new text; records from before hold it

    def __init__(self, *, url: str = "memory://") -> None:
        self.url = url
        self._lock = _Lock(self)
        # filed by the users their quota rows name, so a user's purge finds them (mem32)
        self._meta: Filed[str, str] = Filed(quota_subjects, by_key=True)
        self._counter_families = CounterFamilies()  # past periods' counters to sweep
        # API key rows a migration loaded (memstrata migrate into memory://): kept as data,
        # dumped again, and a user's purge deletes those bound to them, as in the other
        # stores' databases. A memory:// server's keys live in its own process.
        # filed by (tenant, user) and by hash (memory_filed.key_row_owners)
        self._key_rows: Filed[str, KeyRow] = Filed(key_row_owners)
        self._entries: dict[tuple[str, str, str], _Entry] = {}  # (tenant, user, id)
        # (tenant, user) -> cited id -> ids of the user's records that cite it (or did: a
        # superset, checked on reading, :meth:`citing`; store/citations.py)
        self._cites: dict[tuple[str, str], dict[str, set[str]]] = {}
        # (tenant, user) -> id -> ids of the user's records a version of which names it where
        # a purge of it rewrites the record (citations.linked; kept once named: a superset,
        # checked by the purge, :meth:`_unlink_superseded`, purge31b)
        self._links: dict[tuple[str, str], dict[str, set[str]]] = {}
        # each user's entries by id, in the store's order (``_add_entry``, ``_pop_entry``),
        # and each tenant's number of records: what a user's reads walk (mem31b)
        self._owned: dict[tuple[str, str], dict[str, _Entry]] = {}
        # and by session (a session's reads: its turns, a reply's question), in that order
        self._sessions: dict[tuple[str, str], dict[str, dict[str, _Entry]]] = {}
        self._tenant_records: dict[str, int] = {}
        # each user's messages (turns) in the order lists give them, (observed_at, seq), so
        # "the user's newest turn" costs a look-up, not a sort of every record (memjobs31)
        self._turns: dict[tuple[str, str], builtins.list[tuple[datetime, int, str]]] = {}
        self.walked = 0  # entries looked at by a list (tests/memjobs31)
        # (tenant, reader) -> (owner, id) of records that name the reader in some version
        # (``allowed_users``): what a reader's purge rewrites. A superset, checked on use.
        self._readers: dict[tuple[str, str], dict[tuple[str, str], None]] = {}
        # (tenant, owner, id) -> the readers the record is filed under in ``_readers``, so a
        # record's drop takes it out of them (mem32: they kept purged records' ids)
        self._named: dict[tuple[str, str, str], set[str]] = {}
        self._seq = 0
        # the embedding cache: (tenant, user) -> model id -> key -> vector
        self._cache: dict[tuple[str, str], dict[str, dict[str, Vector]]] = {}
        self._jobs = JobIndex()  # every job, and what a claim, a count or a list walks
        # each user's BM25 statistics of their records' terms, built at the user's first
        # search, then updated by each write for the records it touched (``_changed``)
        self._lexical: dict[tuple[str, str], Postings] = {}
        # each user's entries some caller may read and each caller's BM25 statistics of
        # them (store/memory_shared.py): gathered at a caller's first read, then kept up to
        # date by the ids each write touches (``_changed``)
        self._shared_of: dict[tuple[str, str], Shared] = {}
        self._dense: dict[tuple[str, str], dict[int, _Dense]] = {}  # a user's, by dims
        # its audit log (memstrata.audit_store returns it): a unit of work appends its
        # events when its writes are applied, and a user's purge redacts them under the lock
        self.audit_log = InMemoryAudit(in_transactions=True)

    def __repr__(self) -> str:
        return f"InMemoryStore({self.url!r})"

    def close(self) -> None:
        """Later calls raise :class:`~memstrata.errors.StoreError` (a second close does
        nothing); the records stay in memory until the store is dropped."""
        if self._lock.closed:
            return
        with self._lock:
            self._lock.closed = True
            self._lexical.clear()
            self._shared_of.clear()
            self._dense.clear()

    def get_meta(self, key: str) -> str | None:
        return self._meta.get(key)

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            self._meta[key] = value
            # a counter row loaded (a dump migrated in): swept like one a take made
            self._counter_families.loaded(self._meta, [key])

    # --- quota counters (memstrata.store.quota_counters; one process, under the lock) -------
    def take_counters(self, takes: Sequence[qc.Take]) -> qc.Refusal | None:
        with self._lock:
            return qc.take_in(self._meta, takes, self._counter_families)

    def add_counters(self, takes: Sequence[qc.Take]) -> None:
        with self._lock:
            qc.take_in(self._meta, [qc.Take(t.key, t.amount) for t in takes])

    def counter_values(self, keys: Sequence[str]) -> dict[str, int]:
        with self._lock:
            return {k: int(self._meta.get(k, "0")) for k in keys}

    def forget_counters(self, keys: Sequence[str]) -> None:
        with self._lock:
            for key in keys:
                self._meta.pop(key, None)

    def sweep_counters(self, now_us: int, limit: int = SWEEP_BATCH) -> int:
        with self._lock:
            return self._counter_families.sweep(self._meta, now_us, limit)

    def lease(self, key: str, token: str, now_ms: int, until_ms: int) -> bool:
        with self._lock:
            return qc.lease_in(self._meta, key, token, now_ms, until_ms)

    def release(self, key: str, token: str) -> None:
        with self._lock:
            qc.release_in(self._meta, key, token)

    def count_tenant_records(self, tenant: str) -> int:
        with self._lock:
            return self._tenant_records.get(tenant, 0)

    # --- helpers -----------------------------------------------------------------------------
    def _add_entry(self, entry: _Entry) -> None:
        """``entry`` stored: in the store's entries, its user's and its tenant's count."""
        r = entry.record
        self._entries[_key(r)] = entry
        self._owned.setdefault((r.tenant, r.user), {})[r.id] = entry
        self._tenant_records[r.tenant] = self._tenant_records.get(r.tenant, 0) + 1
        self._file(entry)
        self._place(entry)
        self._name_readers(entry, *entry.history)

    def _pop_entry(self, key: tuple[str, str, str]) -> _Entry | None:
        """The entry of ``key`` out of the store, its user's entries and its tenant's count."""
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        tenant, user, rid = key
        self._unfile(entry)
        self._unplace(entry)
        for reader in self._named.pop(key, ()):  # no reader's purge looks for it again
            held = self._readers[tenant, reader]
            del held[user, rid]
            if not held:
                del self._readers[tenant, reader]
        owned = self._owned[tenant, user]
        del owned[rid]
        if not owned:
            del self._owned[tenant, user]
        left = self._tenant_records[tenant] - 1
        if left:
            self._tenant_records[tenant] = left
        else:
            del self._tenant_records[tenant]
        return entry

    def _file(self, entry: _Entry) -> None:
        """``entry`` filed under its record's session (after the others: the newest)."""
        r = entry.record
        entry.filed = r.session
        if r.session is not None:
            self._sessions.setdefault((r.tenant, r.user), {}).setdefault(r.session, {})[r.id] = (
                entry
            )

    def _unfile(self, entry: _Entry) -> None:
        r = entry.record
        if entry.filed is None:
            return
        sessions = self._sessions[r.tenant, r.user]
        held = sessions[entry.filed]
        del held[r.id]
        if not held:
            del sessions[entry.filed]
        if not sessions:
            del self._sessions[r.tenant, r.user]
        entry.filed = None

    def _refile(self, entry: _Entry) -> None:
        """``entry``'s record moved to another session: filed there in the store's order."""
        self._unfile(entry)
        self._file(entry)
        r = entry.record
        if r.session is not None:
            sessions = self._sessions[r.tenant, r.user]
            sessions[r.session] = dict(sorted(sessions[r.session].items(), key=lambda i: i[1].seq))

    def _place(self, entry: _Entry) -> None:
        """``entry`` among its user's turns if it is a message (where a list puts it)."""
        r = entry.record
        if r.type is not RecordType.MESSAGE:
            return
        entry.placed = (r.observed_at, entry.seq)
        insort(self._turns.setdefault((r.tenant, r.user), []), (*entry.placed, r.id))

    def _unplace(self, entry: _Entry) -> None:
        if entry.placed is None:
            return
        r = entry.record
        turns = self._turns[r.tenant, r.user]
        i = bisect_left(turns, (*entry.placed, r.id))
        del turns[i]
        if not turns:
            del self._turns[r.tenant, r.user]
        entry.placed = None

    def _name_readers(self, entry: _Entry, *past: MemoryRecord) -> None:
        """``entry`` filed under each reader its record (and ``past`` versions) name."""
        r = entry.record
        for v in (*past, r):
            for reader in v.access.allowed_users:
                self._readers.setdefault((r.tenant, reader), {})[r.user, r.id] = None
                self._named.setdefault(_key(r), set()).add(reader)

    def _replace_turn(self, entry: _Entry) -> None:
        """``entry``'s record changed: placed again if its type or time did."""
        r = entry.record
        now = (r.observed_at, entry.seq) if r.type is RecordType.MESSAGE else None
        if now != entry.placed:
            self._unplace(entry)
            self._place(entry)

    def _session_entries(self, tenant: str, user: str, session: str) -> builtins.list[_Entry]:
        """The user's entries of ``session`` in the store's order."""
        return builtins.list(self._sessions.get((tenant, user), {}).get(session, {}).values())

    def _own(self, tenant: str, user: str) -> builtins.list[_Entry]:
        """The user's entries in the store's order (insertion, ``seq``)."""
        return builtins.list(self._owned.get((tenant, user), {}).values())

    def _changed(self, tenant: str, user: str, *ids: str) -> None:
        """The user's records ``ids`` were written (inserted, replaced, their status, terms
        or vector changed, dropped, or a write of them taken back): the user's BM25
        statistics and vector rows (mem31b) and what callers may read of them (mem31) are
        updated for those ids alone. Without ``ids`` (a write that does not say what it
        touched) they are gathered again from the user's entries at the next read."""
        key = (tenant, user)
        if not ids:
            self._lexical.pop(key, None)
            self._dense.pop(key, None)
            self._shared_of.pop(key, None)
            for e in self._own(tenant, user):
                if e.filed != e.record.session:
                    self._refile(e)
                self._replace_turn(e)
                self._name_readers(e)
            return
        lexical = self._lexical.get(key)
        dense = self._dense.get(key, {}).values()
        shared = self._shared_of.get(key)
        for rid in ids:
            entry = self._entries.get((tenant, user, rid))
            if entry is not None and entry.filed != entry.record.session:
                self._refile(entry)
            if entry is not None:
                self._replace_turn(entry)
                self._name_readers(entry)
            if lexical is not None:
                if entry is None:
                    lexical.drop(rid)
                else:
                    lexical.put_tokens(rid, entry.terms)
            for d in dense:
                d.touch(rid, entry)
            if shared is not None:
                shared.touch(rid, entry)

    def _visible(self, scope: Scope, record_id: str) -> _Entry | None:
        entry = self._entries.get((scope.tenant, scope.user, record_id))
        if entry is None or not entry.record.visible_in(scope):
            return None
        return entry

    def _scoped(self, scope: Scope) -> list[_Entry]:
        """Entries visible in ``scope``, in insertion order. A caller's are found among the
        owner's entries some caller may read (:meth:`_shared`), not among every entry."""
        if scope.caller is not None:
            return [e for e in self._shared(scope.tenant, scope.user) if e.record.visible_in(scope)]
        if scope.session is not None:
            entries = self._session_entries(scope.tenant, scope.user, scope.session)
        else:
            entries = self._own(scope.tenant, scope.user)
        return [e for e in entries if e.record.visible_in(scope)]

    def _shared(self, tenant: str, user: str) -> list[_Entry]:
        """The user's entries that are public or name readers or roles, in insertion order,
        so a caller's ``list`` (caller30), count and reads walk what is shared, not every
        record of the store: gathered at a caller's first read, then updated by each write
        for the records it touched (mem31; caller30 gathered them again after each)."""
        return self._sharing(tenant, user).ordered()

    def _sharing(self, tenant: str, user: str) -> Shared:
        key = (tenant, user)
        found = self._shared_of.get(key)
        if found is None:
            found = Shared(self._own(tenant, user))
            self._shared_of[key] = found
        return found

    @staticmethod
    def _check(write: RecordWrite) -> Vector | None:
        if write.vector is None:
            return None
        vec = _vector(write.vector)
        dims = write.record.embedding_dims
        if dims is not None and vec.size != dims:
            raise ValidationError(
                f"record {write.record.id!r} says embedding_dims={dims} but "
                f"its vector has {vec.size} dimensions"
            )
        return vec

    # --- records -------------------------------------------------------------------------------
    def transaction(self) -> AbstractContextManager[UnitOfWork]:
        return self._unit_of_work()

    @contextmanager
    def _unit_of_work(self) -> Iterator[UnitOfWork]:
        # One lock for the whole block makes it atomic against other threads; the undo log
        # takes back what was applied if the block fails.
        with self._lock:
            undo: Undo = []
            tx = _MemoryUnitOfWork(self, undo)
            try:
                yield tx
                check_finished(tx._pending)  # a history given in parts: every part came
            except BaseException:
                for step in reversed(undo):
                    step()
                raise
            # Its audit events join the log with its writes, still under the lock: a
            # block that failed (a lost race, a conflict) leaves no event of a change not
            # made, and no reader of the store sees the change without its event.
            self.audit_log.append_audit(tx.events)

    def insert(self, writes: Sequence[RecordWrite]) -> None:
        with self._lock:
            self._insert(writes, [])

    def append_turns(self, writes: Sequence[RecordWrite]) -> None:
        with self._lock:
            self._append_turns(writes, [])

    def _append_turns(self, writes: Sequence[RecordWrite], undo: Undo) -> None:
        for w in writes:
            if w.record.type is not RecordType.MESSAGE:
                raise ValidationError(
                    f"record {w.record.id!r} is a {w.record.type.value}, not a turn; "
                    "append_turns takes message records, use insert() for anything else"
                )
        self._insert(writes, undo)

    def _insert(self, writes: Sequence[RecordWrite], undo: Undo) -> None:
        keys = [_key(w.record) for w in writes]
        clash = next((k for k in keys if k in self._entries), None)
        if clash is None and len(set(keys)) != len(keys):
            clash = next(k for k in keys if keys.count(k) > 1)
        if clash is not None:
            raise ValidationError(
                f"record id {clash[2]!r} exists already (or twice in this batch); nothing "
                "was written: use replace() to update a record, new_id() for a new one"
            )
        vectors = [self._check(w) for w in writes]  # validate all before writing any
        for w, vec in zip(writes, vectors, strict=True):
            self._seq += 1
            self._add_entry(_Entry(self._seq, w.record, tuple(w.terms), vec))
            self._cite(w.record)
            self._changed(w.record.tenant, w.record.user, w.record.id)
            undo.append(lambda r=w.record: self._undo_insert(r))  # type: ignore[misc]

    def _undo_insert(self, record: MemoryRecord) -> None:
        self._pop_entry(_key(record))
        self._changed(record.tenant, record.user, record.id)

    def get(self, scope: Scope, record_id: str, *, include_deleted: bool = False) -> MemoryRecord:
        with self._lock:
            return self._get(scope, record_id, include_deleted=include_deleted)

    def _get(self, scope: Scope, record_id: str, *, include_deleted: bool = False) -> MemoryRecord:
        entry = self._visible(scope, record_id)
        if entry is None or (not include_deleted and not entry.record.is_active):
            raise NotFoundError(f"no record {record_id!r} in scope {scope}")
        return entry.record

    def get_many(self, scope: Scope, ids: Sequence[str]) -> list[MemoryRecord]:
        found = (self._visible(scope, i) for i in dict.fromkeys(ids))
        return [e.record for e in found if e is not None]

    def stored_vectors(self, scope: Scope, ids: Sequence[str]) -> dict[str, StoredVector]:
        with self._lock:
            found = (self._visible(scope, i) for i in dict.fromkeys(ids))
            return {
                e.record.id: StoredVector(e.record.embedding_model, e.vector.copy())
                for e in found
                if e is not None and e.vector is not None
            }

    def views(self, scope: Scope, ids: Sequence[str]) -> dict[str, RecordView]:
        """What a context shows of each id visible in ``scope`` (as :meth:`get_many` finds
        them); the SQL stores read it without decoding the records."""
        found = (self._visible(scope, i) for i in dict.fromkeys(ids))
        return {e.record.id: RecordView.of(e.record) for e in found if e is not None}

    def replace(self, scope: Scope, write: RecordWrite, *, expected_version: int) -> None:
        with self._lock:
            self._replace(scope, write, expected_version, [])

    def _replace(self, scope: Scope, write: RecordWrite, expected_version: int, undo: Undo) -> None:
        if scope.caller is not None:  # another caller may read, never write
            raise NotFoundError(f"no record {write.record.id!r} in scope {scope}")
        new = write.record
        entry = self._visible(scope, new.id)
        if entry is None:
            raise NotFoundError(f"no record {new.id!r} in scope {scope}")
        stored = entry.record
        check_replace(new, stored.version, (stored.tenant, stored.user), expected_version)
        vec = self._check(write)
        undo.append(self._snapshot(entry))
        entry.history.append(entry.record)
        # counters are the store's, not the writer's: keep the stored ones
        entry.record = replace(
            new,
            access_count=entry.record.access_count,
            last_accessed_at=entry.record.last_accessed_at,
        )
        entry.terms = tuple(write.terms)
        if vec is not None:
            entry.vector = vec
        self._cite(new)
        self._changed(new.tenant, new.user, new.id)

    def _snapshot(self, entry: _Entry) -> Callable[[], None]:
        record, terms, vector, history = (
            entry.record,
            entry.terms,
            entry.vector,
            list(entry.history),
        )

        def restore() -> None:
            entry.record, entry.terms, entry.vector, entry.history = record, terms, vector, history
            self._changed(record.tenant, record.user, record.id)

        return restore

    def history(self, scope: Scope, record_id: str) -> list[MemoryRecord]:
        return history_of(self.histories(scope, [record_id]), scope, record_id)

    def histories(self, scope: Scope, ids: Sequence[str]) -> dict[str, list[MemoryRecord]]:
        with self._lock:
            entries = {i: self._visible(scope, i) for i in dict.fromkeys(ids)}
            found = {i: [*e.history, e.record] for i, e in entries.items() if e is not None}
        return readable_versions(found, scope)

    def shown_versions(self, scope: Scope, versions: Mapping[str, int]) -> dict[str, int]:
        """For each ``id: version``, how many versions of the record up to that one
        ``scope`` may read; a record it cannot read is left out (the SQL stores' method,
        :mod:`memstrata.store.version_numbers`)."""
        with self._lock:
            entries = {i: self._visible(scope, i) for i in versions}
            return {
                i: sum(
                    v.version <= versions[i] and v.visible_in(scope) for v in (*e.history, e.record)
                )
                for i, e in entries.items()
                if e is not None
            }

    def history_parts(
        self, scope: Scope, record_id: str, *, below: int, size: int
    ) -> Iterator[list[MemoryRecord]]:
        size = max(1, size)
        with self._lock:
            entry = self._visible(scope, record_id)
            # the list as it is now (a snapshot, as the SQL stores' one read): an update
            # appends to it after these, a purged reader's rewrite or an undo replaces it
            past = entry.history if entry is not None else []
            held = len(past)
        for start in range(0, held, size):
            with self._lock:
                part = [v for v in past[start : min(start + size, held)] if v.version < below]
            if part := readable_part(part, scope):
                yield part

    def set_status(
        self, scope: Scope, ids: Sequence[str], status: RecordStatus, at: datetime
    ) -> list[str]:
        with self._lock:
            return self._set_status(scope, ids, status, at, [])

    def _set_status(
        self, scope: Scope, ids: Sequence[str], status: RecordStatus, at: datetime, undo: Undo
    ) -> list[str]:
        if scope.caller is not None:
            return []
        status = RecordStatus(status)
        changes: list[tuple[_Entry, MemoryRecord]] = []
        for record_id in dict.fromkeys(ids):
            entry = self._visible(scope, record_id)
            if entry is None or entry.record.status is status:
                continue
            new = replace(  # refuses a version past 2**63 - 1 before anything is changed
                entry.record,
                status=status,
                version=entry.record.version + 1,
                updated_at=at,
                deleted_at=at if status is RecordStatus.DELETED else None,
            )
            changes.append((entry, new))
        for entry, new in changes:
            undo.append(self._snapshot(entry))
            old = entry.record
            entry.history.append(old)
            entry.record = new
            self._changed(old.tenant, old.user, old.id)
        return [new.id for _, new in changes]

    def reterm(self, scope: Scope, terms: Mapping[str, Sequence[str]]) -> None:
        with self._lock:
            self._reterm(scope, terms, [])

    def _reterm(self, scope: Scope, terms: Mapping[str, Sequence[str]], undo: Undo) -> None:
        """New lexical terms for the user's records in ``terms`` (no new version)."""
        if scope.caller is not None:
            return
        uscope = Scope(scope.tenant, scope.user)
        for rid, new in terms.items():
            entry = self._visible(uscope, rid)
            if entry is not None and entry.terms != tuple(new):
                undo.append(self._snapshot(entry))
                entry.terms = tuple(new)  # the user's BM25 index is rebuilt lazily
                self._changed(scope.tenant, scope.user, rid)

    def list_after(
        self,
        scope: Scope,
        filters: Filters,
        record_id: str,
        *,
        limit: int = 20,
        newest_first: bool = False,
    ) -> builtins.list[MemoryRecord]:
        """What ``list(scope, filters)`` orders after ``record_id`` (before it, newest
        first, with ``newest_first``), up to ``limit``; empty when ``scope`` has no such
        record."""
        with self._lock:
            at = self._visible(scope, record_id)
            if at is None or limit <= 0:
                return []
            place = (at.record.observed_at, at.seq)
            if scope.caller is not None:  # walked from the cursor in the caller's order
                after = (place, None) if newest_first else (None, (place[0], place[1] + 1))
                walk = self._readable_walk(scope, filters, newest_first, *after)
                return [e.record for _, e in zip(range(limit), walk, strict=False)]
            sign = -1 if newest_first else 1
            rows = [
                e
                for e in self._scoped(scope)
                if sign * _cmp((e.record.observed_at, e.seq), place) > 0
                and filters.matches(e.record)
            ]
        rows.sort(key=lambda e: (e.record.observed_at, e.seq), reverse=newest_first)
        return [e.record for e in rows[:limit]]

    def _cite(self, record: MemoryRecord) -> None:
        """``record`` (a new current version) in the index of citations (and of links)."""
        if ids := cited(record):
            mine = self._cites.setdefault((record.tenant, record.user), {})
            for i in ids:
                mine.setdefault(i, set()).add(record.id)
        self._link([record])

    def _link(self, versions: Iterable[MemoryRecord]) -> None:
        """These versions in the index of links (``_links``)."""
        for v in versions:
            if ids := linked(v):
                mine = self._links.setdefault((v.tenant, v.user), {})
                for i in ids:
                    mine.setdefault(i, set()).add(v.id)

    def citing(self, scope: Scope, ids: Sequence[str]) -> list[str]:
        """The user's records whose current version cites one of ``ids``, found by the
        index of citations, each checked (a pair no longer true leaves the index)."""
        if scope.caller is not None:
            return []
        with self._lock:
            found: list[_Entry] = []
            mine = self._cites.get((scope.tenant, scope.user), {})
            for i in dict.fromkeys(ids):
                held = mine.get(i)
                for rid in sorted(held or ()):
                    entry = self._entries.get((scope.tenant, scope.user, rid))
                    if entry is None or i not in cited(entry.record):
                        mine[i].discard(rid)
                    elif entry.record.visible_in(scope):
                        found.append(entry)
                if held is not None and not held:
                    del mine[i]
            _drop_empty(self._cites, (scope.tenant, scope.user))
            unique = {id(e): e for e in found}.values()
            return [
                e.record.id for e in sorted(unique, key=lambda e: (e.record.observed_at, e.seq))
            ]

    def _drop(self, entry: _Entry) -> tuple[int, int, int]:
        self._pop_entry(_key(entry.record))
        owner = (entry.record.tenant, entry.record.user)
        rid, versions = entry.record.id, (*entry.history, entry.record)
        # what any version of it cited or named (an undo's leftover goes on reading): its
        # archived versions' ids too (mem34: they kept naming the purged record)
        for index, named in ((self._cites, cited), (self._links, linked)):
            mine = index.get(owner, {})
            for i in {i for v in versions for i in named(v)}:
                held = mine.get(i)
                if held is not None:
                    held.discard(rid)
                    if not held:
                        del mine[i]
            _drop_empty(index, owner)
        self._changed(entry.record.tenant, entry.record.user, entry.record.id)
        return 1, len(entry.history), int(entry.vector is not None)

    def purge(
        self,
        scope: Scope,
        ids: Sequence[str],
        *,
        reterm: Mapping[str, Sequence[str]] | None = None,
    ) -> PurgeReport:
        if scope.caller is not None:
            return PurgeReport()
        totals = [0, 0, 0]
        with self._lock:
            found = [e for e in (self._visible(scope, i) for i in dict.fromkeys(ids)) if e]
            hashes = {v.content_hash for e in found for v in (*e.history, e.record)}
            for entry in found:
                for n, count in enumerate(self._drop(entry)):
                    totals[n] += count
            self._unlink_superseded(scope, found)
            uscope = Scope(scope.tenant, scope.user)
            for rid, terms in (reterm or {}).items() if found else ():
                kept = self._visible(uscope, rid)
                if kept is not None and kept.terms != tuple(terms):
                    kept.terms = tuple(terms)  # the user's BM25 index is rebuilt lazily
                    self._changed(scope.tenant, scope.user, rid)
            hashes -= {e.record.content_hash for e in self._own(scope.tenant, scope.user)}
            stale = self._uncache(scope.tenant, scope.user, hashes)  # their texts' entries
            remaining = sum(_key(e.record) in self._entries for e in found)
        return PurgeReport(
            records=totals[0],
            versions=totals[1],
            vectors=totals[2],
            cache_entries=stale,
            remaining=remaining,
        )

    def _uncache(self, tenant: str, user: str, keys: set[str]) -> int:
        """The user's cache entries of ``keys`` (of every model) dropped; how many (the
        user's entries are looked up by key, not walked: mem32)."""
        mine = self._cache.get((tenant, user))
        if mine is None:
            return 0
        n = 0
        for model in builtins.list(mine):
            held = mine[model]
            for k in keys & held.keys() if len(keys) < len(held) else held.keys() & keys:
                del held[k]
                n += 1
            if not held:
                del mine[model]
        if not mine:
            del self._cache[tenant, user]
        return n

    def _unlink_superseded(self, scope: Scope, found: list[_Entry]) -> None:
        """The user's records naming a purged one, in any version, say ``[purged]``
        instead (``superseded_by``, a fact's links, a layer's id field, a relation's
        target, a refreshed note's dropped sources; their archived versions cite none of
        them), with a new version
        (store/purged_reader.py: ``without_links``). Every version of the records the
        index of links names for the purged ids is looked at (every record of the user
        before purge31b), in the store's order."""
        gone = {e.record.id for e in found}
        if not gone:
            return
        named: dict[str, _Entry] = {}
        mine = self._links.get((scope.tenant, scope.user), {})
        for g in sorted(gone):
            held = mine.get(g)
            for rid in sorted(held or ()):
                entry = self._entries.get((scope.tenant, scope.user, rid))
                if entry is None:  # purged since
                    mine[g].discard(rid)
                else:
                    named[rid] = entry
            if held is not None and not held:
                del mine[g]
        _drop_empty(self._links, (scope.tenant, scope.user))
        for entry in sorted(named.values(), key=lambda e: e.seq):
            r = entry.record
            versions = [*entry.history, r]
            kept = [without_links(v, gone, past=True) for v in entry.history]
            kept.append(without_links(r, gone))
            if all(k is v for k, v in zip(kept, versions, strict=True)):
                continue
            entry.history = kept
            entry.record = replace(kept[-1], version=kept[-1].version + 1)
            self._cite(entry.record)  # a fact ended by a purged one: by [purged] now
            self._changed(r.tenant, r.user, r.id)

    def _drop_reader(self, entry: _Entry, user: str) -> None:
        """``user`` out of the readers of every version of ``entry``, which gets a new
        version if one named them (its ``updated_at`` kept)."""
        versions = [*entry.history, entry.record]
        kept = [without_reader(v, user) for v in versions]
        if all(k is v for k, v in zip(kept, versions, strict=True)):
            return
        entry.history = kept
        entry.record = replace(kept[-1], version=kept[-1].version + 1)
        self._changed(entry.record.tenant, entry.record.user, entry.record.id)

    def purge_user(self, tenant: str, user: str) -> PurgeReport:
        with self._lock:
            # each of the user's parts is found by the user, not by a walk of every user's
            # (the entries: memjobs31; the cache, citations, links, quota rows and key
            # rows: mem32)
            mine = self._own(tenant, user)
            stale = sum(len(held) for held in self._cache.pop((tenant, user), {}).values())
            totals = [0, 0, 0]
            for entry in mine:
                for n, count in enumerate(self._drop(entry)):
                    totals[n] += count
            jobs = self._jobs.of(tenant, user)
            for job in jobs:
                self._jobs.drop(job.id)
            self._lexical.pop((tenant, user), None)
            self._cites.pop((tenant, user), None)
            self._links.pop((tenant, user), None)
            self._shared_of.pop((tenant, user), None)
            from ..quotas import subject_hash

            for meta_key in self._meta.filed(subject_hash(tenant, user)):  # quota:%:<hash>:%
                del self._meta[meta_key]
            self._dense.pop((tenant, user), None)
            for key_id in self._key_rows.filed((tenant, user)):
                del self._key_rows[key_id]
            # What other users shared with them names them: out of every version, and out
            # of the events that shared it (store/purged_reader.py), under the same lock.
            # Those records are found in the index of readers named (not every entry);
            # it holds no purged record (a record's drop takes it out: mem32).
            for owner, rid in self._readers.pop((tenant, user), {}):
                filed = self._named.get((tenant, owner, rid), set())
                filed.discard(user)
                if not filed:
                    self._named.pop((tenant, owner, rid), None)
                named = self._entries.get((tenant, owner, rid))
                if named is not None:
                    self._drop_reader(named, user)
            self.audit_log.redact_subject(tenant, user)
            remaining = (
                len(self._own(tenant, user))
                + len(self._jobs.of(tenant, user))
                + sum(len(held) for held in self._cache.get((tenant, user), {}).values())
            )
        return PurgeReport(
            records=totals[0],
            versions=totals[1],
            vectors=totals[2],
            jobs=len(jobs),
            cache_entries=stale,
            remaining=remaining,
        )

    def count(self, scope: Scope, filters: Filters) -> int:
        with self._lock:
            if scope.caller is not None:
                return self._caller_count(scope, filters)
            return sum(filters.matches(e.record) for e in self._scoped(scope))

    def _caller_count(self, scope: Scope, filters: Filters) -> int:
        """A caller's count from its kept order (``_readable_walk``, mem32b): the records
        the caller may read between the filters' time bounds, of the narrowest of its
        lanes (its session's, the filter's types' or tags', mem33; the current records',
        importance's or a metadata condition's, mem34), or those of ``filters.ids`` by id;
        not every shared record of the owner. The rest of the filters are checked record by
        record over that walk (``sources``: no lane)."""
        if filters.ids is not None:
            shared = self._sharing(scope.tenant, scope.user)
            placed = shared.order(scope).placed
            found = [shared.entries[rid] for rid in filters.ids if rid in placed]
            self.walked += len(found)
            return sum(e.record.visible_in(scope) and filters.matches(e.record) for e in found)
        return sum(1 for _ in self._readable_walk(scope, filters, newest_first=False))

    def key_versions(self, scope: Scope, type: str, field: str, value: str) -> KeyVersions:
        """Read under the lock, at one moment (nothing to decode in process memory)."""
        with self._lock:
            return self._key_versions(scope, type, field, value)

    def _key_versions(self, scope: Scope, type: str, field: str, value: str) -> KeyVersions:
        kind = RecordType(name_type(type))
        name_field(field)
        mine = [
            e
            for e in self._scoped(scope)
            if e.record.type is kind and _is(e.record.metadata.get(field), value)
        ]
        newest = max(mine, key=lambda e: e.seq, default=None)
        return KeyVersions(
            live=any(e.record.is_active and e.record.superseded_by is None for e in mine),
            newest=newest.record.id if newest else None,
        )

    def find_by_hash(
        self, scope: Scope, content_hash: str, types: Sequence[str]
    ) -> MemoryRecord | None:
        with self._lock:
            return self._find_by_hash(scope, content_hash, types)

    def _find_by_hash(
        self, scope: Scope, content_hash: str, types: Sequence[str]
    ) -> MemoryRecord | None:
        wanted = {str(t) for t in types}
        for e in self._scoped(scope):
            r = e.record
            if (
                r.content_hash == content_hash
                and r.is_active
                and r.superseded_by is None
                and (not wanted or r.type.value in wanted)
            ):
                return r
        return None

    # --- counters (never versions) ---------------------------------------------------------------
    def touch(self, scope: Scope, ids: Sequence[str], at: datetime) -> None:
        if scope.caller is not None:  # a caller's reads count nothing
            return
        with self._lock:
            for record_id in dict.fromkeys(ids):
                entry = self._visible(scope, record_id)
                if entry is not None:
                    last = entry.record.last_accessed_at
                    entry.record = replace(
                        entry.record,
                        access_count=counted(entry.record.access_count),
                        last_accessed_at=at if last is None else max(last, at),
                    )

    def add_counts(self, scope: Scope, name: str, deltas: Mapping[str, int]) -> None:
        with self._lock:
            for record_id, delta in deltas.items():
                entry = self._visible(scope, record_id)
                if entry is not None:
                    entry.counters[name] = entry.counters.get(name, 0) + int(delta)

    def counts(self, scope: Scope, name: str, ids: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        with self._lock:
            for record_id in dict.fromkeys(ids):
                entry = self._visible(scope, record_id)
                if entry is not None:
                    out[record_id] = entry.counters.get(name, 0)
        return out

    def flush_counters(self) -> None:
        """Counters are applied at once here."""

    # --- session buffer --------------------------------------------------------------------------
    def recent_turns(self, scope: Scope, n: int) -> list[MemoryRecord]:
        if scope.session is None or n < 1:
            return []
        with self._lock:
            turns = [
                e
                for e in self._scoped(scope)
                if e.record.type is RecordType.MESSAGE and e.record.is_active
            ]
        turns.sort(key=lambda e: (e.record.observed_at, e.seq))
        return [e.record for e in turns[-n:]]

    # --- retrieval -------------------------------------------------------------------------------
    def _matrix(self, tenant: str, user: str, dims: int) -> _Dense:
        """The user's vectors of ``dims``: built from the user's entries at the first search
        (or once the store's model changed, or the matrix is worn), then updated by each
        write for the records it touched (``_changed``)."""
        model = self._meta.get(MODEL_KEY)
        held = self._dense.setdefault((tenant, user), {})
        cached = held.get(dims)
        if cached is None or cached.model != model or cached.worn():
            cached = _Dense(dims, model, self._own(tenant, user))
            held[dims] = cached
        return cached

    def vector_search(
        self, scope: Scope, vector: Vector, k: int, filters: Filters
    ) -> list[Candidate]:
        return self._vector_search(scope, vector, k, filters)

    def _vector_search(
        self, scope: Scope, vector: Vector, k: int, filters: Filters
    ) -> list[Candidate]:
        query = np.asarray(vector, dtype=np.float32).ravel()
        if k <= 0 or query.size == 0:
            return []
        out: list[Candidate] = []
        with self._lock:
            dense = self._matrix(scope.tenant, scope.user, query.size)
            scores = np.einsum("ij,j->i", dense.matrix, query)
            # Walk best-first and filter as we go: usually only the first few rows are read.
            for i in np.argsort(-scores, kind="stable"):
                rid = dense.ids[i]
                if rid is None:  # an emptied row
                    continue
                record = self._entries[(scope.tenant, scope.user, rid)].record
                if record.visible_in(scope) and filters.matches(record):
                    out.append(Candidate(record.id, float(scores[i])))
                    if len(out) == k:
                        break
        return out

    def vector_records(
        self,
        scope: Scope,
        vector: Vector,
        k: int,
        filters: Filters,
        *,
        keep: Callable[[MemoryRecord], bool] | None = None,
        want: int | None = None,
    ) -> list[tuple[MemoryRecord, float]]:
        with self._lock:
            found = self._vector_search(scope, vector, k, filters)
            rows = {
                e.record.id: e.record
                for e in (self._visible(scope, c.id) for c in found)
                if e is not None
            }
        return kept_records(found, rows, lambda r: r, keep, want)

    def _bm25(self, tenant: str, user: str) -> Postings:
        """The user's BM25 statistics of every record's terms: built from the user's
        entries at the first search, then updated by each write for the records it touched
        (``_changed``; until session 31 a ``bm25s`` index was built again of the user's
        entries, found by a walk of the whole store, at the first search after each
        write)."""
        key = (tenant, user)
        found = self._lexical.get(key)
        if found is None:
            found = Postings()
            for e in self._own(tenant, user):
                found.put_tokens(e.record.id, e.terms)
            self._lexical[key] = found
        return found

    def _caller_scores(self, scope: Scope, query: Sequence[str]) -> dict[str, float]:
        """BM25 over what ``scope``'s caller may read of the owner's records (the whole
        readable part: ``user_scope``): a caller's scores weigh a term by what the caller
        reads, never by the owner's unshared records (session 28); the statistics are kept
        up to date by each write (store/memory_shared.py, mem31)."""
        return self._sharing(scope.tenant, scope.user).caller(scope).scores(query)

    def lexical_search(
        self, scope: Scope, terms: Sequence[str], k: int, filters: Filters
    ) -> list[Candidate]:
        query = [t for t in dict.fromkeys(terms) if t and not t.isspace()]
        if not query or k <= 0:
            return []
        with self._lock:
            if scope.caller is not None:
                found = self._caller_scores(scope, query)
            else:
                found = self._bm25(scope.tenant, scope.user).scores(query)
            hits: list[tuple[float, int, str]] = []
            for rid, score in found.items():
                entry = self._entries[(scope.tenant, scope.user, rid)]
                if entry.record.visible_in(scope) and filters.matches(entry.record):
                    hits.append((-score, entry.seq, rid))
        hits.sort()
        return [Candidate(rid, -neg) for neg, _, rid in hits[:k]]

    # --- embeddings -------------------------------------------------------------------------------
    def cached_vectors(self, scope: Scope, model_id: str, keys: Sequence[str]) -> dict[str, Vector]:
        with self._lock:
            held = self._cache.get((scope.tenant, scope.user), {}).get(model_id, {})
            return {k: held[k].copy() for k in keys if k in held}

    def cache_vectors(self, scope: Scope, model_id: str, vectors: Mapping[str, Vector]) -> None:
        checked = {k: _vector(v) for k, v in vectors.items()}
        with self._lock:
            if checked:  # no empty part: a user's part means the user has entries
                mine = self._cache.setdefault((scope.tenant, scope.user), {})
                mine.setdefault(model_id, {}).update(checked)

    def scan(self, batch_size: int = 500) -> Iterator[list[MemoryRecord]]:
        with self._lock:
            records = [e.record for e in sorted(self._entries.values(), key=lambda e: e.seq)]
        size = max(1, batch_size)
        for start in range(0, len(records), size):
            yield records[start : start + size]

    def set_vectors(
        self, items: Sequence[tuple[MemoryRecord, Vector]], model_id: str, dims: int
    ) -> None:
        with self._lock:
            checked: list[tuple[_Entry, Vector]] = []
            for record, vector in items:
                vec = _vector(vector)
                if vec.size != dims:
                    raise ValidationError(
                        f"vector for {record.id!r} has {vec.size} "
                        f"dimensions, but set_vectors was told {dims}"
                    )
                entry = self._entries.get(_key(record))
                if entry is None:
                    raise NotFoundError(f"no record {record.id!r}; nothing was re-embedded")
                checked.append((entry, vec))
            for entry, vec in checked:
                entry.vector = vec
                entry.record = replace(entry.record, embedding_model=model_id, embedding_dims=dims)
                self._changed(entry.record.tenant, entry.record.user, entry.record.id)

    # --- jobs ----------------------------------------------------------------------------------
    def enqueue(self, jobs: Sequence[Job]) -> None:
        with self._lock:
            self._enqueue(jobs, [])

    def _enqueue(self, jobs: Sequence[Job], undo: Undo) -> None:
        fresh: dict[str, Job] = {}
        for job in jobs:
            if job.id in self._jobs or job.id in fresh:
                raise ValidationError(f"job id {job.id!r} exists already; give each job a new id")
            if job.dedup_key is not None and (
                self._jobs.has_open(job.tenant, job.user, job.dedup_key)
                or any(
                    (j.tenant, j.user, j.dedup_key) == (job.tenant, job.user, job.dedup_key)
                    and j.status in _OPEN
                    for j in fresh.values()
                )
            ):
                continue
            fresh[job.id] = job
        for job in fresh.values():
            self._jobs.put(job)

        def take_back() -> None:
            for job_id in fresh:
                self._jobs.drop(job_id)

        undo.append(take_back)

    def claim_jobs(
        self,
        now: datetime,
        *,
        limit: int,
        lease_seconds: float,
        tenant: str | None = None,
        user: str | None = None,
        session: str | None = None,
        due_before: datetime | None = None,
    ) -> list[Job]:
        # The same rule as the SQLite outbox: due jobs of one user, none of a user who has
        # a job held under a live lease (one user's jobs never run at once).
        if limit <= 0:
            return []
        with self._lock:
            mine = self._jobs.claimable(now, due_before or now, limit, tenant, user, session)
            if not mine:
                return []
            lease = later(now, timedelta(seconds=lease_seconds))
            token = new_lease_token()
            claimed = [
                replace(
                    j,
                    status=JobStatus.RUNNING,
                    lease_until=lease,
                    attempts=j.attempts + 1,
                    lease_token=token,
                )
                for j in mine
            ]
            for j in claimed:
                self._jobs.put(j)
        return claimed

    def renew_leases(self, token: str, until: datetime) -> list[str]:
        with self._lock:
            held = [j for j in self._jobs.running.values() if j.lease_token == token]
            for j in held:
                self._jobs.put(replace(j, lease_until=until))
        return sorted(j.id for j in held)

    def _job(self, job_id: str, token: str | None = None) -> Job:
        job = self._jobs.get(job_id)
        if job is None:
            raise NotFoundError(f"no job {job_id!r}; it may have been purged with its user")
        if token is not None and (job.lease_token != token or job.status is not JobStatus.RUNNING):
            raise LeaseLostError(
                f"job {job_id!r} is no longer held under this lease (it "
                "expired and another worker claimed the job); this result "
                "is not recorded"
            )
        return job

    def finish_job(self, job_id: str, lease_token: str | None = None) -> None:
        with self._lock:
            job = self._job(job_id, lease_token)
            self._jobs.put(replace(job, status=JobStatus.DONE, lease_until=None, lease_token=None))

    def fail_job(
        self, job_id: str, error: str, retry_at: datetime | None, lease_token: str | None = None
    ) -> None:
        with self._lock:
            job = self._job(job_id, lease_token)
            if retry_at is None:
                job = replace(
                    job,
                    status=JobStatus.FAILED,
                    last_error=error,
                    lease_until=None,
                    lease_token=None,
                )
            else:
                job = replace(
                    job,
                    status=JobStatus.PENDING,
                    last_error=error,
                    lease_until=None,
                    lease_token=None,
                    run_after=retry_at,
                )
            self._jobs.put(job)

    def give_back_job(
        self, job_id: str, reason: str, run_at: datetime, lease_token: str | None = None
    ) -> None:
        with self._lock:
            job = self._job(job_id, lease_token)
            self._jobs.put(
                replace(
                    job,
                    status=JobStatus.PENDING,
                    last_error=reason,
                    lease_until=None,
                    lease_token=None,
                    run_after=run_at,
                    attempts=max(job.attempts - 1, 0),
                )
            )

    def count_open_jobs(
        self, *, tenant: str | None = None, user: str | None = None, session: str | None = None
    ) -> int:
        with self._lock:
            return self._jobs.count_open(tenant, user, session)

    def sweep_done_jobs(self, before: datetime, limit: int = DONE_SWEEP_BATCH) -> int:
        """Delete up to ``limit`` done jobs of any user due before ``before`` (the
        retention ``maintain`` sweeps; the walk is the jobs deleted); returns how many."""
        with self._lock:
            gone = self._jobs.done_before(before, max(limit, 0))
            for job_id in gone:
                self._jobs.drop(job_id)
        return len(gone)

    def list_jobs(self, tenant: str, user: str, *, status: str | None = None) -> list[Job]:
        want = job_status(status) if status is not None else None
        with self._lock:
            jobs = self._jobs.of(tenant, user, *(() if want is None else (want,)))
        return sorted(jobs, key=lambda j: (j.created_at, j.id))

    def stats(self, scope: Scope) -> StoreStats:
        with self._lock:
            records = [e.record for e in self._scoped(scope)]
            pending = sum(
                self._jobs.count(scope.tenant, scope.user, s)
                for s in (JobStatus.PENDING, JobStatus.RUNNING)
            )
            failed = self._jobs.count(scope.tenant, scope.user, JobStatus.FAILED)
            users = {u for t, u in self._owned if t == scope.tenant}
        by_type: dict[str, int] = {}
        for r in records:
            by_type[r.type.value] = by_type.get(r.type.value, 0) + 1
        active = sum(r.is_active for r in records)
        return StoreStats(
            records=len(records),
            active=active,
            deleted=len(records) - active,
            by_type=by_type,
            pending_jobs=pending,
            failed_jobs=failed,
            users=len(users),
        )

    def _insert_history(
        self,
        histories: Sequence[Sequence[MemoryRecord]],
        undo: Undo,
        newer: Sequence[MemoryRecord | None] | None = None,
        pending: dict[tuple[str, str, str], int] | None = None,
    ) -> None:
        """``UnitOfWork.insert_history``: every sequence checked before any is kept (the
        ``newer`` version of a part of a history is only checked: whole records need no
        neighbour; ``pending``: the unit of work's ``newer`` of each record given in
        parts)."""
        after = newer_of(histories, newer)
        waiting = dict(pending or {})  # kept if every sequence is
        found: list[tuple[_Entry, list[MemoryRecord]]] = []
        given: set[tuple[str, str, str]] = set()
        for i, past in enumerate(list(h) for h in histories if h):
            key = history_key(past)
            entry = self._entries.get(key)
            if entry is None:
                raise ValidationError(
                    f"record {key[2]!r} of {key[0]}/{key[1]} is not stored: insert it "
                    "before its earlier versions; nothing was written"
                )
            part_after = after[i] if after else None
            has = bool(entry.history) or key in given
            check_past(past, entry.record.version, has, part_after, waiting.get(key))
            given.add(key)
            if part_after is None:
                waiting.pop(key, None)
            else:
                waiting[key] = part_after.version
            found.append((entry, past))
        if pending is not None:
            pending.clear()
            pending.update(waiting)
        for entry, past in found:
            undo.append(self._snapshot(entry))
            entry.history = [*entry.history, *past]
            self._link(past)  # what the archived versions name (purge31b)
            self._name_readers(entry, *past)  # the readers its past versions name

    # --- bulk copy (StoreCopy, memstrata migrate; in memory_dump.py) ----------------------
    def dump_records(self, batch_size: int = 500) -> Iterator[list[RecordDump]]:
        return dump.dump_records(self, batch_size)

    def load_records(self, dumps: Sequence[RecordDump]) -> int:
        return dump.load_records(self, dumps)

    def dump_cache(self, batch_size: int = 500) -> Iterator[list[CacheEntry]]:
        return dump.dump_cache(self, batch_size)

    def load_cache(self, entries: Sequence[CacheEntry]) -> int:
        return dump.load_cache(self, entries)

    def dump_jobs(self, batch_size: int = 500) -> Iterator[list[Job]]:
        return dump.dump_jobs(self, batch_size)

    def load_jobs(self, jobs: Sequence[Job]) -> int:
        return dump.load_jobs(self, jobs)

    def dump_audit(self, batch_size: int = 500) -> Iterator[list[AuditEvent]]:
        return dump.dump_audit(self, batch_size)

    def load_audit(self, events: Sequence[AuditEvent]) -> int:
        return dump.load_audit(self, events)

    def dump_keys(self, batch_size: int = 500) -> Iterator[list[KeyRow]]:
        return dump.dump_keys(self, batch_size)

    def load_keys(self, keys: Sequence[KeyRow]) -> int:
        return dump.load_keys(self, keys)

    def meta_items(self) -> dict[str, str]:
        return dict(sorted(self._meta.items()))

    def finish_load(self) -> None:
        """Nothing is deferred by an in-memory load."""

    def list_pages(
        self, scope: Scope, filters: Filters, *, batch_size: int = 1000
    ) -> Iterator[list[MemoryRecord]]:
        """One snapshot (the records are read under the lock at once), yielded in pages."""
        with self._lock:
            if scope.caller is not None:  # the caller's order, no sort (mem32)
                rows = builtins.list(self._readable_walk(scope, filters, False))
            else:
                rows = [e for e in self._scoped(scope) if filters.matches(e.record)]
                rows.sort(key=lambda e: (e.record.observed_at, e.seq))
        size = max(1, batch_size)
        for start in range(0, len(rows), size):
            yield [e.record for e in rows[start : start + size]]

    # Last in the class: below it, ``list`` in annotations would name this method.
    def list(
        self,
        scope: Scope,
        filters: Filters,
        *,
        limit: int = 100,
        offset: int = 0,
        newest_first: bool = True,
    ) -> list[MemoryRecord]:
        if limit <= 0:
            return []
        with self._lock:
            return self._list(ListQuery(scope, filters, limit, offset, newest_first))

    def list_many(self, queries: Sequence[ListQuery]) -> builtins.list[builtins.list[MemoryRecord]]:
        """What ``list`` returns for each query, read at one moment (under the lock)."""
        with self._lock:
            return [self._list(q) if q.limit > 0 else [] for q in queries]

    def _list(self, q: ListQuery) -> builtins.list[MemoryRecord]:
        s = q.scope
        types = q.filters.types
        if s.caller is None and s.session is None and types == _TURNS:
            return self._list_turns(q)
        if s.caller is not None:  # walked in the caller's order until the page is full
            walk = self._readable_walk(s, q.filters, q.newest_first)
            offset = max(0, q.offset)
            page = itertools.islice(walk, offset, offset + q.limit)
            return [e.record for e in page]
        scoped = self._scoped(q.scope)
        self.walked += len(scoped)
        rows = [e for e in scoped if q.filters.matches(e.record)]
        rows.sort(key=lambda e: (e.record.observed_at, e.seq), reverse=q.newest_first)
        offset = max(0, q.offset)
        return [e.record for e in rows[offset : offset + q.limit]]

    def _list_turns(self, q: ListQuery) -> builtins.list[MemoryRecord]:
        """A list of the user's messages alone (no session, no caller): walked from the
        user's turns in order, newest first if asked, until ``offset + limit`` match."""
        turns = self._turns.get((q.scope.tenant, q.scope.user), [])
        order = reversed(turns) if q.newest_first else iter(turns)
        skip, out = max(0, q.offset), builtins.list[MemoryRecord]()
        for _, _, rid in order:
            if len(out) == q.limit:
                break
            self.walked += 1
            r = self._entries[q.scope.tenant, q.scope.user, rid].record
            if not (r.visible_in(q.scope) and q.filters.matches(r)):
                continue
            if skip:
                skip -= 1
            else:
                out.append(r)
        return out

    def _readable_walk(
        self,
        scope: Scope,
        filters: Filters,
        newest_first: bool,
        below: tuple[datetime, int] | None = None,
        from_: tuple[datetime, int] | None = None,
    ) -> Iterator[_Entry]:
        """What ``scope``'s caller may read and ``filters`` match, in list order (newest
        first if asked), from the caller's kept order (store/memory_shared.py,
        ``CallerOrder``): a page costs the entries walked to fill it, not a sort of every
        record the caller may read (mem32). ``below`` / ``from_``: only places before /
        from this ``(observed_at, seq)`` (a cursor); the filters' time bounds are bisected
        to as well. Under the lock, consumed before it is let go."""
        shared = self._sharing(scope.tenant, scope.user)
        # the narrowest of the caller's lanes (its session's, the filter's types' or
        # tags'), mem33: one, or several merged in list order
        lanes = shared.order(scope).narrowest(scope.session, filters)
        walks: builtins.list[Iterator[Place]] = []
        for places in lanes:
            lo, hi = 0, len(places)
            if filters.observed_after is not None:
                lo = bisect_left(places, (filters.observed_after,))
            if from_ is not None:
                lo = max(lo, bisect_left(places, from_))
            if filters.observed_before is not None:
                hi = bisect_left(places, (filters.observed_before,))
            if below is not None:
                hi = min(hi, bisect_left(places, below))
            span = range(hi - 1, lo - 1, -1) if newest_first else range(lo, hi)
            walks.append(map(places.__getitem__, span))
        walk = walks[0] if len(walks) == 1 else _merged(walks, newest_first)
        for place in walk:
            self.walked += 1
            entry = shared.entries[place[2]]
            if entry.record.visible_in(scope) and filters.matches(entry.record):
                yield entry


def _merged(walks: builtins.list[Iterator[Place]], newest_first: bool) -> Iterator[Place]:
    """The places of ``walks`` (each in list order) in list order, each once (a record
    in two of ``tags_any``'s lanes)."""
    last: Place | None = None
    for place in heapq.merge(*walks, reverse=newest_first):
        if place != last:
            last = place
            yield place


def _drop_empty(index: dict[tuple[str, str], dict[str, set[str]]], owner: tuple[str, str]) -> None:
    """``owner``'s part of a per-user index out once it holds nothing."""
    if not index.get(owner, True):
        del index[owner]


def _cmp(a: tuple[datetime, int], b: tuple[datetime, int]) -> int:
    return (a > b) - (a < b)


class _MemoryUnitOfWork:
    """The calls of one in-memory transaction (see ``UnitOfWork``): applied at once under
    the store's lock, taken back from the undo log if the block fails."""

    def __init__(self, store: InMemoryStore, undo: Undo) -> None:
        self._s = store
        self._undo = undo
        self.events: list[AuditEvent] = []
        # insert_history's parts: the version the next part of each record begins with
        self._pending: dict[tuple[str, str, str], int] = {}

    def append_audit(self, events: Sequence[AuditEvent]) -> None:
        """Audit events of this transaction: appended when its block ends without an
        error, together with its writes (as SQLite and PostgreSQL commit them)."""
        self.events.extend(events)

    def get(self, scope: Scope, record_id: str, *, include_deleted: bool = False) -> MemoryRecord:
        return self._s._get(scope, record_id, include_deleted=include_deleted)

    def find_by_hash(
        self, scope: Scope, content_hash: str, types: Sequence[str]
    ) -> MemoryRecord | None:
        return self._s._find_by_hash(scope, content_hash, types)

    def key_versions(self, scope: Scope, type: str, field: str, value: str) -> KeyVersions:
        """The transaction holds the store's lock: no other writer runs until it ends."""
        return self._s._key_versions(scope, type, field, value)

    def insert(self, writes: Sequence[RecordWrite]) -> None:
        self._s._insert(writes, self._undo)

    def append_turns(self, writes: Sequence[RecordWrite]) -> None:
        self._s._append_turns(writes, self._undo)

    def replace(self, scope: Scope, write: RecordWrite, *, expected_version: int) -> None:
        self._s._replace(scope, write, expected_version, self._undo)

    def set_status(
        self, scope: Scope, ids: Sequence[str], status: RecordStatus, at: datetime
    ) -> list[str]:
        return self._s._set_status(scope, ids, status, at, self._undo)

    def enqueue(self, jobs: Sequence[Job]) -> None:
        self._s._enqueue(jobs, self._undo)

    def reterm(self, scope: Scope, terms: Mapping[str, Sequence[str]]) -> None:
        self._s._reterm(scope, terms, self._undo)

    def insert_history(
        self,
        histories: Sequence[Sequence[MemoryRecord]],
        newer: Sequence[MemoryRecord | None] | None = None,
    ) -> None:
        self._s._insert_history(histories, self._undo, newer, self._pending)
