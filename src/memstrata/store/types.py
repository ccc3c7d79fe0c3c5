"""The values the storage seam passes around (shared by the sync and async stores)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from ..errors import ConflictError, NotFoundError, ValidationError
from ..filters import Filters
from ..records import JSON, MemoryRecord, RecordType, Role
from ..scope import Scope
from .compaction import CompactReport
from .history_parts import EarlierVersions

__all__ = [
    "CacheEntry",
    "Candidate",
    "INDEXED_NAMES",
    "KeyVersions",
    "ListQuery",
    "PLAIN_NAME",
    "PurgeReport",
    "RecordDump",
    "RecordView",
    "RecordWrite",
    "StoreStats",
    "StoredVector",
    "Vector",
    "check_replace",
    "history_of",
    "kept_records",
    "reembedded",
    "seqs_in_order",
    "user_ids",
    "name_field",
    "name_type",
    "speaker_of",
]

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class RecordWrite:
    """A record with what the store indexes for it: its vector and its lexical terms."""

    record: MemoryRecord
    vector: Vector | None
    terms: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class KeyVersions:
    """What :meth:`RecordStore.key_versions` read of the records of one name (a fact key, a
    document), all at one moment: whether one of them is ``live`` (active, not superseded),
    and the id of the one inserted last (``newest``, deleted and superseded ones included;
    ``None`` without any)."""

    live: bool
    newest: str | None


@dataclass(frozen=True, slots=True)
class RecordView:
    """What a context shows of a record, read without decoding the record (``views``, an
    optional store method): its text, whose it is and when it was said, and what it was made
    from. ``speaker`` is ``metadata["speaker"]`` as the decoded record holds it (``None``
    without one)."""

    id: str
    type: RecordType
    text: str
    role: Role | None
    session: str | None
    observed_at: datetime
    source_ids: tuple[str, ...]
    speaker: JSON = None

    @classmethod
    def of(cls, record: MemoryRecord) -> RecordView:
        return cls(
            record.id,
            record.type,
            record.text,
            record.role,
            record.session,
            record.observed_at,
            record.source_ids,
            speaker_of(record.metadata),
        )


# A metadata key a JSON path names unquoted; the only kind the stores write into SQL.
PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# The names schema 12 indexes on SQLite and PostgreSQL, by metadata field: the record type
# whose names they are and the indexes' prefix (``records_fact_key``, ``records_doc_live``
# ...): a fact's key, a document's qa_id (``store.key_versions`` and filters by them).
INDEXED_NAMES: Mapping[str, tuple[str, str]] = {
    "key": (RecordType.FACT.value, "fact"),
    "qa_id": (RecordType.KNOWLEDGE.value, "doc"),
}


def name_field(field: str) -> str:
    """``field`` if it is a plain metadata key (letters, digits, ``_``): the stores write it
    into their SQL as a JSON path, so anything else is a ``ValidationError``."""
    if not isinstance(field, str) or not PLAIN_NAME.fullmatch(field):
        raise ValidationError(
            f"the metadata field of key_versions must be a plain name (letters, digits, _), "
            f"got {field!r}"
        )
    return field


def name_type(type: str) -> str:
    """The value of the record type ``type`` (a ``RecordType`` or its value): the stores
    write it into their SQL, so anything else is a ``ValidationError``."""
    try:
        return RecordType(type).value
    except ValueError:
        raise ValidationError(
            f"the type of key_versions must be a record type "
            f"({', '.join(t.value for t in RecordType)}), got {type!r}"
        ) from None


def speaker_of(metadata: Mapping[str, JSON]) -> JSON:
    """Who a record's metadata says spoke it (``metadata["speaker"]``), ``None`` without one."""
    return metadata.get("speaker") if isinstance(metadata, dict) else None


@dataclass(frozen=True, slots=True)
class Candidate:
    id: str
    score: float


@dataclass(frozen=True, slots=True)
class ListQuery:
    """One ``Store.list`` call, its arguments as ``list`` takes them (``list_many``)."""

    scope: Scope
    filters: Filters
    limit: int = 100
    offset: int = 0
    newest_first: bool = True


Row = TypeVar("Row")


def kept_records(
    found: Sequence[Candidate],
    rows: Mapping[str, Row],
    decode: Callable[[Row], MemoryRecord],
    keep: Callable[[MemoryRecord], bool] | None,
    want: int | None,
) -> list[tuple[MemoryRecord, float]]:
    """``vector_records`` from a search's candidates and their rows by id: each found row
    decoded best first, with its score; with ``keep``, only those it accepts, and decoding
    stops once ``want`` are kept."""
    out: list[tuple[MemoryRecord, float]] = []
    if want is not None and want <= 0:
        return out
    for cand in found:
        row = rows.get(cand.id)
        if row is None:
            continue
        record = decode(row)
        if keep is not None and not keep(record):
            continue
        out.append((record, float(cand.score)))
        if want is not None and len(out) >= want:
            break
    return out


@dataclass(frozen=True, slots=True)
class PurgeReport:
    records: int = 0
    versions: int = 0
    vectors: int = 0
    jobs: int = 0
    cache_entries: int = 0
    remaining: int = 0  # what a verification query still finds afterwards (must be 0)
    compaction: CompactReport | None = None  # purge(..., compact=True): the rewrite after it


