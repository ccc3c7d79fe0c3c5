"""Content hashes of what a store holds, computed alike on every backend (pure functions).

Each hash is BLAKE2b-128 over a canonical form: records as :func:`record_to_dict` JSON
(sorted keys, times in ISO-8601 UTC), vectors as little-endian float32 bytes, terms as the
tokens the lexical index holds for them (:func:`fts5.document_tokens`, which is what both
SQL stores index, whichever of the two forms a store keeps), counters sorted by name.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...audit import AuditEvent
from ...codec import record_to_dict
from ...jobs import Job, JobStatus
from ...records import MemoryRecord
from ..base import CacheEntry, RecordDump, Vector
from ..fts5 import document_tokens
from ..sqlite.outbox import job_row

__all__ = [
    "PARTS",
    "RecordDigest",
    "cache_digest",
    "copied_job",
    "event_digest",
    "job_digest",
    "meta_differences",
    "record_digest",
    "record_key",
]


def _tokens(terms: Sequence[str]) -> list[str]:
    """What the lexical index holds for these terms (the tokens FTS5's tokenizer makes of
    them, as both SQL stores index them)."""
    return document_tokens(terms)


# The parts of a record compared separately, so a difference says which one.
PARTS = ("current version", "history", "vector", "terms", "counters")


def _h(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _json(value: Any) -> bytes:
    return json.dumps(
        value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str
    ).encode("utf-8")


def _vector(v: Vector | None) -> bytes:
    if v is None:
        return b"none"
    return _h(np.asarray(v, dtype="<f4").tobytes())


@dataclass(frozen=True, slots=True)
class RecordDigest:
    parts: tuple[bytes, ...]  # one hash per PARTS entry
    versions: int
    has_vector: bool
    counters: int

    def differences(self, other: RecordDigest) -> list[str]:
        return [name for name, a, b in zip(PARTS, self.parts, other.parts, strict=True) if a != b]


def record_key(d: RecordDump) -> str:
    r = d.record
    return f"{r.tenant}/{r.user}/{r.id}"


def record_digest(d: RecordDump) -> RecordDigest:
    """The record's hashes; a long history (``RecordDump.earlier``) is read, and hashed, a
    part at a time."""
    current = _h(_json(record_to_dict(d.record)))
    history, versions = _history(d)
    terms = _h(_json(_tokens(d.terms)))
    counters = _h(_json(sorted(d.counters.items())))
    return RecordDigest(
        (current, history, _vector(d.vector), terms, counters),
        versions,
        d.vector is not None,
        len(d.counters),
    )


def _history(d: RecordDump) -> tuple[bytes, int]:
    """One hash of the earlier versions, newest first (the order a long history's parts
    come in: the same hash whether a store gave them whole or in parts), and how many."""
    h = hashlib.blake2b(digest_size=16)
    parts: Iterable[Sequence[MemoryRecord]] = [d.versions[:-1]] if d.earlier is None else d.earlier
    n = 0
    for part in parts:
        for v in reversed(part):
            h.update(_json(record_to_dict(v)) + b"\n")  # no raw newline in JSON text
            n += 1
    return h.digest(), n


def cache_digest(e: CacheEntry) -> int:
    """An entry's hash as an integer: a user's entries are summed (order does not matter)."""
    return int.from_bytes(_h(_json([e.model_id, e.key]) + _vector(e.vector)), "big")


def copied_job(job: Job) -> Job:
    """A job as a migration writes it: a running job's lease is cleared (no worker of the
    target holds it) and it is pending again, its attempts kept."""
    if job.status is JobStatus.RUNNING or job.lease_token is not None or job.lease_until:
        status = JobStatus.PENDING if job.status is JobStatus.RUNNING else job.status
        return replace(job, status=status, lease_until=None, lease_token=None)
    return job


def job_digest(job: Job) -> bytes:
    return _h(_json(list(job_row(job))))


def event_digest(e: AuditEvent) -> bytes:
    return _h(_json(e.as_dict()))


def meta_differences(source: Mapping[str, str], target: Mapping[str, str]) -> list[str]:
    out = []
    for key in sorted(set(source) | set(target)):
        if key not in target:
            out.append(f"{key!r} missing in the target")
        elif key not in source:
            out.append(f"{key!r} only in the target")
        elif source[key] != target[key]:
            out.append(f"{key!r} is {target[key]!r} in the target, {source[key]!r} in the source")
    return out
