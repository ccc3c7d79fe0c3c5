"""What every layer service gets: the store, providers, clock, the layer defaults and quotas.

A service admits the new records a caller's call writes under the memory's quotas
(:meth:`AsyncLayerContext.admit`); the services the library runs on its own (the ingest
pipeline, mid-term clustering, summaries) are built over :meth:`AsyncLayerContext.for_system`,
whose writes are counted in a user's usage but never refused.

Layer services never talk to each other directly: the ingest pipeline calls each one's
``on_messages`` / ``on_session_end`` from a background job, and ``build_context`` asks each
for its block. Pure rules (thresholds, formulas, conflict resolution) live in functions
beside each service so they are tested without a store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import BaseModel

from memstrata._async.embedder.base import AsyncEmbedder
from memstrata._async.llm.base import AsyncLLM
from memstrata._async.search.reply_terms import kept_terms
from memstrata._async.store.base import AsyncStore, RecordWrite
from memstrata.clock import Clock
from memstrata.layers.types import LayerConfig
from memstrata.policies.pii import PIIRedactor
from memstrata.quota_types import Admission, Quotas
from memstrata.records import MemoryRecord, RecordType
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize

if TYPE_CHECKING:
    from memstrata._async.audit import AsyncAuditLog
    from memstrata._async.quotas import AsyncQuotasInUse

__all__ = ["AsyncIngestStep", "AsyncLayerContext", "LayerConfig", "no_audit", "unlimited"]

_Model = TypeVar("_Model", bound=BaseModel)


def unlimited() -> Quotas | None:
    """No quotas: what a context admits when nobody gave it any."""
    return None


def no_audit() -> AsyncAuditLog | None:
    """No audit log: what a context records in when nobody gave it one."""
    return None


@dataclass(frozen=True, slots=True)
class AsyncLayerContext:
    store: AsyncStore
    embedder: AsyncEmbedder  # already cached: texts seen before cost nothing
    llm: AsyncLLM
    clock: Clock
    config: LayerConfig
    pii: PIIRedactor | None = None  # Memory(pii=...): applied to every record written here
    # Memory(quotas=...) as it is when a write runs: read at each write, so a quota that
    # Memory.set_quota sets after the services were built applies to them too.
    quotas: Callable[[], Quotas | None] = unlimited
    # Memory's audit log, read when an event is written (None: a context built without
    # one, as in tests): a fact's next value that inherits its sharing records it there.
    audit: Callable[[], AsyncAuditLog | None] = no_audit
    # Whether the store's quotas are in use (a process with quotas opened it): a write
    # without quotas then counts its embeddings all the same (session 32), and so does what
    # the library derives (for_system, session 33). None: counts nothing without quotas (a
    # context in tests).
    in_use: AsyncQuotasInUse | None = None

    def admit(
        self, scope: Scope, n: int, now: datetime | None = None, *, may_merge: bool = False
    ) -> AbstractAsyncContextManager[Admission]:
        """Admit ``n`` new records for ``scope``'s user (counted on the day of ``now``, by
        default the clock's), or raise ``QuotaExceededError``: run the embedding and the
        writes inside the block, so the check, the count and the write are one step across
        processes (:func:`memstrata.quotas.admit_writes`; ``mem.add`` admits through it
        too). Without quotas nothing is refused: the embeddings are counted with no limit
        when the store's quotas are in use (:func:`memstrata.quotas.count_embeddings`), so
        a quota of another process sees them. Nothing for ``n <= 0``.

        ``may_merge``: the block may write no record after all (a dedup merge); over a
        full records quota it still runs, and :meth:`Admission.records` raises the refusal
        before it would write one."""
        quotas, in_use = self.quotas(), self.in_use
        if n <= 0 or (quotas is None and in_use is None):
            return nullcontext(Admission())
        from memstrata._async import quotas as _quotas

        now = now or self.clock.now()
        if quotas is None:  # in_use is not None
            return _quotas.count_embeddings(self.store, in_use, scope, n, now)
        if in_use is not None and not in_use.marked:  # quotas set after the store opened
            return _quotas.admit_marked(
                in_use, self.store, quotas, scope, n, now, may_merge=may_merge
            )
        return _quotas.admit_writes(self.store, quotas, scope, n, now, may_merge=may_merge)

    def for_system(self) -> AsyncLayerContext:
        """This context for what the library derives on its own (summaries, clusters, facts
        extracted from turns, conversation episodes, the key entries clusters promote):
        those records count in a user's records usage like any other, but are never
        refused, so nothing derived is lost over a quota (a refused background job would
        lose derived data or loop on retries). The embeddings they need of their own (a
        fact, an episode, a key entry: one each) are counted in ``embeddings_per_day`` with
        no limit, by whichever process writes them (``serve``, a ``memstrata worker``, a
        ``Memory`` without quotas) once the store's quotas are in use
        (:func:`memstrata.quotas.count_embeddings`, in the write's transaction): visible in
        the usage, and the caller's next write is refused instead (session 33; before,
        no process counted them). A summary's or a cluster's vector is the mean of its
        turns' vectors, embedded (and counted) when the turns were added: no new embedding."""
        return replace(self, quotas=unlimited)

    def embedder_for(self, scope: Scope) -> AsyncEmbedder:
        """The embedder whose cache entries belong to ``scope``'s user (purged with them);
        use it wherever the scope is known."""
        for_scope = getattr(self.embedder, "for_scope", None)
        return self.embedder if for_scope is None else for_scope(scope)

    def redact(self, record: MemoryRecord) -> MemoryRecord:
        """``record`` with its tenant's PII replaced (text, summary, structured strings);
        the same object when there is nothing to replace or no policy."""
        return record if self.pii is None else self.pii.redact_record(record)

    def redact_query(self, scope: Scope, query: str) -> str:
        """A search or context query as its tenant's policy says it may be embedded, cached
        and matched: with redaction on, ``[EMAIL_1]`` instead of the address."""
        return query if self.pii is None else self.pii.redact_query(scope.tenant, query)

    def redact_fields(self, scope: Scope, model: _Model, *fields: str) -> _Model:
        """A pydantic value (an extracted fact) with these string fields redacted, so the
        conflict rules compare it with what was stored."""
        if self.pii is None:
            return model
        update = {
            f: self.redact_query(scope, v)
            for f in fields
            if isinstance(v := getattr(model, f), str)
        }
        return model.model_copy(update=update)

    async def writes(self, records: Sequence[MemoryRecord]) -> list[RecordWrite]:
        """Index entries (vector + lexical terms) for records, embedded in one batch per
        user (each user's cache entries are their own). Every record is redacted first
        (:meth:`redact`): nothing reaches the embedder, the index or the store in clear."""
        if not records:
            return []
        records = [self.redact(r) for r in records]
        by_user: dict[tuple[str, str], list[int]] = {}
        for i, r in enumerate(records):
            by_user.setdefault((r.tenant, r.user), []).append(i)
        vectors: dict[int, Any] = {}
        for (tenant, user), positions in by_user.items():
            embedded = await self.embedder_for(Scope(tenant, user)).embed_batch(
                [records[i].text for i in positions]
            )
            vectors.update({i: embedded[n] for n, i in enumerate(positions)})
        return [RecordWrite(r, vectors[i], tuple(tokenize(r.text))) for i, r in enumerate(records)]

    async def write_with(self, record: MemoryRecord, vector: Any) -> RecordWrite:
        """An index entry whose vector the caller computed (a summary's mean of its turns);
        the record is redacted, and embedded again only if redaction changed its text
        (:meth:`reembeds`: the caller counts that embedding, session 34)."""
        redacted = self.redact(record)
        if redacted.text != record.text:
            return (await self.writes([redacted]))[0]
        return RecordWrite(redacted, vector, tuple(tokenize(redacted.text)))

    def reembeds(self, record: MemoryRecord) -> int:
        """How many embeddings :meth:`write_with` makes for ``record``: 1 when redaction
        changes its text (its computed vector would index words it no longer has), else
        0. A caller admits them around its write (``admit``: over :meth:`for_system`,
        counted in ``embeddings_per_day`` with no limit, never refused)."""
        return int(self.redact(record).text != record.text)

    async def insert(self, records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
        """Store new records; returns them as stored (redacted)."""
        if not records:
            return []
        writes = await self.writes(records)
        await self.store.insert(writes)
        return [w.record for w in writes]

    async def replace(
        self, scope: Scope, record: MemoryRecord, *, expected_version: int, reindex: bool = True
    ) -> MemoryRecord:
        """Store ``record`` as the next version; ``reindex`` re-embeds its (changed) text
        (forced when redaction changed it). Returns the version as stored."""
        write = await self.version_write(record, reindex=reindex)
        await self.store.replace(scope, write, expected_version=expected_version)
        return write.record

    async def version_write(self, record: MemoryRecord, *, reindex: bool) -> RecordWrite:
        """What :meth:`replace` stores for ``record``, for a caller that writes it inside
        its own transaction: redacted, re-embedded only when ``reindex`` (or redaction
        changed its text)."""
        redacted = self.redact(record)
        if reindex or redacted.text != record.text:
            write = (await self.writes([redacted]))[0]
            if write.record.type is not RecordType.MESSAGE:
                return write
            # a reply corrected still answers the question before it (until session 27 its
            # new version was indexed under its own words only)
            return replace(write, terms=await kept_terms(self.store, write.record))
        # the text is kept: so are the question terms a reply was indexed under
        return RecordWrite(redacted, None, await kept_terms(self.store, redacted))


class AsyncIngestStep(Protocol):
    """A layer's reaction to new turns and to the end of a session (run in background jobs;
    must be idempotent: a job may run twice after a crash)."""

    name: str

    async def on_messages(self, scope: Scope, messages: Sequence[MemoryRecord]) -> None: ...

    async def on_session_end(self, scope: Scope) -> None: ...
