"""The storage seam: small interfaces a backend implements (SQLite, in-memory, PostgreSQL).

A backend implements every interface below and :class:`Store` combines them. Code that
needs only one concern asks for that interface (``RecordStore``, ``CandidateSearch``,
``EmbeddingCacheStore``, ``JobQueue``, ``SessionBuffer``, ``Counters``); code that writes
several things that must land together opens a :meth:`Store.transaction` and gets a
:class:`UnitOfWork`.

Rules every interface shares (held by ``tests/store/test_contract.py`` and
``tests/store/test_isolation_properties.py`` for every backend):

- **Scope inside every query.** Every method that takes a :class:`Scope` enforces its
  tenant and user (and agent/session visibility, :meth:`MemoryRecord.visible_in`) inside
  its own query, by-id calls included. A record of another tenant or user behaves exactly
  like a missing one: ``NotFoundError`` for by-id reads and replaces, absent from lists,
  counts and searches, a no-op for status changes, purges and counters, and **a fresh id
  for inserts** (ids are unique per ``(tenant, user)``, never globally, so an insert can
  neither fail because of another user's record nor reveal that it exists).
- **Atomic writes.** Every write call applies whole or not at all; a
  :class:`UnitOfWork` applies all of its calls or none.
- **Optimistic versions.** ``replace`` names the version it read; a mismatch is a
  ``ConflictError``. Only content changes make versions: counters never do.
- **Candidates, not results.** Searches return ``(id, raw score)`` best first, already
  restricted to the scope and the filters; fusion and re-scoring happen in the pure search
  core.

Nothing here assumes SQL: a backend may answer ``lexical_search`` with FTS5, an inverted
term table or an in-process BM25, and ``vector_search`` with numpy, pgvector or an ANN index,
as long as the ranking contract (BM25 over the given terms; cosine of unit vectors) holds.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from memstrata.filters import Filters
from memstrata.jobs import DONE_SWEEP_BATCH, Job
from memstrata.records import MemoryRecord, RecordStatus
from memstrata.scope import Scope
from memstrata.store.types import (
    CacheEntry,
    Candidate,
    KeyVersions,
    ListQuery,
    PurgeReport,
    RecordDump,
    RecordWrite,
    StoredVector,
    StoreStats,
    Vector,
)

if TYPE_CHECKING:
    from memstrata.audit import AuditEvent
    from memstrata.store.key_rows import KeyRow

__all__ = [
    "AsyncCandidateSearch",
    "AsyncCounters",
    "AsyncEmbeddingCacheStore",
    "AsyncJobQueue",
    "AsyncRecordStore",
    "AsyncSessionBuffer",
    "AsyncStore",
    "AsyncStoreCopy",
    "AsyncStoreMeta",
    "AsyncUnitOfWork",
    "CacheEntry",
    "Candidate",
    "KeyVersions",
    "PurgeReport",
    "RecordDump",
    "RecordWrite",
    "StoreStats",
    "StoredVector",
    "Vector",
]


# --- store-level metadata and lifecycle ---
@runtime_checkable
class AsyncStoreMeta(Protocol):
    """The store's own settings (embedding model and dims, ...) and its lifecycle.

    ``close`` releases connections and flushes pending counters (:class:`Counters`); it is
    safe to call twice. ``get_meta`` of a key never set is ``None``; ``set_meta`` upserts.
    """

    url: str

    async def aclose(self) -> None: ...
    async def get_meta(self, key: str) -> str | None: ...
    async def set_meta(self, key: str, value: str) -> None: ...


# --- records ---
@runtime_checkable
class AsyncRecordStore(Protocol):
    """Records with versions, status and purge.

    A record is identified by ``(tenant, user, id)``. Writes check what they store: a
    vector whose length is not ``record.embedding_dims`` is a ``ValidationError``.
    History keeps every earlier version; a backend may store versions as deltas (SQLite
    stores only the changed fields) as long as :meth:`history` returns whole records.
    """

    async def insert(self, writes: Sequence[RecordWrite]) -> None:
        """Insert new records with their index entries, all or none. An id already present
        *in the same tenant and user* (or twice in the batch) is a ``ValidationError`` and
        nothing is written; an id that exists only under another tenant or user inserts
        exactly like a fresh one."""
        ...

    async def get(
        self, scope: Scope, record_id: str, *, include_deleted: bool = False
    ) -> MemoryRecord:
        """The current version, or ``NotFoundError`` (also for other tenants' records)."""
        ...

    async def get_many(self, scope: Scope, ids: Sequence[str]) -> list[MemoryRecord]:
        """Current versions of the ids visible in ``scope`` (deleted included), in the order
        given, each once; unknown and foreign ids are left out."""
        ...

    async def citing(self, scope: Scope, ids: Sequence[str]) -> list[str]:
        """The ids of the records of ``scope`` whose current version cites one of ``ids``
        (store/citations.py: ``source_ids``, a cluster's members, a fact's conflicts' sources;
        never a turn), deleted and superseded ones included, in their listing's order; found
        by index (a purge reads what cites what it purges, not the user's other records).
        A caller's scope finds none."""
        ...

    async def stored_vectors(self, scope: Scope, ids: Sequence[str]) -> dict[str, StoredVector]:
        """The stored vector of each of ``ids`` visible in ``scope`` (deleted included, as
        :meth:`get_many` finds them), with its model, in one read; unknown and foreign ids
        and records stored without a vector are left out. An export with embeddings writes
        these instead of embedding every text again."""
        ...

    async def replace(self, scope: Scope, write: RecordWrite, *, expected_version: int) -> None:
        """AsyncStore ``write.record`` (whose version is ``expected_version + 1``) as the new
        current version, keeping the old one in history; ``ConflictError`` if the current
        version is not ``expected_version``; ``NotFoundError`` if the id is not visible in
        ``scope``; ``ValidationError`` if the record would move to another tenant or user.
        ``vector=None`` keeps the old vector; the terms are always replaced. The counters
        (``access_count``, ``last_accessed_at``) are the store's: the stored ones are kept,
        whatever the new record says, so an update never loses or resets a count."""
        ...

    async def history(self, scope: Scope, record_id: str) -> list[MemoryRecord]:
        """Every version of the record, oldest first, the current one last (as whole
        records, with the counters of the current version)."""
        ...

    async def histories(self, scope: Scope, ids: Sequence[str]) -> dict[str, list[MemoryRecord]]:
        """:meth:`history` of each record of ``ids`` visible in ``scope`` (the others are
        left out, not an error), in one read of the store whatever their number. Through a
        caller, only the versions whose access admitted the caller
        (:func:`~memstrata.store.types.readable_versions`)."""
        ...

    def history_parts(
        self, scope: Scope, record_id: str, *, below: int, size: int
    ) -> AsyncIterator[list[MemoryRecord]]:
        """The earlier versions of the record visible in ``scope`` whose version is below
        ``below`` (never its current one), oldest first, in lists of at most ``size``:
        what :meth:`histories` gives of one record, without holding it whole (an export of
        a record with more than ``portability.HISTORY_PAGE`` versions). One read of the
        store (a snapshot) fetches them (the SQL stores' deltas, made into versions once it
        has ended); a part at a time is held, the rest on disk
        (:class:`memstrata.store.history_parts.PartSpool`) until given. Nothing for a
        record not visible; through a caller, only the versions :meth:`histories` shows."""
        ...

    async def set_status(
        self, scope: Scope, ids: Sequence[str], status: RecordStatus, at: datetime
    ) -> list[str]:
        """Soft-delete or restore; returns the ids that changed, in the order given. Each
        change bumps the version (the old one goes to history)."""
        ...

    async def purge(
        self,
        scope: Scope,
        ids: Sequence[str],
        *,
        reterm: Mapping[str, Sequence[str]] | None = None,
    ) -> PurgeReport:
        """Destroy records for real: current row, history, vectors, terms, counters.

        ``reterm`` gives new lexical terms for records of the same user that stay (by id;
        unknown ids are ignored), written in the same transaction without a new version
        when they differ from the stored ones: a record indexed under words of a purged
        one (a reply under its question, ``search/reply_terms.py``) loses them. It applies
        only when a record was purged.

        In the same transaction, first, the user's running jobs (but those of the calling
        job's own claim) are pending again with their attempt given back: they may have
        read these records, so they run again on what is left, and a write they would still
        make under the old claim is refused (:class:`~memstrata.jobs.Fence`)."""
        ...

    async def reterm(self, scope: Scope, terms: Mapping[str, Sequence[str]]) -> None:
        """New lexical terms for records of ``scope``'s user (by id; unknown ids are
        ignored), without a new version, where they differ from the stored ones: a reply
        indexed under the question before it follows that question's edit, delete and
        restore (``search/reply_terms.py``). Nothing for a caller's scope."""
        ...

    async def purge_user(self, tenant: str, user: str) -> PurgeReport:
        """Destroy everything of one user — records, history, vectors, terms, counters,
        jobs, session buffer and embedding-cache entries (query embeddings included) — and
        verify with a fresh query that nothing is left (``remaining``, must be 0). The jobs
        go first: a job's write under way is waited for and purged with the rest, a later
        one is refused (:class:`~memstrata.jobs.Fence`)."""
        ...

    async def list(
        self,
        scope: Scope,
        filters: Filters,
        *,
        limit: int = 100,
        offset: int = 0,
        newest_first: bool = True,
    ) -> list[MemoryRecord]:
        """Records ordered by ``observed_at`` (ties by insertion order)."""
        ...

    async def list_many(
        self, queries: Sequence[ListQuery]
    ) -> builtins.list[builtins.list[MemoryRecord]]:
        """What :meth:`list` returns for each query, in the queries' order, in one read (one
        transaction, round trip or connection, where ``list`` would take one per query)."""
        ...

    def list_pages(
        self, scope: Scope, filters: Filters, *, batch_size: int = 1000
    ) -> AsyncIterator[builtins.list[MemoryRecord]]:
        """Every record of ``list``, oldest first, in pages read one short read at a time
        after the last ``(observed_at, insertion order)`` returned: a record that exists
        throughout is returned exactly once, whatever is purged or added meanwhile (pages
        by offset skipped one after a purge and repeated one after a backfilled add), and
        no read holds the store for the whole walk (an export of a large user)."""
        ...

    async def list_after(
        self,
        scope: Scope,
        filters: Filters,
        record_id: str,
        *,
        limit: int = 20,
        newest_first: bool = False,
    ) -> builtins.list[MemoryRecord]:
        """What :meth:`list` orders after the record ``record_id`` (before it, newest first,
        with ``newest_first``), up to ``limit``: one read from the record's place (its
        ``observed_at``, then insertion order), however many records share its time (the
        turn before or after a reply, ``search/reply_terms.py``). Empty when ``scope``
        holds no such record."""
        ...

    async def count(self, scope: Scope, filters: Filters) -> int: ...

    async def key_versions(
        self,
        scope: Scope,
        type: str,
        field: str,
        value: str,
    ) -> KeyVersions:
        """The records of one name (a fact key, a document) in one read, none decoded: those
        of ``type`` visible in ``scope`` whose ``metadata[field]`` is the string ``value``,
        deleted and superseded ones included (the records ``Filters(types={type},
        metadata=(MetadataCondition(field, "eq", value),), include_deleted=True,
        include_superseded=True)`` lists). Whether one is live (active, not superseded) and
        the id of the one inserted last. ``field`` is a plain name (letters, digits, ``_``)
        and ``type`` a record type, else ``ValidationError``. A fact's ``key`` and a
        document's ``qa_id`` are read by index (SQLite and PostgreSQL schema 12), in a time
        that does not grow with their history: a first version's transaction reads it again
        (``layers/races.py``)."""
        ...

    async def find_by_hash(
        self, scope: Scope, content_hash: str, types: Sequence[str]
    ) -> MemoryRecord | None:
        """The oldest active, not superseded, current record visible in ``scope`` with this
        content hash and one of ``types`` (any type if empty): dedup before insert. Inside a
        :class:`UnitOfWork` the look-up and a following insert are atomic."""
        ...

    def scan(self, batch_size: int = 500) -> AsyncIterator[builtins.list[MemoryRecord]]:
        """Every record of every tenant, deleted included, in insertion order (maintenance,
        re-embedding, migration)."""
        ...

    async def set_vectors(
        self, items: Sequence[tuple[MemoryRecord, Vector]], model_id: str, dims: int
    ) -> None:
        """Replace the vectors of the given records (as returned by :meth:`scan`; an
        admin operation) and set their ``embedding_model``/``embedding_dims``; no new
        version. ``NotFoundError`` (nothing written) if a record no longer exists."""
        ...

    async def stats(self, scope: Scope) -> StoreStats: ...


# --- retrieval candidates ---
@runtime_checkable
class AsyncCandidateSearch(Protocol):
    """Candidate generation for the hybrid search core."""

    async def vector_search(
        self, scope: Scope, vector: Vector, k: int, filters: Filters
    ) -> builtins.list[Candidate]:
        """Top-k by cosine similarity (vectors are unit length, so a dot product), best
        first, ties by insertion order. Exact: an ANN index must fall back to a scan where
        it could miss (the congruence test compares backends)."""
        ...

    async def lexical_search(
        self, scope: Scope, terms: Sequence[str], k: int, filters: Filters
    ) -> builtins.list[Candidate]:
        """Top-k by BM25 (k1=1.2, b=0.75, over the user's records) of the given,
        already-tokenised terms; higher is better; ties by insertion order. Terms are data,
        never query syntax."""
        ...

    async def vector_records(
        self,
        scope: Scope,
        vector: Vector,
        k: int,
        filters: Filters,
        *,
        keep: Callable[[MemoryRecord], bool] | None = None,
        want: int | None = None,
    ) -> builtins.list[tuple[MemoryRecord, float]]:
        """The records of :meth:`vector_search`'s top-k (as :meth:`get_many` finds them),
        with their cosine, best first: one read for what is otherwise two. With ``keep``,
        only the records it accepts, decoded best first until ``want`` are kept (the rest
        of the k are never decoded)."""
        ...


# --- embedding cache ---
@runtime_checkable
class AsyncEmbeddingCacheStore(Protocol):
    """Vectors of texts already embedded, so unchanged text is never embedded twice.

    Entries are keyed by ``(scope.tenant, scope.user, model_id, key)``; ``key`` is the
    text's content hash for passages and ``"q:" + hash`` for queries
    (:func:`memstrata.embedder.cache.cache_key`). Agent and session are ignored. An entry
    of one user is never returned to another, and :meth:`RecordStore.purge_user` deletes
    all of a user's entries, query embeddings included.
    """

    async def cached_vectors(
        self, scope: Scope, model_id: str, keys: Sequence[str]
    ) -> dict[str, Vector]:
        """The cached float32 vectors of those keys that have one (others are absent)."""
        ...

    async def cache_vectors(
        self, scope: Scope, model_id: str, vectors: Mapping[str, Vector]
    ) -> None:
        """Upsert entries; a non-finite or empty vector is a ``ValidationError``."""
        ...


# --- job queue ---
@runtime_checkable
class AsyncJobQueue(Protocol):
    """The outbox of background work, shared by every process on the store.

    A claim is a lease: claimed jobs are ``running`` until ``lease_until`` and are claimable
    again after it (that is how a killed worker's jobs come back); the holder renews it
    while it works (:meth:`renew_leases`), and each claim has a ``lease_token`` that
    finishing and failing name (fencing). Two concurrent claims never return the same job,
    and never jobs of one user while another claim holds a job of that user. A job with a
    ``dedup_key`` is not enqueued while an open (pending or running) job of the same user
    has that key.
    """

    async def enqueue(self, jobs: Sequence[Job]) -> None:
        """Add jobs, all or none; a job id already present is a ``ValidationError``."""
        ...

    async def claim_jobs(
        self,
        now: datetime,
        *,
        limit: int,
        lease_seconds: float,
        tenant: str | None = None,
        user: str | None = None,
        session: str | None = None,
        due_before: datetime | None = None,
    ) -> builtins.list[Job]:
        """Lease up to ``limit`` jobs of *one* user under a fresh ``lease_token``: pending
        ones whose ``run_after`` ≤ ``due_before`` (default ``now``) and running ones whose
        lease expired, oldest due first — and none of a user who has a job held under a
        live lease (one user's jobs never run at once). Each claim counts an attempt; the
        returned jobs carry the new count, the token and a lease of ``now + lease``."""
        ...

    async def renew_leases(self, token: str, until: datetime) -> builtins.list[str]:
        """Heartbeat: move the lease of the jobs still held under ``token`` to ``until``;
        returns their ids (a job missing was taken over, finished or purged)."""
        ...

    async def finish_job(self, job_id: str, lease_token: str | None = None) -> None:
        """Mark done. With ``lease_token``, only while that claim still holds the job, else
        :class:`~memstrata.jobs.LeaseLostError` (fencing); ``NotFoundError`` if gone."""
        ...

    async def fail_job(
        self, job_id: str, error: str, retry_at: datetime | None, lease_token: str | None = None
    ) -> None:
        """Record a failure; ``retry_at=None`` gives up (status ``failed``). Fenced by
        ``lease_token`` as :meth:`finish_job`."""
        ...

    async def give_back_job(
        self, job_id: str, reason: str, run_at: datetime, lease_token: str | None = None
    ) -> None:
        """A claimed job not run (its run cancelled, the worker stopping): pending again at
        ``run_at`` with the attempt its claim counted given back (``reason`` is kept as
        ``last_error``). Fenced by ``lease_token`` as :meth:`finish_job`."""
        ...

    async def count_open_jobs(
        self, *, tenant: str | None = None, user: str | None = None, session: str | None = None
    ) -> int:
        """Jobs pending or running (``flush()`` waits for those another worker holds)."""
        ...

    async def list_jobs(
        self, tenant: str, user: str, *, status: str | None = None
    ) -> builtins.list[Job]:
        """One user's jobs, oldest first, optionally of one status."""
        ...

    async def sweep_done_jobs(self, before: datetime, limit: int = DONE_SWEEP_BATCH) -> int:
        """Delete up to ``limit`` done jobs of any user due before ``before``, in one
        transaction (the retention ``maintain`` sweeps, batch by batch, so claims and
        finishes interleave); returns how many. Failed jobs are never swept."""
        ...


# --- session buffer ---
@runtime_checkable
class AsyncSessionBuffer(Protocol):
    """The short-term turns of a session: append and read the newest N.

    In a durable store the buffer *is* the session's ``message`` records, so it survives
    restarts and is purged with the user; ``append_turns`` is an insert of message records
    (inside a :class:`UnitOfWork` together with their ingest job). A hot-state buffer (Redis)
    may sit in front of a durable store; it is never the only copy of a turn.
    """

    async def append_turns(self, writes: Sequence[RecordWrite]) -> None:
        """AsyncStore message records (``type == message``; anything else is a
        ``ValidationError``), all or none, like :meth:`RecordStore.insert`."""
        ...

    async def recent_turns(self, scope: Scope, n: int) -> builtins.list[MemoryRecord]:
        """The ``n`` newest active message records of ``scope.session`` (visible in
        ``scope``), oldest first (by ``observed_at``, ties by insertion order). ``[]``
        without a session or with ``n < 1``."""
        ...


# --- counters ---
@runtime_checkable
class AsyncCounters(Protocol):
    """AsyncCounters on records: access counts and named hit counts (e.g. a cluster's hits).

    A counter change is **never a version**: no history row, no version bump, no change
    of ``updated_at``, and it never conflicts with ``replace``. AsyncCounters may be batched: a
    backend may buffer increments in process and write them in one transaction later
    (at the latest on :meth:`flush_counters` or ``close``); reads through the same store
    object include the buffered increments. A crash may lose at most the buffered ones.
    AsyncCounters of records not visible in ``scope`` are ignored (no error, nothing written),
    and so is :meth:`touch` through a caller's scope (``Scope.caller``): another user's
    reads do not count as the owner's accesses.
    """

    async def touch(self, scope: Scope, ids: Sequence[str], at: datetime) -> None:
        """Count one access per distinct id: ``access_count += 1``, ``last_accessed_at =
        max(last_accessed_at, at)``."""
        ...

    async def add_counts(self, scope: Scope, name: str, deltas: Mapping[str, int]) -> None:
        """Add to the counter ``name`` of each record id (missing counters start at 0)."""
        ...

    async def counts(self, scope: Scope, name: str, ids: Sequence[str]) -> dict[str, int]:
        """The counter ``name`` of each visible id (0 when never counted)."""
        ...

    async def flush_counters(self) -> None:
        """Write buffered counter increments now (a no-op for unbuffered backends)."""
        ...


# --- unit of work ---
@runtime_checkable
class AsyncUnitOfWork(Protocol):
    """Several writes in one transaction: all of them apply, or none.

    Obtained from ``async with store.transaction() as tx:``; leaving the block normally commits,
    an exception rolls everything back and propagates. The reads see the transaction's own
    writes, and a read followed by a write is atomic against other writers (SQLite:
    ``BEGIN IMMEDIATE``; PostgreSQL: row locks or ``SERIALIZABLE``). Each method has the
    contract of the store method of the same name. Do not call the store itself inside the
    block (it may deadlock or run outside the transaction); do no slow work (embedding,
    LLM calls) inside it either: compute first, then open the transaction.
    """

    async def get(
        self, scope: Scope, record_id: str, *, include_deleted: bool = False
    ) -> MemoryRecord: ...
    async def find_by_hash(
        self, scope: Scope, content_hash: str, types: Sequence[str]
    ) -> MemoryRecord | None: ...
    async def key_versions(self, scope: Scope, type: str, field: str, value: str) -> KeyVersions:
        """The store's :meth:`AsyncRecordStore.key_versions` inside the transaction, one
        name at a time: a transaction that asks it for a name waits until every other
        transaction that asked it for the same name has ended, and then reads what those
        committed (SQLite: ``BEGIN IMMEDIATE`` makes every writer wait; PostgreSQL: a
        transaction-level advisory lock on the name, then a statement of its own;
        ``memory://``: the store's lock). So what it reads stays so, for writers of the
        name that read it this way, until the transaction ends: a task's start checks that
        the session's newest task is still the one it read (``layers/working.py``), and a
        first fact or document version that its name is as it was read (``layers/races.py``)."""
        ...

    async def insert(self, writes: Sequence[RecordWrite]) -> None: ...
    async def append_turns(self, writes: Sequence[RecordWrite]) -> None: ...
    async def replace(self, scope: Scope, write: RecordWrite, *, expected_version: int) -> None: ...
    async def set_status(
        self, scope: Scope, ids: Sequence[str], status: RecordStatus, at: datetime
    ) -> builtins.list[str]: ...
    async def enqueue(self, jobs: Sequence[Job]) -> None: ...
    async def reterm(self, scope: Scope, terms: Mapping[str, Sequence[str]]) -> None: ...
    async def insert_history(
        self,
        histories: Sequence[Sequence[MemoryRecord]],
        newer: Sequence[MemoryRecord | None] | None = None,
    ) -> None:
        """Store earlier versions of records the store holds without any (an import that
        restores an export's history, after inserting the records in this transaction).
        A history too long to hold at once is given in parts, oldest part first (in one
        call or several of the transaction), each part but the last with ``newer[i]``
        (one for each sequence, ``None`` for the others): the version after the part's
        last, which the next part begins with; the next part goes on above the versions
        stored.
        Each sequence is one record's, oldest first: every version has the stored record's
        tenant, user and id, and a version number below the next one's and the stored
        record's; an empty one is skipped. Kept as the store keeps any history (SQLite and
        PostgreSQL as reverse deltas, :mod:`memstrata.store.sqlite.history`), so
        ``history`` then returns them, the stored record last; each version's counters are
        kept as given. ``ValidationError`` (nothing written) if a record is not stored or
        already has earlier versions (other than a part's before), or the versions are out
        of order
        (:mod:`memstrata.store.past_versions`)."""
        ...


# --- everything ---
@runtime_checkable
class AsyncStore(
    AsyncStoreMeta,
    AsyncRecordStore,
    AsyncCandidateSearch,
    AsyncEmbeddingCacheStore,
    AsyncJobQueue,
    AsyncSessionBuffer,
    AsyncCounters,
    Protocol,
):
    """Every interface of one backend, plus the transaction that spans them."""

    def transaction(self) -> AbstractAsyncContextManager[AsyncUnitOfWork]:
        """A :class:`UnitOfWork`; commits when the ``with`` block ends without an error."""
        ...


@runtime_checkable
class AsyncStoreCopy(Protocol):
    """Everything a store holds, read and written in bulk (``memstrata migrate``).

    ``dump_*`` stream every tenant's data in a stable order (records in insertion order;
    cache entries, jobs, audit events and API keys by key), ``batch_size`` items at a time, so
    memory stays bounded. ``load_*`` write one batch in one transaction, all or none,
    *skipping* what the store already holds under the same key (a record's ``(tenant, user,
    id)``, a job's, an audit event's or a key's id; cache entries are upserted), so a copy
    interrupted at any point can be run again without duplicating anything; they return how
    many were new.
    Loaded records keep their versions, times, counters and vector exactly (no new version,
    no re-embedding); jobs keep their status and attempts as given.

    A record with more than ``portability.HISTORY_PAGE`` earlier versions is dumped with
    its current version in ``RecordDump.versions`` and the others in ``RecordDump.earlier``,
    a part at a time, newest part first, readable until the next batch is asked for; a
    batch of short histories ends at ``HISTORY_PAGE`` earlier versions. ``load_records``
    writes a long history's parts as it reads them, in the batch's transaction.
    """

    # Whether text holding a NUL character can be stored (PostgreSQL: no; a migration
    # into it asks for --replace-nul).
    stores_nul: bool

    def dump_records(self, batch_size: int = 500) -> AsyncIterator[builtins.list[RecordDump]]: ...
    async def load_records(self, dumps: Sequence[RecordDump]) -> int: ...
    def dump_cache(self, batch_size: int = 500) -> AsyncIterator[builtins.list[CacheEntry]]: ...
    async def load_cache(self, entries: Sequence[CacheEntry]) -> int: ...
    def dump_jobs(self, batch_size: int = 500) -> AsyncIterator[builtins.list[Job]]: ...
    async def load_jobs(self, jobs: Sequence[Job]) -> int: ...
    def dump_audit(self, batch_size: int = 500) -> AsyncIterator[builtins.list[AuditEvent]]: ...
    async def load_audit(self, events: Sequence[AuditEvent]) -> int: ...
    def dump_keys(self, batch_size: int = 500) -> AsyncIterator[builtins.list[KeyRow]]:
        """The server's API keys kept in this store's database (``api_keys``; none if it
        has no such table), by id."""
        ...

    async def load_keys(self, keys: Sequence[KeyRow]) -> int: ...
    async def meta_items(self) -> dict[str, str]:
        """Every ``get_meta`` key with its value."""
        ...

    async def finish_load(self) -> None:
        """Build what loading deferred (PostgreSQL: the HNSW index per vector size, built
        once over the loaded rows instead of row by row); call it after the last load."""
        ...
