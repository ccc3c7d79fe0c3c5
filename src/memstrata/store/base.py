"""The storage protocol every backend implements (SQLite, in-memory, PostgreSQL, ...).

Contract (held by ``tests/store/test_contract.py`` for every backend):

- every method that takes a :class:`Scope` enforces it inside its own query; a record that
  exists under another tenant or user behaves exactly like a missing one (``NotFoundError``
  for by-id calls, absent from lists and searches);
- every write call is atomic: it applies whole or not at all;
- ``replace`` is optimistic: it names the version it read, and a mismatch raises
  ``ConflictError``; the previous version is kept in the record's history;
- searches return candidates ``(id, raw score)`` best first, already restricted to the scope
  and the filters; fusion and re-scoring happen in the pure search core, not here.

Nothing here assumes SQL: a backend may answer ``lexical_search`` with FTS5, tsvector or an
in-process BM25, and ``vector_search`` with numpy, pgvector or an ANN index.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..filters import Filters
from ..jobs import Job
from ..records import MemoryRecord, RecordStatus
from ..scope import Scope

__all__ = ["Candidate", "PurgeReport", "RecordWrite", "Store", "StoreStats", "Vector"]

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class RecordWrite:
    """A record with what the store indexes for it: its vector and its lexical terms."""

    record: MemoryRecord
    vector: Vector | None
    terms: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Candidate:
    id: str
    score: float


@dataclass(frozen=True, slots=True)
class PurgeReport:
    records: int = 0
    versions: int = 0
    vectors: int = 0
    jobs: int = 0
    cache_entries: int = 0
    remaining: int = 0  # what a verification query still finds afterwards (must be 0)


@dataclass(frozen=True, slots=True)
class StoreStats:
    records: int
    active: int
    deleted: int
    by_type: Mapping[str, int] = field(default_factory=dict)
    pending_jobs: int = 0
    failed_jobs: int = 0
    users: int = 0


@runtime_checkable
class Store(Protocol):
    """Where records, vectors, history, the embedding cache and the job queue live."""

    url: str

    def close(self) -> None: ...

    # --- store-level metadata (embedding model, schema version, ...) -------------------
    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...

    # --- records ---------------------------------------------------------------------
    def insert(self, writes: Sequence[RecordWrite]) -> None:
        """Insert new records atomically; an id that exists already is a ValidationError."""
        ...

    def get(self, scope: Scope, record_id: str, *, include_deleted: bool = False) -> MemoryRecord:
        """The current version, or ``NotFoundError`` (also for other tenants' records)."""
        ...

    def get_many(self, scope: Scope, ids: Sequence[str]) -> list[MemoryRecord]:
        """Current versions of the ids visible in ``scope`` (deleted included), in the order
        given."""
        ...

    def replace(self, scope: Scope, write: RecordWrite, *, expected_version: int) -> None:
        """Store ``write.record`` (whose version is ``expected_version + 1``) as the new
        current version, keeping the old one in history; ``ConflictError`` if the current
        version is not ``expected_version``. ``vector=None`` keeps the old vector."""
        ...

    def history(self, scope: Scope, record_id: str) -> list[MemoryRecord]:
        """Every version of the record, oldest first, the current one last."""
        ...

    def set_status(self, scope: Scope, ids: Sequence[str], status: RecordStatus,
                   at: datetime) -> list[str]:
        """Soft-delete or restore; returns the ids that changed. Bumps each version."""
        ...

    def purge(self, scope: Scope, ids: Sequence[str]) -> PurgeReport:
        """Destroy records for real: current row, history, vectors, terms."""
        ...

    def purge_user(self, tenant: str, user: str) -> PurgeReport:
        """Destroy everything of one user (records, history, vectors, jobs) and verify."""
        ...

    def list(self, scope: Scope, filters: Filters, *, limit: int = 100, offset: int = 0,
             newest_first: bool = True) -> list[MemoryRecord]:
        """Records ordered by ``observed_at`` (ties by insertion order)."""
        ...

    def count(self, scope: Scope, filters: Filters) -> int: ...

    def find_by_hash(self, scope: Scope, content_hash: str,
                     types: Sequence[str]) -> MemoryRecord | None:
        """An active, current record with this content hash (dedup before insert)."""
        ...

    def touch(self, scope: Scope, ids: Sequence[str], at: datetime) -> None:
        """Count an access: ``access_count += 1``, ``last_accessed_at = at`` (no new version)."""
        ...

    # --- retrieval candidates ---------------------------------------------------------
    def vector_search(self, scope: Scope, vector: Vector, k: int,
                      filters: Filters) -> builtins.list[Candidate]:
        """Top-k by cosine similarity (vectors are unit length, so a dot product)."""
        ...

    def lexical_search(self, scope: Scope, terms: Sequence[str], k: int,
                       filters: Filters) -> builtins.list[Candidate]:
        """Top-k by BM25 over the records' terms (higher is better)."""
        ...

    # --- embeddings ---------------------------------------------------------------------
    def cached_vectors(self, model_id: str, hashes: Sequence[str]) -> dict[str, Vector]: ...
    def cache_vectors(self, model_id: str, vectors: Mapping[str, Vector]) -> None: ...
    def scan(self, batch_size: int = 500) -> Iterator[builtins.list[MemoryRecord]]:
        """Every record of every tenant, deleted included (maintenance and re-embedding)."""
        ...

    def set_vectors(self, items: Sequence[tuple[str, Vector]], model_id: str, dims: int) -> None:
        """Replace the vectors of records by id (re-embedding; an admin operation)."""
        ...

    # --- job queue (outbox) -----------------------------------------------------------
    def enqueue(self, jobs: Sequence[Job]) -> None: ...
    def claim_jobs(self, now: datetime, *, limit: int, lease_seconds: float,
                   tenant: str | None = None, user: str | None = None,
                   session: str | None = None, due_before: datetime | None = None
                   ) -> builtins.list[Job]:
        """Lease up to ``limit`` jobs of *one* user under a fresh ``lease_token``: pending
        ones whose ``run_after`` ≤ ``due_before`` (default ``now``) and running ones whose
        lease expired, oldest due first — and none of a user who has a job held under a
        live lease (one user's jobs never run at once). Each claim counts an attempt; the
        returned jobs carry the new count, the token and a lease of ``now + lease``."""
        ...
    def renew_leases(self, token: str, until: datetime) -> builtins.list[str]:
        """Heartbeat: move the lease of the jobs still held under ``token`` to ``until``;
        returns their ids (a job missing was taken over, finished or purged)."""
        ...
    def finish_job(self, job_id: str, lease_token: str | None = None) -> None:
        """Mark done. With ``lease_token``, only while that claim still holds the job, else
        :class:`~memstrata.jobs.LeaseLostError` (fencing); ``NotFoundError`` if gone."""
        ...
    def fail_job(self, job_id: str, error: str, retry_at: datetime | None,
                 lease_token: str | None = None) -> None:
        """Record a failure; ``retry_at=None`` gives up (status ``failed``). Fenced by
        ``lease_token`` as :meth:`finish_job`."""
        ...
    def count_open_jobs(self, *, tenant: str | None = None, user: str | None = None,
                        session: str | None = None) -> int:
        """Jobs pending or running (``flush()`` waits for those another worker holds)."""
        ...

    def list_jobs(self, tenant: str, user: str, *,
                  status: str | None = None) -> builtins.list[Job]: ...

    def stats(self, scope: Scope) -> StoreStats: ...
