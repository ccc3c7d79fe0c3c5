"""Writers of one fact key or one document at once, without a lock: the store decides.

A service reads, decides and writes; when another writer's commit made its read stale, the
write fails with nothing of it stored (:class:`Raced`) and the service reads and decides
again (:func:`settled`). A first record (no live one to name a version of) gets an id that
is a hash of what is stored (:func:`first_version_id`): writers that read the same state
make the same id, so the store's unique ids let one of them insert it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

from memstrata._async.layers.base import AsyncLayerContext
from memstrata.errors import ConflictError
from memstrata.filters import Filters
from memstrata.records import MemoryRecord
from memstrata.scope import Scope

__all__ = ["ATTEMPTS", "Raced", "first_version_id", "settled"]

T = TypeVar("T")

# Each retry follows another writer's commit, so only a storm of writers reaches this.
ATTEMPTS = 32


class Raced(Exception):
    """Another writer changed what was read between this writer's read and its write."""


async def settled(attempt: Callable[[], Awaitable[T]], what: str, call: str) -> T:
    """``attempt()`` again while another writer's commit makes it :class:`Raced`; a
    :class:`ConflictError` after :data:`ATTEMPTS` (``what``: "fact 'k' was changed",
    ``call``: "upsert")."""
    for _ in range(ATTEMPTS):
        try:
            return await attempt()
        except Raced:
            continue  # decide again on what the other writer left
    raise ConflictError(
        f"{what} by other writers {ATTEMPTS} times while this {call} ran; nothing of it was "
        "written: retry"
    )


async def first_version_id(
    ctx: AsyncLayerContext,
    scope: Scope,
    filters: Filters,
    name: str,
    prefix: str,
    live: Callable[[MemoryRecord], bool],
) -> str:
    """The id of a first record of ``name`` (a fact key, a document): ``prefix`` and a hash
    of ``name`` and of every stored record ``filters`` finds (deleted and superseded ones
    too, as the filters say). Never the id of one of them, as they do not contain it.
    :class:`Raced` when one of them is ``live``: another writer stored it since the read."""
    ids: list[str] = []
    async for page in ctx.store.list_pages(scope, filters):
        for r in page:
            if live(r):
                raise Raced
            ids.append(r.id)
    return prefix + hashlib.sha256("\x1f".join([name, *sorted(ids)]).encode()).hexdigest()[:32]
