"""Read-then-write steps that must be atomic, built on :meth:`AsyncStore.transaction`.

Dedup (``policies/dedup.py``) decides *what* counts as a duplicate; these primitives make
the decision and the write one transaction, so concurrent writers (threads or processes)
storing the same text make one record, and a merge into a record that another writer just
updated never fails with ``ConflictError``: the merge is re-applied to the version it reads
inside the transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from memstrata._async.store.base import AsyncStore, RecordWrite
from memstrata.records import MemoryRecord
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize

__all__ = ["insert_unless_exists", "update_atomically"]


async def insert_unless_exists(
    store: AsyncStore,
    scope: Scope,
    write: RecordWrite,
    types: Sequence[str],
    accept: Callable[[MemoryRecord], bool] = lambda _: True,
) -> MemoryRecord | None:
    """Insert ``write`` unless an active, current record visible in ``scope`` has the same
    content hash and one of ``types`` (and ``accept(it)`` holds); look-up and insert are
    one transaction. Returns that existing record (nothing was written) or ``None``."""
    record = write.record
    async with store.transaction() as tx:
        if record.content_hash:
            existing = await tx.find_by_hash(scope, record.content_hash, types)
            if existing is not None and accept(existing):
                return existing
        await tx.insert([write])
    return None


async def update_atomically(
    store: AsyncStore, scope: Scope, record_id: str, change: Callable[[MemoryRecord], MemoryRecord]
) -> MemoryRecord:
    """Apply ``change`` to the current version of a record and store the result as the next
    version, in one transaction (no ``ConflictError``: nobody can write in between).

    ``change`` gets the current record and returns the new one (its ``version`` is set
    here). The vector is kept; the lexical terms are re-derived from the new text.
    ``NotFoundError`` if the record is not (or no longer) visible and active in ``scope``.
    """
    async with store.transaction() as tx:
        current = await tx.get(scope, record_id)
        new = change(current)
        if new.version != current.version + 1:
            new = replace(new, version=current.version + 1)
        await tx.replace(
            scope,
            RecordWrite(new, None, tuple(tokenize(new.text))),
            expected_version=current.version,
        )
    return new