@dataclass(frozen=True, slots=True)
class StoreStats:
    records: int
    active: int
    deleted: int
    by_type: Mapping[str, int] = field(default_factory=dict)
    pending_jobs: int = 0
    failed_jobs: int = 0
    users: int = 0


# --- bulk copy between backends (memstrata.store.migrate) ---
@dataclass(frozen=True, slots=True)
class RecordDump:
    """One record as a store holds it: every version (oldest first, the current one last),
    its stored vector, its lexical terms and its named counters. A record with more than
    ``portability.HISTORY_PAGE`` earlier versions has its current version alone in
    ``versions`` and the others in ``earlier``, a part at a time
    (:class:`~memstrata.store.history_parts.EarlierVersions`), so that a dump holds a
    part of one record's history, not all of it."""

    versions: tuple[MemoryRecord, ...]
    vector: Vector | None
    terms: tuple[str, ...]
    counters: Mapping[str, int] = field(default_factory=dict)
    earlier: EarlierVersions | None = None

    @property
    def record(self) -> MemoryRecord:
        return self.versions[-1]

    @property
    def past_count(self) -> int:
        """How many earlier versions the record has (in ``versions`` or ``earlier``)."""
        return len(self.versions) - 1 + (0 if self.earlier is None else self.earlier.count)


@dataclass(frozen=True, slots=True)
class StoredVector:
    """A record's vector as the store holds it, with the model that made it (``None`` for
    a vector stored without one): what an export with embeddings writes, so the file
    carries the index's vectors and no text is embedded again."""

    model: str | None
    vector: Vector


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """An embedding-cache entry. ``scope_tok`` names the user
    (:func:`memstrata.store.sqlite.codec.scope_token` of tenant and user): the cache is
    keyed by that token, never by the raw ids."""

    scope_tok: str
    model_id: str
    key: str
    vector: Vector


def history_of(
    found: Mapping[str, list[MemoryRecord]], scope: Scope, record_id: str
) -> list[MemoryRecord]:
    """A store's ``history`` from its ``histories`` answer: ``NotFoundError`` when the
    record is not visible in ``scope``."""
    if record_id not in found:
        raise NotFoundError(f"no record {record_id!r} in scope {scope}")
    return found[record_id]


def readable_versions(
    found: dict[str, list[MemoryRecord]], scope: Scope
) -> dict[str, list[MemoryRecord]]:
    """A ``histories`` answer as ``scope`` may read it: through a caller, only the versions
    whose access admitted the caller when they were current. A record shared after a
    private edit showed its private words to the user it was shared with, through its
    history and an export (until session 26). The owner reads every version."""
    if scope.caller is None:
        return found
    return {rid: [v for v in versions if v.visible_in(scope)] for rid, versions in found.items()}


def reembedded(
    items: Sequence[tuple[MemoryRecord, Vector]], model_id: str, dims: int
) -> list[tuple[MemoryRecord, bytes]]:
    """What ``set_vectors`` writes: each record as ``model_id`` made its vector, with the
    vector as stored (little-endian float32). A vector of other than ``dims`` dimensions is
    refused before anything is written."""
    from .sqlite.codec import encode_vector  # it imports this module

    out = []
    for record, vector in items:
        blob = encode_vector(vector)
        if len(blob) // 4 != dims:
            raise ValidationError(
                f"vector for {record.id!r} has {len(blob) // 4} "
                f"dimensions, but set_vectors was told {dims}"
            )
        out.append((replace(record, embedding_model=model_id, embedding_dims=dims), blob))
    return out


def user_ids(records: Sequence[MemoryRecord]) -> dict[tuple[str, str], list[str]]:
    """The records' ids by ``(tenant, user)``, each once, in order."""
    out: dict[tuple[str, str], dict[str, None]] = {}
    for r in records:
        out.setdefault((r.tenant, r.user), {})[r.id] = None
    return {user: list(ids) for user, ids in out.items()}


def seqs_in_order(
    records: Sequence[MemoryRecord], found: Mapping[tuple[str, str, str], int]
) -> list[int]:
    """Each record's ``seq`` from ``found`` (by tenant, user and id), in order;
    ``NotFoundError`` naming the first record not there: nothing was re-embedded."""
    for r in records:
        if (r.tenant, r.user, r.id) not in found:
            raise NotFoundError(f"no record {r.id!r}; nothing was re-embedded")
    return [found[(r.tenant, r.user, r.id)] for r in records]


def check_replace(
    new: MemoryRecord, current: int, owner: tuple[str, str], expected_version: int
) -> None:
    """What every store's ``replace`` checks, under its lock, of the ``new`` version against
    the stored record (at version ``current``, of ``owner``: its tenant and user): a
    ``ConflictError`` when another change came first, a ``ValidationError`` when ``new`` is
    not the version after ``expected_version`` or would move the record to another user."""
    if current != expected_version:
        raise ConflictError(
            f"record {new.id!r} is at version {current}, but this update was based on "
            f"version {expected_version}; re-read the record and apply the change again"
        )
    if new.version != expected_version + 1:
        raise ValidationError(
            f"the new version of {new.id!r} must be {expected_version + 1}, got {new.version}"
        )
    if (new.tenant, new.user) != owner:
        raise ValidationError(
            f"replace cannot move record {new.id!r} to another "
            "tenant or user; insert a copy under a new id instead"
        )
