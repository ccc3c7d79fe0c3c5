"""Semantic memory, knowledge side: document chunks for retrieval (seed 002 §8.6).

A document (or a long answer) is split into ``chunk_tokens`` (2000) token chunks overlapping
by ``chunk_overlap_tokens`` (200); each chunk is a ``KNOWLEDGE`` record whose metadata names
its document (``qa_id``), its place (``chunk_index`` of ``chunk_count``) and how many leading
characters it repeats from the previous chunk (``overlap_chars``). At read time
:func:`rejoin` puts the hits of one document back together, in order, overlaps removed.

A ``qa_id`` names one document of a user: ingesting it again replaces it. The new chunks are
written and the old ones soft-deleted in one transaction (restorable, as every deleted
record, until purged). The same text and title again is the same document: nothing is
written, or, when the importance or tags changed, a new version of each chunk.

Writers of one ``qa_id`` at once end with one live version, the last to commit; every other
is stored, soft-deleted. The transaction that writes a version soft-deletes the chunks its
writer read, and fails if another writer deleted them first; when no version is live, it
reads the document's state again first, one such transaction of the document at a time
(``races.FirstVersion``: the first chunk has a random id), and fails if another writer
stored a chunk of it since the read. The loser reads again and replaces the winner.

An import brings a document's chunks as the file has them; a document that then has live
chunks of the store's own too keeps one version, the one written last, and the other's
are soft-deleted (:meth:`AsyncKnowledgeService.settle`, after taking the document's turn:
``races.take_turns``). Until session 31 both versions stayed live.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from memstrata._async.layers._build import build_record
from memstrata._async.layers.base import AsyncLayerContext
from memstrata._async.layers.races import (
    FirstVersion,
    NameRead,
    Raced,
    first_version,
    read_name,
    settle_names,
    settled,
)
from memstrata._async.store.base import AsyncUnitOfWork, RecordWrite
from memstrata.calls import checked_calls
from memstrata.errors import ConflictError, NotFoundError, QuotaExceededError, ValidationError
from memstrata.filters import Filters, MetadataCondition
from memstrata.layers.knowledge_types import document_chunks, rejoin
from memstrata.records import MemoryRecord, RecordStatus, RecordType, Source, new_id
from memstrata.scope import Scope
from memstrata.text import validate_content
from memstrata.validation import (
    check_id,
    check_record,
    check_record_items,
    check_tags,
    check_unit,
)
from memstrata.writes import check_owner, check_scope

if TYPE_CHECKING:
    from memstrata._async.audit import AsyncAuditLog
    from memstrata.audit_types import AuditEvent

__all__ = ["AsyncKnowledgeService", "rejoin"]


@checked_calls
class AsyncKnowledgeService:
    def __init__(self, ctx: AsyncLayerContext) -> None:
        self._ctx = ctx

    async def ingest(
        self,
        scope: Scope,
        text: str,
        qa_id: str | None = None,
        title: str | None = None,
        *,
        importance: float = 0.5,
        tags: Sequence[str] = (),
    ) -> list[MemoryRecord]:
        """Store ``text`` as chunks of one document; returns the chunk records in order.

        Under the ``qa_id`` of a stored document the text replaces it (see the module
        docstring); the same text and title again returns the stored chunks. New chunks are
        admitted under the quotas, all or none (the replaced ones count until purged)."""
        check_owner(scope)
        chunks = document_chunks(text, self._ctx.config)
        if qa_id is not None:
            check_id(qa_id, "qa_id")
        if title is not None:
            title = validate_content(title, field="title")
        check_unit(importance, "importance")
        tags = check_tags(tags)
        doc = qa_id or new_id()
        records = [
            build_record(
                self._ctx,
                scope,
                chunk.text,
                type=RecordType.KNOWLEDGE,
                importance=importance,
                source=Source.EXTERNAL_DATA,
                tags=tags,
                structured={},
                metadata={
                    "qa_id": doc,
                    "chunk_index": i,
                    "chunk_count": len(chunks),
                    "overlap_chars": chunk.overlap_chars,
                    "start_char": chunk.start,
                    **({"title": title} if title else {}),
                },
                summary=title,
            )
            for i, chunk in enumerate(chunks)
        ]
        if qa_id is None:  # a document nobody else can name: nothing to race with
            async with self._ctx.admit(scope, len(records)):
                await self._ctx.insert(records)
            return records
        # another writer's version landed first: this one replaces it
        return await settled(
            lambda: self._replace_document(scope, doc, records),
            f"document {doc!r} was written",
            "ingest",
        )

    async def _replace_document(
        self, scope: Scope, doc: str, records: list[MemoryRecord]
    ) -> list[MemoryRecord]:
        """Write ``records`` as the live version of ``doc``: one read and one transaction;
        ``Raced`` (nothing written) when another writer's version landed since the read."""
        stored = await self.chunks(scope, doc)
        if stored and [_layout(r) for r in stored] == [_layout(r) for r in records]:
            return await self._restate(scope, stored, records)
        first = None if stored else await self._first(scope, doc)
        records = [replace(records[0], id=first.id if first else new_id()), *records[1:]]
        try:
            async with self._ctx.admit(scope, len(records)):
                writes = await self._ctx.writes(records)
                async with self._ctx.store.transaction() as tx:
                    if first is not None:
                        await first.check(tx)  # before any write: another first version?
                    await tx.insert(writes)
                    ids = [r.id for r in stored]
                    gone = await tx.set_status(
                        scope.user_scope, ids, RecordStatus.DELETED, self._ctx.clock.now()
                    )
                    if len(gone) != len(ids):
                        raise Raced  # another writer replaced this version first
        except QuotaExceededError:
            if [r.id for r in await self.chunks(scope, doc)] != [r.id for r in stored]:
                raise Raced from None  # a refusal of a write the new state may not need
            raise
        return records

    async def _first(self, scope: Scope, doc: str) -> FirstVersion:
        """A version of ``doc`` when no version is live: its first chunk's random id, and
        what ``doc`` stored as read, which its transaction checks first
        (``races.first_version``): of writers that read the same state one writes its
        version and the others read again (``Raced``) and replace it."""
        return await first_version(
            self._ctx, scope.user_scope, RecordType.KNOWLEDGE, "qa_id", doc, "doc-"
        )

    async def _restate(
        self, scope: Scope, stored: Sequence[MemoryRecord], given: Sequence[MemoryRecord]
    ) -> list[MemoryRecord]:
        """The same document again: the stored chunks, each whose importance or tags the
        caller changed as its next version (no new record), all in one transaction (a crash
        leaves every chunk as it was or every one restated)."""
        now = self._ctx.clock.now()
        out: list[MemoryRecord] = []
        changed: list[tuple[RecordWrite, int]] = []  # (next version, version it follows)
        for old, new in zip(stored, given, strict=True):
            if (old.importance, old.tags) == (new.importance, new.tags):
                out.append(old)
                continue
            restated = replace(
                old,
                version=old.version + 1,
                updated_at=now,
                importance=new.importance,
                tags=new.tags,
            )
            write = await self._ctx.version_write(restated, reindex=False)
            changed.append((write, old.version))
            out.append(write.record)
        if changed:
            try:
                async with self._ctx.store.transaction() as tx:
                    for write, version in changed:
                        await tx.replace(scope.user_scope, write, expected_version=version)
            except (ConflictError, NotFoundError):
                raise Raced from None  # another writer changed a chunk: read them again
        return out

    async def restore(
        self,
        scope: Scope,
        chunk: MemoryRecord,
        *,
        audit: AsyncAuditLog | None = None,
        events: Sequence[AuditEvent] = (),
    ) -> MemoryRecord:
        """Restore the deleted chunk ``chunk`` (as read, deleted included) of a document;
        returns it as stored. When the document has a live version it is not part of
        (a live chunk of another ``chunk_count`` or at its ``chunk_index``: written while
        it was deleted), the version it was deleted with comes back whole (the document's
        chunks deleted at the same moment, of its ``chunk_count``: as the ingest that
        replaced it, or one delete, left them) and that live version is soft-deleted
        (restorable), in one transaction: one live version, the restored one. Otherwise
        only ``chunk`` comes back, as any restore. ``events`` (of ``audit``, as its
        ``ahead`` returned them) are appended in that transaction. Of restores at once
        into one place (one free index of the live version; or one into a free index and
        one of another version whole), the second to commit reads again and decides on
        what the first restored (``races.py``)."""
        check_owner(scope)
        check_record(chunk, "chunk")
        doc = chunk.metadata.get("qa_id")
        if chunk.type is not RecordType.KNOWLEDGE or not isinstance(doc, str):
            raise ValidationError(f"record {chunk.id!r} is no chunk of a document")
        return await settled(
            lambda: self._restore(scope, chunk.id, doc, audit, events),
            f"document {doc!r} was written",
            "restore",
        )

    async def _restore(
        self,
        scope: Scope,
        chunk_id: str,
        doc: str,
        audit: AsyncAuditLog | None,
        events: Sequence[AuditEvent],
    ) -> MemoryRecord:
        """One read (two when another version is live) and one transaction of
        :meth:`restore`; ``Raced`` when another writer changed a chunk since."""
        store = self._ctx.store
        user = scope.user_scope
        chunk = await store.get(scope, chunk_id, include_deleted=True)
        name = await read_name(self._ctx, user, RecordType.KNOWLEDGE, "qa_id", doc)
        live = [r for r in await self.chunks(scope, doc) if r.id != chunk_id]
        count, index = chunk.metadata.get("chunk_count"), chunk.metadata.get("chunk_index")
        other = chunk.is_active is False and any(
            r.metadata.get("chunk_count") != count or r.metadata.get("chunk_index") == index
            for r in live
        )
        back = [chunk_id]
        rivals: list[str] = []  # deleted chunks that would take a place this one decides on
        if other:  # the chunks deleted with it: its version
            deleted = await self._deleted(user, doc)
            back += [
                r.id
                for r in deleted
                if r.id != chunk_id
                and r.deleted_at == chunk.deleted_at
                and r.metadata.get("chunk_count") == count
            ]
            # one restored into a free index of the live version it ends would stay live
            slots = {_slot(r) for r in live}
            counts = {s[0] for s in slots}
            rivals = [
                r.id
                for r in deleted
                if r.id not in back and _slot(r)[0] in counts and _slot(r) not in slots
            ]
        elif live and not chunk.is_active:  # one restored into the same free index
            # (with no live version, a chunk made live since fails the name's check)
            at = [
                MetadataCondition("chunk_count", "eq", count),
                MetadataCondition("chunk_index", "eq", index),
            ]
            rivals = [r.id for r in await self._deleted(user, doc, at) if r.id != chunk_id]
        gone = [r.id for r in live] if other else []
        now = self._ctx.clock.now()
        async with store.transaction() as tx:
            # the document's turn: a version stored, or a chunk restored, since the read?
            await name.check(tx, live=bool(live) or chunk.is_active)
            if (await tx.get(scope, chunk_id, include_deleted=True)).version != chunk.version:
                raise Raced  # changed since the read
            if not other and not chunk.is_active:  # it joins the live version read
                await _unchanged(tx, user, live)
            await _still_deleted(tx, user, rivals)  # another restore took the place?
            restored = await tx.set_status(user, back, RecordStatus.ACTIVE, now)
            ended = await tx.set_status(user, gone, RecordStatus.DELETED, now)
            if len(ended) != len(gone) or len(restored) != (0 if chunk.is_active else len(back)):
                raise Raced  # another writer changed the document since the read
            if audit is not None:
                await audit.append_in(tx, events)
        return await store.get(scope, chunk_id, include_deleted=True)

    async def settle(self, records: Iterable[MemoryRecord], *, brought: Container[str]) -> None:
        """After ``records`` were stored as they are (an import; ``brought``: the ids of
        every record of the import): each document of a live chunk among them that also
        has live chunks of the store's own keeps one version, the one written last (the
        greatest ``created_at`` of the import's live chunks or of the store's: the store's
        on a tie), as an ingest's is the version written last; the other's live chunks are
        soft-deleted (restorable), in one transaction per document. A document whose live
        chunks are all the import's keeps them as the file has them. Each takes the
        document's turn first (``races.take_turns``), then reads its live chunks; the
        transaction checks the document again (``NameRead.check``) and that no other chunk
        of it was made live since (a restore into a free index)."""
        checked = check_record_items(records, "records")  # whole, before any write
        docs = (
            (r.scope.user_scope, r.metadata["qa_id"])
            for r in checked
            if r.type is RecordType.KNOWLEDGE
            and isinstance(r.metadata.get("qa_id"), str)
            and r.is_active
        )

        async def decide(scope: Scope, doc: str, turn: NameRead) -> None:
            live = await self.chunks(scope, doc)
            theirs = [r for r in live if r.id in brought]
            mine = [r for r in live if r.id not in brought]
            if not theirs or not mine:
                return  # one side's chunks only: the file's as it has them, or untouched
            newest = max(r.created_at for r in theirs) > max(r.created_at for r in mine)
            gone = [r.id for r in (mine if newest else theirs)]
            slots = {_slot(r) for r in live}
            counts = {c for c, _ in slots}
            rivals = [
                r.id
                for r in await self._deleted(scope, doc)
                if _slot(r)[0] in counts and _slot(r) not in slots
            ]
            async with self._ctx.store.transaction() as tx:
                await turn.check(tx, live=True)
                await _still_deleted(tx, scope, rivals)  # a restore into a free index?
                ended = await tx.set_status(
                    scope, gone, RecordStatus.DELETED, self._ctx.clock.now()
                )
                if len(ended) != len(gone):
                    raise Raced  # another writer changed the document since the read

        await settle_names(
            self._ctx, docs, RecordType.KNOWLEDGE, "qa_id", decide, "document {!r} was written"
        )

    async def _deleted(
        self, scope: Scope, doc: str, at: Sequence[MetadataCondition] = ()
    ) -> list[MemoryRecord]:
        """The deleted chunks of ``doc`` (every version it had; those whose metadata also
        matches ``at``), a page at a time."""
        filters = Filters(
            types=frozenset({RecordType.KNOWLEDGE}),
            metadata=(MetadataCondition("qa_id", "eq", doc), *at),
            include_deleted=True,
        )
        found: list[MemoryRecord] = []
        async for page in self._ctx.store.list_pages(scope, filters):
            found += [r for r in page if not r.is_active]
        return found

    async def chunks(self, scope: Scope, qa_id: str) -> list[MemoryRecord]:
        """The chunks of document ``qa_id`` in ``scope``'s user's memory, in order (none:
        no such document). Deleted chunks (a replaced version) are left out."""
        check_scope(scope)
        check_id(qa_id, "qa_id")
        filters = Filters(
            types=frozenset({RecordType.KNOWLEDGE}),
            metadata=(MetadataCondition("qa_id", "eq", qa_id),),
        )
        # one read by index (``list_pages`` reads on until a page comes back empty: two
        # statements for most documents); a long one (thousands of chunks) a page at a time.
        # Until session 32 the page walk also read every later chunk of the user on SQLite
        # (80,074 VM steps, 5-8 ms, with 5,000 documents): where.py now reads it by index.
        found = await self._ctx.store.list(scope.user_scope, filters, limit=_ONE_READ)
        if len(found) >= _ONE_READ:
            found = []
            async for page in self._ctx.store.list_pages(scope.user_scope, filters):
                found += page
        return sorted(found, key=lambda r: (int(r.metadata.get("chunk_index", 0)), r.created_at))


