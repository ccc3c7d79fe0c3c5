"""A write refused once a newer memstrata migrated the schema under this process (pg32).

A process checks the schema's version when it opens the store (``schema.migrate``); one
that opened it before another process (``memstrata migrate``, a newer memstrata) moved
it to a newer version went on writing rows the newer steps do not expect (derived
columns, re-termed words, link indexes filled from what was written before them). Each
write transaction now checks the version first, at no round trip of its own: its
``BEGIN`` is sent with :data:`HOLD` and :data:`VERSION` in one pipeline (the ``BEGIN``
alone took that round trip before; a job's write sends its claim check with them, a
write behind a search queues them with its statements).

:data:`HOLD` takes a shared advisory lock of the schema, which a migration takes
exclusively for its whole transaction (``schema.migrate``): a write started while a
migration runs waits for it, and no migration starts while a write checked the old
version and has not committed. :data:`VERSION` is a statement of its own, after the lock:
under READ COMMITTED it reads what the migration committed (a statement's snapshot is
taken when the statement starts, so a read in the lock's own statement would not)."""

from __future__ import annotations

import hashlib
from typing import Any

from memstrata.errors import SchemaVersionError

__all__ = ["HOLD", "VERSION", "check", "schema_key"]

HOLD = "SELECT pg_advisory_xact_lock_shared(%s)"
VERSION = "SELECT coalesce(max(version), 0) AS version FROM schema_migrations"


def schema_key(schema: str) -> int:
    """The advisory lock key of one schema's version (a signed 64-bit integer): writes
    of other schemas of the database never wait for this one's migration."""
    digest = hashlib.blake2b(b"memstrata-schema:" + schema.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


async def check(cur: Any, known: int, where: str) -> None:
    """Raise :class:`SchemaVersionError` when ``cur`` (:data:`VERSION`'s cursor) read a
    version newer than ``known``; the caller rolls its transaction back."""
    row = await cur.fetchone()
    found = int(row["version"] if isinstance(row, dict) else row[0])
    if found > known:
        raise SchemaVersionError(
            f"{where} was migrated to memstrata schema version {found} by a newer "
            f"memstrata while this process had it open (this one knows up to {known}); "
            "nothing of this call was written: restart this process with that memstrata "
            "(pip install -U 'memstrata[postgres]')"
        )
