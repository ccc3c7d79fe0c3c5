"""``memstrata migrate``: copy a store into another backend and prove the copy equal.

``copy_store(source_url, target_url)`` streams everything a store holds — every tenant and
user, records in every status with their whole version history, vectors (never re-embedded),
lexical terms, named counters, the embedding cache, jobs, the audit log and the store's meta
(embedding model and dims, so the target refuses another embedder exactly as the source
does) — in bounded batches, then verifies counts and content hashes read back from both
stores. ``verify_stores`` compares two stores without writing.
"""

from .copy import copy_store, verify_stores
from .report import KINDS, KindCount, MigrationReport, Mismatch, redact_url

__all__ = [
    "KINDS",
    "KindCount",
    "MigrationReport",
    "Mismatch",
    "copy_store",
    "redact_url",
    "verify_stores",
]
