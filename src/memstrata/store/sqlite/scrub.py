"""A purge's bytes, finished after a crash.

A purge deletes its rows in one transaction, but the words stay in the files until the
write-ahead log is emptied: the WAL keeps earlier frames of every page the purge zeroed,
and the main file keeps those pages until a checkpoint copies the zeroed ones in. So a
purge ends with a ``TRUNCATE`` checkpoint, and a whole user's with a ``VACUUM`` before it.
A process killed between the commit and the end of that left the words on disk, and a
store opened again kept them as long as it ran (SQLite empties the WAL when the last
connection closes cleanly, not at open).

So the purge's transaction also writes :data:`OWED` in ``meta`` (``checkpoint``, or
``vacuum`` for a whole user; it names no one), and :func:`scrub` deletes it only once the
WAL is empty. A store that opens with it does the scrub first; so do the next purge and
``compact``. A checkpoint that other connections' reads keep from finishing (``busy``)
leaves the marker for the next one.
"""

from __future__ import annotations

import logging
import sqlite3

__all__ = ["OWED", "owe", "owed", "scrub"]

_log = logging.getLogger(__name__)

OWED = "scrub_owed"  # meta key: a purge committed whose bytes are not scrubbed yet
_VACUUM = "vacuum"


def owe(c: sqlite3.Connection, *, vacuum: bool) -> None:
    """Inside a purge's transaction: its bytes are owed (a ``VACUUM`` owed stays owed)."""
    c.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
        "CASE WHEN meta.value = ? THEN meta.value ELSE excluded.value END",
        (OWED, _VACUUM if vacuum else "checkpoint", _VACUUM),
    )


def owed(c: sqlite3.Connection) -> str | None:
    row = c.execute("SELECT value FROM meta WHERE key = ?", (OWED,)).fetchone()
    return None if row is None else str(row[0])


def scrub(c: sqlite3.Connection, *, vacuum: bool = False) -> bool:
    """``VACUUM`` (when asked, or owed), then empty the WAL; then, and only then, the
    marker goes. ``c`` is the store's write connection, outside a transaction, under its
    lock. Whether the WAL was emptied."""
    was = owed(c)
    if vacuum or was == _VACUUM:
        c.execute("VACUUM")
        if was == _VACUUM:  # what is left owed, if the WAL stays busy, is its checkpoint
            c.execute("UPDATE meta SET value = 'checkpoint' WHERE key = ?", (OWED,))
    if not _checkpoint(c):
        _log.warning(
            "memstrata: the WAL of this store could not be emptied (other connections are "
            "reading); a purge's bytes stay in it until the next purge, compact or open"
        )
        return False
    if was is not None:
        # Left in the WAL: that one page of ``meta``, written after the purge (no
        # checkpoint for it: a second fsync for a frame that holds nothing purged).
        c.execute("DELETE FROM meta WHERE key = ?", (OWED,))
    return True


def _checkpoint(c: sqlite3.Connection) -> bool:
    busy = c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    return not busy
