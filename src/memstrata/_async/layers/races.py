"""Writers of one fact key or one document at once: the store decides.

A service reads, decides and writes; when another writer's commit made its read stale, the
write fails with nothing of it stored (:class:`Raced`) and the service reads and decides
again (:func:`settled`). A first record (no live one to name a version of) has a random id
(:func:`first_version`), and the transaction that inserts it reads the name's state again
first (:meth:`FirstVersion.check`, through ``UnitOfWork.key_versions``, which lets one
transaction of the name at a time past it): when another writer stored a record of the name
since this one read it, or a purge took its newest, :class:`Raced`, so of concurrent first
writers exactly one inserts and the others read again and decide on what it wrote. Until
session 30 the id was a hash of the name's record stored last, so that such writers made
the same id and the store's unique ids let one in; a purge of that record rewound it, and
the next first record got the purged one's id again.

A restore of a fact or a document's chunk takes the name's turn the same way (session 30):
it reads the name's state (:func:`read_name`) before its live records, and its transaction
reads it again first (:meth:`NameRead.check`): when a record of the name was inserted
since, or one made live (another restore), :class:`Raced`, and it reads again and ends
the other live record(s) in its transaction, as a restore does. Before, a restore that
read the name before a first writer committed and committed after that writer's check
left two live records (as did two restores of two deleted records of one name).

A chunk restored into the document's live version (of its ``chunk_count``, at an index it
lacks) also checks in its transaction that the live chunks it read are still live at their
versions (``knowledge.py``): another restore that brought an older version back in their
place changes neither the live/no-live state nor the newest record. And a restore checks
there that no chunk deleted when it read, that would take a place it decided on, was made
live since (session 31): of two restores of two deleted chunks (of two versions of one
``chunk_count``) into the same free index of the live version, or one into a free index
and one of another version whole (which ends the live chunks it read, not the one
brought back beside them), neither changed what the other read; both committed, and the
live version had two chunks at one index. Now the second reads again and decides on what
the first restored, as a restore after it does.

An import writes its records in one transaction, which takes no name's turn (on
PostgreSQL each turn is an advisory lock held to the transaction's end: a backup has
thousands of keys, and one transaction of the tests' server, at the default
``max_locks_per_transaction`` of 64, ran out of shared memory after 14,864 such locks).
After its commit it settles each name it brought a live record of (``facts.settle``,
``knowledge.settle``: a name with a live record of the store's own keeps one; both through
:func:`settle_names`), and each settle takes the name's turn first (:func:`take_turns`, 32
names a transaction that writes nothing): a first writer or a restore that checked the
name before the import committed has committed by then, so the settle's read finds its
record; one that checks the name later finds the import's. Until session 31 the settle
read the name without the turn (and a document did not settle at all): such a writer,
committing after the settle's read, left two live records.

Between an import's commit and its settle (and after a crash between the two) a name can
have two live records. The next write of the name ends the others: a fact's upsert ends
every other live fact of its key, superseded by the record it writes or keeps
(``semantic.py``), and an ingest of a document soft-deletes every live chunk it read
(``knowledge.py``); ``facts.get`` meanwhile picks one by a fixed order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from memstrata._async.layers.base import AsyncLayerContext
from memstrata._async.store.base import AsyncUnitOfWork
from memstrata.errors import ConflictError
from memstrata.records import RecordType, new_id
from memstrata.scope import Scope

__all__ = [
    "ATTEMPTS",
    "FirstVersion",
    "NameRead",
    "Raced",
    "first_version",
    "read_name",
    "settle_names",
    "settled",
    "take_turn",
    "take_turns",
]

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


@dataclass(frozen=True, slots=True)
class FirstVersion:
    """A first record of ``name`` about to be written: its ``id`` and the id of the name's
    record inserted last when the writer read it (``newest``; ``None`` without one)."""

    id: str
    scope: Scope
    type: RecordType
    field: str
    name: str
    newest: str | None

    async def check(self, tx: AsyncUnitOfWork) -> None:
        """First in the transaction that inserts :attr:`id`: :class:`Raced` when the name
        has a live record, or another newest one, since it was read. The read waits for
        every other transaction that asked it about the name (``UnitOfWork.key_versions``),
        so exactly one of concurrent first writers finds the state it read."""
        now = await tx.key_versions(self.scope, self.type, self.field, self.name)
        if now.live or now.newest != self.newest:
            raise Raced


async def first_version(
    ctx: AsyncLayerContext, scope: Scope, type: RecordType, field: str, name: str, prefix: str
) -> FirstVersion:
    """A first record of ``name`` (a fact key, a document): the records of ``type`` whose
    ``metadata[field]`` is ``name`` (deleted and superseded ones too) have no live one.
    :class:`Raced` when one is live: another writer stored it since the caller's read.

    One index read (:meth:`~memstrata._async.store.base.AsyncRecordStore.key_versions`), not
    decoding a record or growing with the name's history. The id is ``prefix`` and a random
    uuid4's hex (``records.new_id``, as every other new record's): never one a purge took
    (nor one stored: an import's, a migration's)."""
    seen = await ctx.store.key_versions(scope, type, field, name)
    if seen.live:
        raise Raced
    return FirstVersion(prefix + new_id(), scope, type, field, name, seen.newest)


@dataclass(frozen=True, slots=True)
class NameRead:
    """The state of ``name`` a restore of one of its records read (``newest``, the id of
    its record inserted last, ``None`` without one) before it read the name's live records
    and decided on them."""

    scope: Scope
    type: RecordType
    field: str
    name: str
    newest: str | None

    async def check(self, tx: AsyncUnitOfWork, *, live: bool) -> None:
        """First in the restore's transaction: :class:`Raced` unless the name is still as
        the restore decided on it: no record of it inserted since the read, and one live
        exactly when the restore read one (``live``: the live records it ends or keeps, or
        the restored one when it already was). It takes the name's turn as
        :meth:`FirstVersion.check` does (``UnitOfWork.key_versions``), so of a restore and a
        first writer, or two restores, of one name the second to take it finds the first's
        record and reads again."""
        now = await tx.key_versions(self.scope, self.type, self.field, self.name)
        if now.live != live or now.newest != self.newest:
            raise Raced


async def read_name(
    ctx: AsyncLayerContext, scope: Scope, type: RecordType, field: str, name: str
) -> NameRead:
    """The state of ``name`` a restore reads before its live records (one index read): read
    first, so that a record stored between the two reads changes what the restore's
    transaction finds (:meth:`NameRead.check`)."""
    seen = await ctx.store.key_versions(scope, type, field, name)
    return NameRead(scope, type, field, name, seen.newest)


# Names whose turn one transaction of ``take_turns`` takes: on PostgreSQL each is an advisory
# lock held to its end (max_locks_per_transaction's default is 64).
TURNS_AT_ONCE = 32


async def take_turns(
    ctx: AsyncLayerContext, scope: Scope, type: RecordType, field: str, names: Sequence[str]
) -> dict[str, NameRead]:
    """:func:`take_turn` of each of ``names``, ``TURNS_AT_ONCE`` in a transaction."""
    found: dict[str, NameRead] = {}
    for start in range(0, len(names), TURNS_AT_ONCE):
        async with ctx.store.transaction() as tx:
            for name in names[start : start + TURNS_AT_ONCE]:
                seen = await tx.key_versions(scope, type, field, name)
                found[name] = NameRead(scope, type, field, name, seen.newest)
    return found


async def take_turn(
    ctx: AsyncLayerContext, scope: Scope, type: RecordType, field: str, name: str
) -> NameRead:
    """The state of ``name`` once every writer that holds its turn has ended: a
    transaction that takes the turn (``UnitOfWork.key_versions``) and writes nothing. What
    writes records of ``name`` without taking the turn (an import's one transaction, which
    cannot take the turn of each of thousands of names: on PostgreSQL each turn is a lock
    held to the transaction's end) takes it so after its commit, before it reads the
    name's live records and decides on them (:meth:`NameRead.check` in the transaction
    that writes what it decided): a first writer or a restore that checked the name before
    that commit has committed by then, and one that checks it later finds that commit."""
    async with ctx.store.transaction() as tx:
        seen = await tx.key_versions(scope, type, field, name)
    return NameRead(scope, type, field, name, seen.newest)


async def settle_names(
    ctx: AsyncLayerContext,
    names: Iterable[tuple[Scope, str]],
    type: RecordType,
    field: str,
    decide: Callable[[Scope, str, NameRead], Awaitable[None]],
    what: str,
) -> None:
    """An import's settle of ``names`` (a user's scope and a name of its records of
    ``type`` whose ``metadata[field]`` is the name), in order, a user at a time: the turns
    of a user's names first (:func:`take_turns`), then ``decide(scope, name, turn)`` of
    each, which reads the name's live records, decides on them and checks ``turn``
    (:meth:`NameRead.check`) in the transaction that writes what it decided; ``Raced``
    there reads again after taking the name's turn anew (:func:`take_turn`), as
    :func:`settled` retries (``what``: "fact {!r} was changed", formatted with the name)."""
    by_user: dict[Scope, list[str]] = {}
    for scope, name in sorted(set(names), key=str):
        by_user.setdefault(scope, []).append(name)
    for scope, group in by_user.items():
        turns = await take_turns(ctx, scope, type, field, group)
        for name in group:
            await settled(
                _turn_then_decide(ctx, scope, type, field, name, turns[name], decide),
                what.format(name),
                "import",
            )


def _turn_then_decide(
    ctx: AsyncLayerContext,
    scope: Scope,
    type: RecordType,
    field: str,
    name: str,
    turn: NameRead,
    decide: Callable[[Scope, str, NameRead], Awaitable[None]],
) -> Callable[[], Awaitable[None]]:
    """The attempts of one name's settle: the first on ``turn`` (taken with other names'
    by :func:`take_turns`), each later one on the name's turn taken again."""
    taken = [turn]

    async def attempt() -> None:
        read = taken.pop() if taken else await take_turn(ctx, scope, type, field, name)
        await decide(scope, name, read)

    return attempt
