"""What the sync and the async PostgreSQL write-behind share, without I/O.

A search's counter and cache writes are made behind it (:mod:`memstrata.store.postgres.behind`
on a thread, :mod:`memstrata.aio.pg_behind` as tasks of the loop). Most of them are one SQL
:class:`Statement`; the statements queued one after another are made in one transaction
(:mod:`memstrata.store.postgres.batches`, generated from its async source). The
values live here so that both shells and both batch makers use the same class.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["BATCH", "LOCK_TIMEOUT", "Statement", "log_failed"]

_log = logging.getLogger("memstrata.store.postgres")

BATCH = 64  # statements at most in one transaction behind the searches
# A batch locks the rows of its statements one statement after another, so two processes'
# batches can wait for each other's rows (a deadlock PostgreSQL breaks after a second):
# a batch waits for a row lock at most this long, then its statements go one at a time.
LOCK_TIMEOUT = "SET LOCAL lock_timeout = '100ms'"


@dataclass(frozen=True, slots=True, eq=False)
class Statement:
    """A write behind a search that is one SQL statement (a touch, a cache upsert).

    Statements queued one after another are made in one transaction, one commit for all of
    them (under load a search's touch and cache entry and those of the searches queued
    with it): a transaction and a commit cost more than the statement. If that
    transaction fails, each statement is tried again alone, so one bad statement loses no
    other. ``taken`` runs when a transaction takes the statement, before it is sent (until
    then the database cannot hold its change); ``done`` once it is committed or has
    failed."""

    sql: str
    params: Sequence[Any]
    done: Callable[[], None] | None = None
    taken: Callable[[], None] | None = None


def log_failed(exc: BaseException) -> None:
    """A write behind a search failed: logged, not raised (the search has returned, and the
    Counters contract allows losing a counter write; a cache entry is only a cache)."""
    _log.warning("memstrata: a counter or cache write after a search failed: %s", exc)
