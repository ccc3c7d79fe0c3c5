"""Compaction: rewrite a store's files so the bytes of deleted rows are gone.

A purge deletes rows; whether their bytes leave the disk depends on the database. SQLite
(``secure_delete``, ``VACUUM``, a ``TRUNCATE`` checkpoint) rewrites
them at once. PostgreSQL keeps a deleted tuple in its heap page until the table is
rewritten and every insert in its write-ahead log until the segment is removed, so a store
that can compact implements :class:`Compactable`: ``Memory.compact()`` (and
``purge(..., compact=True)``, ``memstrata purge --compact``, ``memstrata maintain
--compact``) calls it. It is explicit and opt-in because it locks tables while it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

__all__ = ["CompactReport", "Compactable"]


@dataclass(frozen=True, slots=True)
class CompactReport:
    """What one compaction did, and what it could not reach.

    ``rewritten``: tables whose files were rebuilt (new files; the old ones were removed);
    ``skipped``: tables it was not allowed to rewrite; ``bytes_before``/``bytes_after``:
    their size on disk (tables, indexes, TOAST); ``checkpoint``/``wal_switched``: whether
    the write-ahead log holding the old bytes was closed and made removable; ``residuals``:
    what stays outside the library's reach on this server (each a sentence naming the
    setting or place), empty when nothing it can see is left."""

    rewritten: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    bytes_before: int = 0
    bytes_after: int = 0
    checkpoint: bool = False
    wal_switched: bool = False
    seconds: float = 0.0
    residuals: tuple[str, ...] = field(default=())


@runtime_checkable
class Compactable(Protocol):
    def compact(self, *, lock_timeout: float = 10.0) -> CompactReport:
        """Rewrite every table of the store so no deleted row's bytes stay in its files
        (a table locked by another transaction for over ``lock_timeout`` s is skipped)."""
        ...
