"""Writers of one fact key or one document at once, without a lock: the store decides.

A service reads, decides and writes; when another writer's commit made its read stale, the
write fails with nothing of it stored (:class:`Raced`) and the service reads and decides
again (:func:`settled`). A first record (no live one to name a version of) gets an id that
is a hash of what is stored of its name (:func:`first_version_id`: its record inserted
last): writers that read the same state make the same id, so the store's unique
ids let one of them insert it.

What no unique id can stop leaves a name with two live records: a restore (or an import)
committed between a first writer's read and its insert, or a purge of the name's newest
record between two first writers' reads (they make two ids). The next write of the name
ends the others: a fact's upsert ends every other live fact of its key, superseded by the
record it writes or keeps (``semantic.py``), and an ingest of a document soft-deletes
every live chunk it read (``knowledge.py``); ``facts.get`` meanwhile picks one by a fixed
order. A restore of a fact or a document's chunk ends the other live record(s) itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TypeVar

from memstrata._async.layers.base import AsyncLayerContext
from memstrata.errors import ConflictError
from memstrata.records import RecordType
from memstrata.scope import Scope

__all__ = ["ATTEMPTS", "Raced", "first_version_id", "settled", "taken"]

T = TypeVar("T")

# Each retry follows another writer's commit, so only a storm of writers reaches this.
ATTEMPTS = 32
# Set by :func:`settled` once an attempt was ``Raced``: the next first ids are checked.
_AGAIN: ContextVar[bool] = ContextVar("memstrata_races_again", default=False)


class Raced(Exception):
    """Another writer changed what was read between this writer's read and its write."""


async def settled(attempt: Callable[[], Awaitable[T]], what: str, call: str) -> T:
    """``attempt()`` again while another writer's commit makes it :class:`Raced`; a
    :class:`ConflictError` after :data:`ATTEMPTS` (``what``: "fact 'k' was changed",
    ``call``: "upsert")."""
    checked = None
    try:
        for _ in range(ATTEMPTS):
            try:
                return await attempt()
            except Raced:
                if checked is None:  # a first id of a later attempt is checked before use
                    checked = _AGAIN.set(True)
                continue  # decide again on what the other writer left
    finally:
        if checked is not None:
            _AGAIN.reset(checked)
    raise ConflictError(
        f"{what} by other writers {ATTEMPTS} times while this {call} ran; nothing of it was "
        "written: retry"
    )


async def first_version_id(
    ctx: AsyncLayerContext, scope: Scope, type: RecordType, field: str, name: str, prefix: str
) -> str:
    """The id of a first record of ``name`` (a fact key, a document): the records of
    ``type`` whose ``metadata[field]`` is ``name`` (deleted and superseded ones too) have no
    live one. :class:`Raced` when one is live: another writer stored it since the read.

    Index reads (:meth:`~memstrata._async.store.base.AsyncRecordStore.key_versions`), each
    one moment, none decoding a record or growing with the name's history:

    - the id is ``prefix`` and a hash of ``name`` and of the id of its record inserted last.
      Writers that read the same state make the same id (one insert wins, the others read
      again); the next insert of the name is the new last one, so after it the id is
      another. A purge changes it only when it takes the last record: two writers, one
      reading before such a purge and one after, could make two ids (as they could with a
      hash of every stored id), but any other purge leaves their ids equal;
    - it is never an id already stored. A record made from this last one is newer than it,
      so the id is taken only when records came back with their old ids (an import, a
      migration, after purges) and the old last one is the last again. A first attempt
      uses the id unchecked (one read): taken, its insert fails, :class:`Raced`
      (:func:`taken`). A later attempt of :func:`settled` checks it in a second read that
      reads the state again; a taken id is followed by a hash of it, and so on, each asked
      in the same read as the state, so writers that read the same state walk the same ids
      to the same free one. Each taken id is a stored record, so the walk ends (in practice
      at the first or second id). When the second read finds the state changed by another
      writer's commit (or an id of the walk freed), :class:`Raced`."""
    store = ctx.store
    seen = await store.key_versions(scope, type, field, name)
    if seen.live:
        raise Raced
    walk = [_hash(prefix, name, seen.newest or "")]
    if not _AGAIN.get():
        return walk[0]
    while True:
        now = await store.key_versions(scope, type, field, name, walk)
        if now.live or now.newest != seen.newest:
            raise Raced
        if walk[-1] not in now.taken:
            if now.taken != frozenset(walk[:-1]):
                raise Raced  # an id of the walk was purged meanwhile: read again
            return walk[-1]
        walk.append(_hash(prefix, name, "taken", walk[-1]))


async def taken(
    ctx: AsyncLayerContext, scope: Scope, type: RecordType, field: str, name: str, record_id: str
) -> bool:
    """Whether a record of ``scope``'s tenant and user has the id ``record_id`` (any type,
    any visibility: what an insert collides with), after an insert of a record of ``name``
    under that id failed: then another writer stored it first, or (a first id) it was taken
    already; either way the insert is :class:`Raced`."""
    found = await ctx.store.key_versions(scope, type, field, name, [record_id])
    return record_id in found.taken


def _hash(prefix: str, *parts: str) -> str:
    return prefix + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]