async def _unchanged(tx: AsyncUnitOfWork, scope: Scope, live: Sequence[MemoryRecord]) -> None:
    """``Raced`` unless each chunk of ``live`` is still live at the version read: a chunk
    restored into the live version must not join another version that a concurrent
    restore brought back in its place (the name's turn sees a live chunk either way)."""
    for r in live:
        try:
            now = await tx.get(scope, r.id)
        except NotFoundError:
            raise Raced from None  # deleted since: another version is live
        if now.version != r.version:
            raise Raced


async def _still_deleted(tx: AsyncUnitOfWork, scope: Scope, ids: Sequence[str]) -> None:
    """``Raced`` when a chunk of ``ids`` (deleted when a restore, or an import's settle,
    read them) is live now: another restore brought it back into a place this writer
    decided on (the same free index of the live version, or one of the version it ends),
    which neither the name's turn (no record inserted, a live document either way) nor
    the live chunks read show."""
    for rid in ids:
        try:
            if (await tx.get(scope, rid, include_deleted=True)).is_active:
                raise Raced
        except NotFoundError:
            continue  # purged since: it takes no place


def _slot(chunk: MemoryRecord) -> tuple[Any, Any]:
    """A chunk's place in its version: its ``chunk_count`` and ``chunk_index``."""
    return chunk.metadata.get("chunk_count"), chunk.metadata.get("chunk_index")


_ONE_READ = 1000  # a document's live chunks read at once (``chunks``)

# The metadata an ingest writes: with the text and the title, the document's layout.
_LAYOUT = ("qa_id", "chunk_index", "chunk_count", "overlap_chars", "start_char", "title")


def _layout(chunk: MemoryRecord) -> tuple[Any, ...]:
    """What makes a stored chunk the one an ingest would write (metadata a caller added
    later aside): a document whose chunks all match is the same document."""
    return (chunk.text, chunk.content.summary, [chunk.metadata.get(k) for k in _LAYOUT])
