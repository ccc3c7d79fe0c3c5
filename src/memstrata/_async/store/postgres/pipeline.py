"""Pipeline mode helpers: a write transaction opened without a round trip of its own, and
a sync that cannot hang.

``conn.transaction()`` inside a pipeline syncs before and after its ``BEGIN`` (two round
trips for nothing); :func:`begin_transaction` makes the transaction itself, so in a
pipeline the ``BEGIN`` goes to the server with the statements after it. The job fence's
check (``outbox.begin_holding_claim``) and the writes behind searches (the store's
``_relaxed``) open theirs this way.

:func:`sync` is psycopg's ``Pipeline.sync()`` after every queued byte has been sent.
psycopg's own (3.3.9) sends what the socket takes at most twice once the last command is
queued, then waits for results: when the last statement is larger than that (an embedding
cache upsert of many vectors) and the server is still busy with an earlier one, the server
waits for the rest of the statement and psycopg for its answer, forever (found as a hang of
``memstrata bench scale`` on PostgreSQL under load, session 27; ``tests/lead27``)."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.generators import send

__all__ = ["begin_transaction", "sync"]


async def begin_transaction(conn: Any) -> psycopg.AsyncTransaction:
    """Start a transaction on ``conn`` (outside a pipeline: ``BEGIN`` and its answer; in
    one: ``BEGIN`` queued). The caller ends it: ``await tx.__aexit__(None, None, None)``
    commits, with an exception's type, value and traceback rolls back."""
    tx = psycopg.AsyncTransaction(conn)
    await tx.__aenter__()
    return tx


async def sync(conn: Any, batch: psycopg.AsyncPipeline) -> None:
    """``batch.sync()`` once every statement queued in it is wholly sent (see the module):
    ``send`` writes until libpq's output buffer is empty, reading what the server answers
    meanwhile, so the sync's own few bytes are all that is left to send."""
    async with conn.lock:
        await conn.wait(send(conn.pgconn))
    await batch.sync()
