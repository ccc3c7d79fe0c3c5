"""A write transaction opened without a round trip of its own (psycopg's pipeline mode).

``conn.transaction()`` inside a pipeline syncs before and after its ``BEGIN`` (two round
trips for nothing); :func:`begin_transaction` makes the transaction itself, so in a
pipeline the ``BEGIN`` goes to the server with the statements after it. The job fence's
check (``outbox.begin_holding_claim``) and the writes behind searches (the store's
``_relaxed``) open theirs this way."""

from __future__ import annotations

from typing import Any

import psycopg

__all__ = ["begin_transaction"]


async def begin_transaction(conn: Any) -> psycopg.AsyncTransaction:
    """Start a transaction on ``conn`` (outside a pipeline: ``BEGIN`` and its answer; in
    one: ``BEGIN`` queued). The caller ends it: ``await tx.__aexit__(None, None, None)``
    commits, with an exception's type, value and traceback rolls back."""
    tx = psycopg.AsyncTransaction(conn)
    await tx.__aenter__()
    return tx
