"""The statements written behind searches, made in batches: one transaction for the
statements queued together, each statement alone when that transaction fails.

The source of truth for both write-behinds (``memstrata/store/postgres/batches.py``
is generated from it): the sync store's background thread (``store/postgres/behind.py``)
and the async store's tasks (``aio/pg_behind.py``) differ in how they run a write and wait
for it, not in how a batch is made. :meth:`AsyncStatementBatches.join` and
:meth:`AsyncStatementBatches.take` change the queue: their caller serialises them (the sync
shell under its lock, the async one on its loop).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from memstrata.store.postgres.behind_types import BATCH, LOCK_TIMEOUT, Statement, log_failed

__all__ = ["AsyncStatementBatches"]


class AsyncStatementBatches:
    """``transaction()``: the transaction a batch of :class:`Statement` writes is made in."""

    def __init__(
        self, transaction: Callable[[], AbstractAsyncContextManager[Any]] | None = None
    ) -> None:
        self._transaction = transaction
        self._group: list[Statement] | None = None  # statements the next batch takes

    def join(self, write: object) -> list[Statement] | None:
        """The group a :class:`Statement` joins (the statements queued just before it that no
        transaction has taken yet, at most :data:`BATCH`); ``None`` for another write, which
        closes the group: statements after it are made after it."""
        if not isinstance(write, Statement):
            self._group = None
            return None
        if self._group is None or len(self._group) >= BATCH:
            self._group = []
        self._group.append(write)
        return self._group

    def take(self, group: list[Statement]) -> list[Statement]:
        """The statements of ``group`` not made yet (an earlier write of the group may have
        taken them all); later statements start a new group."""
        batch = list(group)
        group.clear()
        if self._group is group:
            self._group = None
        return batch

    async def make(self, batch: list[Statement]) -> None:
        """Make ``batch`` in one transaction; if that fails, each statement alone (a bad one
        loses no other; a failure is logged, or raised for a batch of one). Each statement's
        ``taken`` runs first, its ``done`` at the end, committed or failed."""
        if not batch:
            return
        for statement in batch:
            if statement.taken is not None:
                statement.taken()
        try:
            try:
                await self._execute(batch)
            except Exception:
                if len(batch) == 1:
                    raise
                for statement in batch:  # one at a time: a bad one loses no other
                    try:
                        await self._execute([statement])
                    except Exception as exc:
                        log_failed(exc)
        finally:
            for statement in batch:
                if statement.done is not None:
                    statement.done()

    async def _execute(self, batch: list[Statement]) -> None:
        if self._transaction is None:
            raise RuntimeError("this write-behind was made without a transaction")
        async with self._transaction() as conn:
            if len(batch) > 1:
                await conn.execute(LOCK_TIMEOUT)
            for statement in batch:
                await conn.execute(statement.sql, statement.params)
