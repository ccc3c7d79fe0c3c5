"""``Memory``: the one entry point. Picks its store from a URL, its providers from arguments.

Everything here is orchestration; scoring, fusion, record construction and validation are
pure functions in their own modules, which the sync and the async memory share.
"""

from __future__ import annotations

import asyncio  # async-only
import builtins
import logging
import math
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, nullcontext
from dataclasses import replace
from datetime import datetime, timedelta
from typing import IO, TYPE_CHECKING, Any, cast

# What opening a store and reading or searching it needs. The layer services, the LLM, the
# job machinery, maintenance, context assembly and import/export are imported where they are
# used, and built on first use (``Memory.__getattr__``): `memstrata search` never loads them
# (nor pydantic, which the LLM's output models need).
from memstrata._async.embedder.base import AsyncEmbedder
from memstrata._async.embedder.cache import AsyncCachedEmbedder
from memstrata._async.search.hybrid import search as hybrid_search
from memstrata._async.store.base import AsyncStore
from memstrata._async.store.caller_view import AsyncCallerViewStore
from memstrata.aio.core_lifecycle import AsyncLifecycle, completes  # async-only
from memstrata.aio.providers import closer, make_async_embedder, resolve_dims  # async-only
from memstrata.aio.stores import open_store  # async-only
from memstrata.audit_types import PURGED, AuditEvent, names_user
from memstrata.calls import checked_calls
from memstrata.clock import Clock, SystemClock, utc_clock
from memstrata.errors import (
    BudgetError,
    EmbeddingMismatchError,
    ValidationError,
    export_write_failed,
)
from memstrata.filters import Filters
from memstrata.jobs import unfenced
from memstrata.memory_types import DEFAULT_ROLES, MAX_TOKEN_BUDGET, Remembered
from memstrata.quota_types import Quotas
from memstrata.records import (
    AccessControl,
    MemoryRecord,
    Message,
    RecordStatus,
    RecordType,
    Role,
    Source,
    Visibility,
)
from memstrata.scope import Scope
from memstrata.search.config import SearchConfig
from memstrata.search.hit import SearchHit, types_of_layers
from memstrata.store import one_model
from memstrata.store.compaction import CompactReport
from memstrata.store.types import PurgeReport, RecordWrite, Vector
from memstrata.store.url import redact_url
from memstrata.store.vector_bound import check_vector_cache_rows
from memstrata.text import DEFAULT_MAX_CHARS, content_hash, validate_content
from memstrata.validation import (
    MAX_COUNT,
    check_bool,
    check_enum,
    check_id,
    check_ids,
    check_int,
    check_metadata,
    check_names,
    check_number,
    check_ratio,
    check_read_version,
    check_sequence,
    check_tags,
    check_text,
    check_text_sink,
    check_text_source,
    check_time,
    check_unit,
)
from memstrata.writes import (
    check_owner,
    check_scope,
    message_record,
    note_record,
    to_message,
)

# sync: from memstrata.embedder.factory import make_embedder
# sync: from memstrata.store.url import open_store

if TYPE_CHECKING:
    from memstrata._async import quotas as _quotas
    from memstrata._async.audit import AsyncAuditLog
    from memstrata._async.context.sources import AsyncLayerSources
    from memstrata._async.layers.base import AsyncLayerContext
    from memstrata._async.layers.episodic import AsyncEpisodeService
    from memstrata._async.layers.key import AsyncKeyMemoryService
    from memstrata._async.layers.knowledge import AsyncKnowledgeService
    from memstrata._async.layers.procedural import AsyncProceduralService
    from memstrata._async.layers.semantic import AsyncFactService
    from memstrata._async.layers.stack import AsyncLayerStack
    from memstrata._async.layers.working import AsyncTaskService
    from memstrata._async.llm.base import AsyncLLM
    from memstrata._async.worker import AsyncBackgroundWorker, AsyncJobRunner
    from memstrata.context.assemble import AssembledContext
    from memstrata.context.config import ContextConfig
    from memstrata.jobs import Job
    from memstrata.layers.base import LayerConfig
    from memstrata.maintenance_types import LogEntry, MaintenanceReport, Retention
    from memstrata.policies.forgetting import ForgettingPolicy
    from memstrata.policies.pii import PIIPolicy, PIIRedactor
    from memstrata.portability import Continued, Entry, ImportReport, PageSpool
    from memstrata.tokens import TokenCounter
    from memstrata.worker_types import RunReport

    # a write of an import, with the record's earlier versions
    Written = tuple[RecordWrite, tuple[MemoryRecord, ...]]
    # what a page of an import's writes holds: writes, and parts of a long history
    WrittenEntry = Written | Continued

__all__ = ["DEFAULT_ROLES", "AsyncMemory", "Remembered"]

_log = logging.getLogger("memstrata.audit")


def _dated(
    records: Sequence[MemoryRecord], writes: Sequence[RecordWrite]
) -> builtins.list[MemoryRecord]:
    """``records`` with the times their writes were given (a turn without ``observed_at``
    dated after its session's newest, :func:`~memstrata.search.reply_terms.index_replies`)."""
    return [
        r if r.observed_at == w.record.observed_at else replace(r, observed_at=w.record.observed_at)
        for r, w in zip(records, writes, strict=True)
    ]


def _roles(roles: Iterable[str]) -> frozenset[str]:
    # checked as set_access checks allowed_roles (a role declared here can be granted: a
    # NUL passed here and was refused there), and read once (a generator was read twice,
    # so its roles were checked and then lost)
    return frozenset(check_ids(roles, "roles"))


def _access_control(
    current: AccessControl,
    visibility: Visibility | str | None,
    users: Sequence[str] | None,
    roles: Sequence[str] | None,
    known: frozenset[str],
) -> AccessControl:
    # checked as an import checks them: ids without NUL, valid UTF-8
    users = None if users is None else check_ids(users, "allowed_users")
    roles = None if roles is None else check_ids(roles, "allowed_roles")
    unknown = sorted(set(roles or ()) - known)
    if unknown:
        raise ValidationError(
            f"unknown role(s) {unknown}; declare them with "
            f"Memory(roles=...) (known: {sorted(known)})"
        )
    return AccessControl(
        visibility=current.visibility if visibility is None else visibility,  # type: ignore[arg-type]
        allowed_users=current.allowed_users if users is None else tuple(dict.fromkeys(users)),
        allowed_roles=current.allowed_roles if roles is None else tuple(dict.fromkeys(roles)),
    )


_META_MODEL = one_model.MODEL_KEY
_META_DIMS = one_model.DIMS_KEY
_META_REEMBED_TO = one_model.NEXT_KEY  # "model\tdims" while a migration runs, then ""
# Attributes of Memory built on first use (Memory._build).
_BUILT_ON_FIRST_USE = frozenset(
    {"audit", "layers", "retention", "context_config", "_llm", "_ctx", "_runner", "_sources"}
)


@checked_calls
# sync: class Memory:
class AsyncMemory(AsyncLifecycle):  # async-only
    """Layered long-term memory for one application (any number of tenants and users).

    >>> mem = Memory("sqlite:///memory.db")                      # or "memory://"
    >>> alice = Scope(tenant="acme", user="alice", session="s1")
    >>> mem.add_message(alice, "user", "I moved to Lisbon last week")
    >>> mem.search(alice.user_scope, "where does she live?")

    ``buffer="redis://host:6379/0"`` puts the hot state (recent turns, embedding cache) in
    Redis in front of the store (write-through; see :mod:`memstrata.store.redis_hot`).

    ``vector_cache_rows`` bounds the rows of users' vector matrices the SQLite or PostgreSQL
    store keeps in this process for searches (default 500,000: ~0.75 GB at 384 dimensions,
    ~3 GB at 1,536); the least recently searched users are dropped past it and read again
    at their next search. ``memory://`` has no such cache and ignores it.
    """

    def __init__(
        self,
        url: str = "memory://",
        *,
        embedder: str | AsyncEmbedder | None = None,
        llm: str | AsyncLLM | None = None,
        clock: Clock | None = None,
        search_config: SearchConfig | None = None,
        max_content_chars: int = DEFAULT_MAX_CHARS,
        store: AsyncStore | None = None,
        reembed: bool = False,
        layer_config: LayerConfig | None = None,
        background: bool = True,
        token_counter: TokenCounter | None = None,
        pii: PIIRedactor | PIIPolicy | str | None = None,
        maintenance_every: timedelta | None = None,
        retention: Retention | None = None,
        roles: Iterable[str] = DEFAULT_ROLES,
        quotas: _quotas.Quotas | None = None,
        buffer: str | None = None,
        vector_cache_rows: int | None = None,
    ) -> None:
        if vector_cache_rows is not None:  # checked before anything is opened
            vector_cache_rows = check_vector_cache_rows(vector_cache_rows)
            if store is not None:
                raise ValidationError(
                    "vector_cache_rows bounds the store Memory opens from its URL, not a store "
                    "it is given: set it on that store (SQLiteStore(path, vector_cache_rows=...)"
                    ", PostgresStore(url, vector_cache_rows=...)) and leave it out here"
                )
        self.roles = _roles(roles)
        if quotas is not None and not isinstance(quotas, Quotas):
            raise ValidationError("quotas must be a memstrata.quotas.Quotas")
        self.quotas = quotas
        self._pii: PIIRedactor | None = None
        if pii is not None:  # validated before the store is opened
            from memstrata.policies.pii import PIIRedactor

            self._pii = PIIRedactor.of(pii)
        self._maintenance_every: timedelta | None = None
        if maintenance_every is not None:
            from memstrata.maintenance_types import check_interval

            self._maintenance_every = check_interval(maintenance_every)
        if retention is not None:  # otherwise Retention() on first use (__getattr__)
            from memstrata.maintenance_types import Retention

            if not isinstance(retention, Retention):
                raise ValidationError(
                    f"retention must be a memstrata Retention, got {type(retention).__name__}"
                )
            self.retention = retention
        if clock is not None and not callable(getattr(clock, "now", None)):
            raise ValidationError(
                f"clock must be a memstrata Clock (SystemClock, FixedClock), got "
                f"{type(clock).__name__}"
            )
        if search_config is not None and not isinstance(search_config, SearchConfig):
            raise ValidationError("search_config must be a memstrata.SearchConfig")
        check_bool(background, "background")
        check_bool(reembed, "reembed")
        self._clock = utc_clock(clock) if clock is not None else SystemClock()
        self.search_config = search_config or SearchConfig()
        self.max_content_chars = check_int(max_content_chars, "max_content_chars", low=1)
        self._layer_config = layer_config
        self._build_lock = threading.Lock()
        self._count = token_counter  # None: estimate_tokens (tokens.py), in build_context
        self._worker: AsyncBackgroundWorker | None = None
        # What _open() needs: the sync memory opens in its constructor, the async one when
        # its open() is awaited (or its context entered).
        self._opening = (url, embedder, llm, store, reembed, background, buffer, vector_cache_rows)
        self._opened = False
        self._owned = []  # async-only
        self._closed = False  # async-only
        self._running = set()  # async-only
        # sync: self._open()

    async def _open(self) -> AsyncMemory:
        """Open the store, the providers and the background worker, once (the sync memory's
        constructor calls it; an async memory's ``open()`` or context entry). A store built
        with another embedding model is refused here."""
        if self._opened:
            return self
        url, embedder, llm, store, reembed, background, buffer, cache_rows = self._opening
        # Redis for hot state (recent turns, embedding cache): connected before the store is
        # opened, so a Redis refusing connections fails before anything is written.
        hot = prefix = None
        if buffer is not None:
            from memstrata._async.store.redis_hot import (
                AsyncRedisHotStore,
                buffer_prefix,
                open_redis,
            )

            hot = await open_redis(buffer)
            prefix = buffer_prefix(buffer)
        try:
            self._store = (
                store if store is not None else await open_store(url, vector_cache_rows=cache_rows)
            )
        except BaseException:
            if hot is not None:
                await hot.aclose()
            raise
        if hot is not None:
            self._store = cast(
                AsyncStore, AsyncRedisHotStore(self._store, hot, prefix=prefix or "")
            )
        # What every read goes through: a caller is shown its view of a record (caller_view)
        self._reads = cast(AsyncStore, AsyncCallerViewStore(self._store))
        try:
            self._raw_embedder = make_async_embedder(embedder)
            self._owned.append(closer(embedder, self._raw_embedder))  # async-only
            self._embedder = AsyncCachedEmbedder(self._raw_embedder, self._store)
            if llm is not None:  # a spec is checked now; the default heuristic on first use
                from memstrata.aio.providers import make_async_llm  # async-only
                # sync: from memstrata.llm.factory import make_llm

                self._llm = make_async_llm(llm)
                self._owned.append(closer(llm, self._llm))  # async-only
            await resolve_dims(self._raw_embedder)  # async-only
            await self._check_embedding_model(reembed=reembed)
            if self.quotas is not None:  # from now on a process without quotas counts too
                await self._mark_quotas_in_use()
        except BaseException:
            await self._store.aclose()
            raise
        self._opened = True
        if background:
            from memstrata._async.worker import AsyncBackgroundWorker

            self._worker = AsyncBackgroundWorker(self._runner)
        return self

    # --- built on first use ---------------------------------------------------------------
    # The layer services, their context, the job runner and the context sources (and the
    # default LLM, the default retention and the audit log) are built when first used: a
    # reader that only searches or lists (`memstrata search`) never imports them. With the
    # background worker on they are built by the constructor.
    audit: AsyncAuditLog  # what delete, restore, purge and maintenance did (audit.py)
    layers: AsyncLayerStack
    retention: Retention
    context_config: ContextConfig  # build_context's levers (context/config.py)
    _llm: AsyncLLM
    _ctx: AsyncLayerContext
    _runner: AsyncJobRunner
    _sources: AsyncLayerSources

    if not TYPE_CHECKING:  # mypy checks the attributes declared above, not this hook

        def __getattr__(self, name: str) -> Any:
            if name not in _BUILT_ON_FIRST_USE or "_build_lock" not in self.__dict__:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            self._build(name)
            return self.__dict__[name]

    def _build(self, name: str) -> None:
        with self._build_lock:
            if name in self.__dict__:  # another thread built it meanwhile
                return
            if name == "retention":
                from memstrata.maintenance_types import Retention

                self.retention = Retention()
                return
            if name == "audit":
                from memstrata._async.audit import AsyncAuditLog
                from memstrata.aio.core_audit import audit_store  # async-only
                # sync: from memstrata.audit import audit_store

                store = getattr(self._store, "durable", self._store)
                self.audit = AsyncAuditLog(audit_store(store), self._clock, self._pii)
                return
            if name == "context_config":
                from memstrata.context.config import ContextConfig

                self.context_config = ContextConfig()
                return
            if name == "_llm":
                from memstrata.aio.providers import make_async_llm  # async-only
                # sync: from memstrata.llm.factory import make_llm

                self._llm = make_async_llm(None)
                return
            from memstrata._async.context.sources import AsyncLayerSources
            from memstrata._async.layers.base import AsyncLayerContext
            from memstrata._async.layers.stack import AsyncLayerStack
            from memstrata._async.policies.importance import refine_handler
            from memstrata._async.quotas import AsyncQuotasInUse
            from memstrata._async.worker import AsyncJobRunner
            from memstrata.layers.base import LayerConfig
            from memstrata.maintenance_types import MAINTAIN
            from memstrata.policies.importance import REFINE_IMPORTANCE

            llm = self.__dict__.get("_llm")
            if llm is None:
                from memstrata.aio.providers import make_async_llm  # async-only
                # sync: from memstrata.llm.factory import make_llm

                llm = make_async_llm(None)
            ctx = AsyncLayerContext(
                self._reads,
                self._embedder,
                llm,
                self._clock,
                self._layer_config or LayerConfig(),
                self._pii,
                lambda: self.quotas,  # as set_quota leaves it: the services admit under it
                lambda: self.audit,
                AsyncQuotasInUse(self._store),  # without quotas: counted once they are in use
            )
            layers = AsyncLayerStack.build(ctx)
            handlers = {
                **layers.handlers(),
                REFINE_IMPORTANCE: refine_handler(ctx),
                MAINTAIN: self._run_maintain_job,
            }
            runner = AsyncJobRunner(self._store, handlers, self._clock)  # type: ignore[arg-type]
            sources = AsyncLayerSources(layers, self._search_for_context, self._ranked_for_context)
            self.__dict__.update(
                _llm=llm, _ctx=ctx, layers=layers, _runner=runner, _sources=sources
            )

    # --- layer namespaces ----------------------------------------------------------------
    @property
    def key(self) -> AsyncKeyMemoryService:
        """Key memory: ``mem.key.set(scope, text, priority)``, ``edit``, ``remove``, ``list``."""
        self._usable()  # async-only
        return self.layers.key

    @property
    def tasks(self) -> AsyncTaskService:
        """Working memory: ``mem.tasks.start(scope, goal, steps)``, ``update_step``, ..."""
        self._usable()  # async-only
        return self.layers.tasks

    @property
    def facts(self) -> AsyncFactService:
        """Profile facts: ``mem.facts.upsert``, ``get(scope, key)``, ``relevant``, ``history``."""
        self._usable()  # async-only
        return self.layers.facts

    @property
    def episodes(self) -> AsyncEpisodeService:
        self._usable()  # async-only
        return self.layers.episodes

    @property
    def knowledge(self) -> AsyncKnowledgeService:
        """Documents: ``mem.knowledge.ingest(scope, text, qa_id=...)`` (chunked)."""
        self._usable()  # async-only
        return self.layers.knowledge

    @property
    def procedures(self) -> AsyncProceduralService:
        self._usable()  # async-only
        return self.layers.procedures

    # --- lifecycle ---------------------------------------------------------------------
    async def aclose(self) -> None:
        """Stop the background worker (after its current job) and close the store; jobs
        still queued stay in the store and run at the next start, flush or worker."""
        # run once, as a task of its own, to its end if cancelled (a 2nd aclose waits)  # async-only
        if not self._shutting_here():  # async-only
            return await self._closing(self.aclose)  # async-only
        if not self._opened:  # async-only
            return  # async-only
        await self._finish_started()  # async-only
        if self._worker is not None:
            await self._worker.stop()
        runner = self.__dict__.get("_runner")  # never built: nothing to stop
        if runner is not None:
            await runner.aclose()
        await self._store.aclose()
        self._opened = False  # async-only
        for close in self._owned:  # async-only
            await close()  # async-only

    close = aclose  # async-only

    async def __aenter__(self) -> AsyncMemory:
        await self._ready()  # async-only
        return await self._open()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def store(self) -> AsyncStore:
        return self._store

    @property
    def embedder(self) -> AsyncEmbedder:
        return self._raw_embedder

    @property
    def llm(self) -> AsyncLLM:
        return self._llm

    @property
    def clock(self) -> Clock:
        return self._clock

    async def _mark_quotas_in_use(self) -> None:
        """Say in the store that a process enforces quotas on it, so that every process
        without quotas counts its writes' embeddings too (session 32; quotas.py)."""
        in_use = self._ctx.in_use
        if in_use is not None:
            await in_use.mark()

    async def _check_embedding_model(self, *, reembed: bool) -> None:
        """The store remembers the model its vectors came from; mixing two is refused.

        ``reembed=True`` migrates instead: every record is embedded again with this
        Memory's embedder (texts already in the cache for the new model are not)."""
        model, dims = self._raw_embedder.model_id, self._raw_embedder.dims
        stored = await self._store.get_meta(_META_MODEL)
        stored_dims = await self._store.get_meta(_META_DIMS)
        # A migration killed half way left vectors of two models (reembed.migrate_model).
        unfinished = await self._store.get_meta(_META_REEMBED_TO)
        moved = one_model.holds_another(stored, stored_dims, model, dims)
        if reembed and (moved or unfinished):
            from memstrata._async.reembed import migrate_model

            await migrate_model(self._store, self._embedder)
            return
        if unfinished:
            to_model, _, to_dims = unfinished.partition("\t")
            raise EmbeddingMismatchError(
                f"a re-embedding of this store to {to_model!r} ({to_dims} dims) was "
                "interrupted: its records hold vectors of two models, and a search would miss "
                "those of the other one. Finish it: `memstrata reembed --embedder ...` or "
                "Memory(..., reembed=True) with that embedder (or with the store's former one "
                "to go back)"
            )
        if stored is None:
            # Dims before the model: another process opening the same new store reads the
            # model first, so once it sees a model it also sees its dims.
            await self._store.set_meta(_META_DIMS, str(dims))
            await self._store.set_meta(_META_MODEL, model)
            return
        if moved:
            raise EmbeddingMismatchError(
                f"this store was built with embedding model {stored!r} ({stored_dims} dims) but "
                f"was opened with {model!r} ({dims} dims): open it with the same embedder, or "
                f"migrate it with `memstrata reembed --embedder ...` or Memory(..., reembed=True)"
            )

    # --- writing -----------------------------------------------------------------------
    async def add_message(
        self,
        scope: Scope,
        role: Role | str,
        content: str,
        *,
        observed_at: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> MemoryRecord:
        """Store one conversational turn (synchronously embedded and indexed)."""
        await self._ready()  # async-only
        msg = Message(
            role=role,  # type: ignore[arg-type]
            content=content,
            observed_at=observed_at,
            metadata=metadata if metadata is not None else {},
        )
        return (await self.add_messages(scope, [msg]))[0]

    async def add_messages(
        self, scope: Scope, messages: Sequence[Message]
    ) -> builtins.list[MemoryRecord]:
        """Store many turns in one embedding call and one transaction (all or nothing)."""
        await self._ready()  # async-only
        check_owner(scope)
        now = self._clock.now()
        records = self._turn_records(scope, messages, now)
        if records:
            # Quotas: checked and counted before anything is embedded, atomically with the
            # write across processes (nothing counted if the write fails).
            async with self._ctx.admit(scope, len(records), now):
                # The turns, their index entries and their ingest job commit together: a
                # crash can never leave a message that no job will process.
                writes, again, job = await self._turn_writes(scope, records, now, messages)
                records = _dated(records, writes)
                async with self._store.transaction() as tx:
                    await tx.append_turns(writes)
                    if again:  # a stored turn now listed after a new one
                        await tx.reterm(scope, again)
                    await tx.enqueue([job])
            self._wake()
        return records

    def _turn_records(
        self, scope: Scope, messages: Sequence[Message], now: datetime
    ) -> builtins.list[MemoryRecord]:
        checked = check_sequence(messages, "messages")
        records: builtins.list[MemoryRecord] = []
        for i, m in enumerate(checked):
            try:
                records.append(
                    message_record(
                        scope,
                        self._redact_message(scope, to_message(m, i)),
                        now=now,
                        model_id=self._raw_embedder.model_id,
                        dims=self._raw_embedder.dims,
                        max_chars=self.max_content_chars,
                    )
                )
            except ValidationError as exc:
                if len(checked) == 1 or str(exc).startswith("messages["):
                    raise
                # which turn of the batch (it said "content holds a NUL character" of one
                # of 1,000 turns, without saying which)
                raise type(exc)(
                    f"messages[{i}]: {exc} (nothing of the {len(checked)} turns was written)"
                ) from None
        return records

    async def _turn_writes(
        self,
        scope: Scope,
        records: Sequence[MemoryRecord],
        now: datetime,
        messages: Sequence[Message],
    ) -> tuple[builtins.list[RecordWrite], dict[str, tuple[str, ...]], Job]:
        """What ``add_messages`` writes for ``records``: their index entries, the new terms
        of stored turns (``store.reterm``) and one job. A turn of ``messages`` given no
        ``observed_at`` is dated after the session's newest turn (session 31: a wall clock
        set back does not list it first)."""
        from memstrata._async.search.reply_terms import index_replies
        from memstrata.layers.pipeline import make_ingest_job

        clocked = [to_message(m, i).observed_at is None for i, m in enumerate(messages)]
        # A reply is also indexed under the question it answers (search/reply_terms).
        writes, again = await index_replies(
            self._store, scope, await self._ctx.writes(records), clocked
        )
        return writes, again, make_ingest_job(scope, [r.id for r in records], now)

    async def _bulk_add_messages(
        self, batches: Sequence[tuple[Scope, Sequence[Message]]]
    ) -> builtins.list[MemoryRecord]:
        """For bulk loaders (``memstrata bench scale`` at 1M records): exactly what
        ``add_messages`` writes for each ``(scope, messages)`` batch (the turns, their index
        entries, one ingest job per batch), all batches in one transaction. No quotas are
        taken and no worker is woken (the jobs stay queued)."""
        await self._ready()  # async-only
        now = self._clock.now()
        records: builtins.list[MemoryRecord] = []
        writes: builtins.list[RecordWrite] = []
        jobs: builtins.list[Job] = []
        again: builtins.list[tuple[Scope, dict[str, tuple[str, ...]]]] = []
        for scope, messages in batches:
            check_owner(scope)
            mine = self._turn_records(scope, messages, now)
            if mine:
                more, terms, job = await self._turn_writes(scope, mine, now, messages)
                records += _dated(mine, more)
                writes += more
                jobs.append(job)
                again += [(scope, terms)] if terms else []
        if records:
            async with self._store.transaction() as tx:
                await tx.append_turns(writes)
                for scope, terms in again:
                    await tx.reterm(scope, terms)
                await tx.enqueue(jobs)
        return records

    @completes  # async-only
    async def end_session(self, scope: Scope) -> RunReport:
        """Close a session: its final summary, conversation episode and clustering run now
        (with any of the session's jobs still queued)."""
        await self._ready()  # async-only
        from memstrata.layers.pipeline import make_session_end_job

        check_owner(scope)
        await self._store.enqueue([make_session_end_job(scope, self._clock.now())])
        await self._schedule_maintenance(scope)
        return await self.flush(scope)

    def _wake(self) -> None:
        if self._worker is not None:
            self._worker.wake()

    async def add(
        self,
        scope: Scope,
        content: str,
        *,
        type: RecordType | str = RecordType.NOTE,
        importance: float | None = None,
        confidence: float = 1.0,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        source: Source | str = Source.EXPLICIT_USER_INPUT,
        observed_at: datetime | None = None,
        visibility: Visibility | str | None = None,
        source_ids: Sequence[str] = (),
        dedup: bool = True,
    ) -> MemoryRecord:
        """Store a memory directly.

        With ``dedup`` (default) a record of the same type whose text is the same, or nearly
        (cosine ≥ ``LayerConfig.dedup_cosine``, 0.95), is not stored twice: the existing one
        gets a new version that merges provenance (mentions, source ids, tags) and is
        returned. ``dedup=False`` always stores a new record.

        Quotas: only a new record needs ``max_records``; a duplicate merges at a full
        quota too (a near one after its embedding, counted in ``embeddings_per_day``,
        decided it), and a new text there is a ``QuotaExceededError`` with nothing written."""
        await self._ready()  # async-only
        from memstrata._async.policies.dedup import insert_or_merge
        from memstrata.policies.dedup import DedupAction
        from memstrata.policies.importance import (
            heuristic_importance,
            make_refine_job,
            needs_refinement,
        )

        check_owner(scope)
        text = validate_content(content, max_chars=self.max_content_chars)
        rtype = check_enum(RecordType, type, "type")
        check_bool(dedup, "dedup")
        text, metadata = self._redact(scope, text, metadata)
        # Never an LLM call on the caller's thread: the heuristic now, the model later.
        # An adapted sync LLM (aio.providers) is judged by the LLM it adapts.  # async-only
        llm: object = getattr(self._llm, "inner", self._llm)  # async-only
        # sync: llm = self._llm
        refine = importance is None and needs_refinement(llm)
        if importance is None:
            importance = heuristic_importance(text)
        record = note_record(
            scope,
            text,
            type=rtype,
            now=self._clock.now(),
            model_id=self._raw_embedder.model_id,
            dims=self._raw_embedder.dims,
            max_chars=self.max_content_chars,
            importance=importance,
            confidence=confidence,
            tags=tags,
            metadata=metadata,
            source=source,
            observed_at=observed_at,
            visibility=visibility,
            source_ids=source_ids,
        )
        now = self._clock.now()
        if dedup:  # a merge writes no record: only an insert needs the records quota
            result = await insert_or_merge(
                self._ctx,
                scope,
                record,
                admit=lambda: self._ctx.admit(scope, 1, now, may_merge=True),
            )
            stored, inserted = result.record, result.action is DedupAction.INSERT
        else:
            async with self._ctx.admit(scope, 1, now):
                stored, inserted = (await self._ctx.insert([record]))[0], True
        if refine and inserted:
            await self._store.enqueue([make_refine_job(stored, self._clock.now())])
            self._wake()
        return stored

    async def remember(
        self,
        scope: Scope,
        content: str,
        *,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> Remembered:
        """Let the router (seed 000 §9) decide where a piece of information goes.

        Stable, general, important statements become semantic notes; other cross-session
        information becomes an episode (user feedback at importance 0.9); task state goes to
        the session's working memory; low-value text (small talk, errors, under 50 chars with
        no fact) is not stored long-term and comes back with ``record=None``."""
        await self._ready()  # async-only
        from memstrata.layers.router import Layer, estimate, route

        check_owner(scope)
        text = validate_content(content, max_chars=self.max_content_chars)
        # Checked whatever the router decides: bad tags are refused, not dropped with the text.
        tags, metadata = check_tags(tags), check_metadata(metadata)
        item = estimate(text)
        layer = route(item)
        record: MemoryRecord | None = None
        if layer is Layer.SEMANTIC:
            record = await self.add(
                scope,
                text,
                type=RecordType.NOTE,
                importance=item.importance,
                tags=tags,
                metadata=metadata,
            )
        elif layer is Layer.EPISODIC:
            importance = (
                self._ctx.config.feedback_importance if item.is_user_feedback else item.importance
            )
            record = await self.add(
                scope,
                text,
                type=RecordType.EPISODE,
                importance=importance,
                tags=tags,
                metadata=metadata,
            )
        return Remembered(layer.value, record, item)

    # --- PII (policies/pii.py): applied before anything is embedded, stored or sent ------
    def _redact(
        self, scope: Scope, text: str, metadata: Mapping[str, Any] | None
    ) -> tuple[str, Mapping[str, Any] | None]:
        if self._pii is None:
            return text, metadata
        new_text, extra = self._pii.apply(scope.tenant, text)
        if not extra:
            return text, metadata
        return new_text, {**(metadata or {}), **extra}

    def _redact_message(self, scope: Scope, m: Message) -> Message:
        if self._pii is None or not isinstance(m.content, str):
            return m
        text, metadata = self._redact(scope, m.content, m.metadata)
        return m if text is m.content else replace(m, content=text, metadata=metadata or {})

    async def _insert(self, records: Sequence[MemoryRecord]) -> None:
        await self._ctx.insert(records)

    async def update(
        self,
        scope: Scope,
        record_id: str,
        *,
        expected_version: int,
        content: str | None = None,
        importance: float | None = None,
        confidence: float | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        source: Source | str | None = None,
    ) -> MemoryRecord:
        """Write a new version of a record. ``expected_version`` is the version you read; if
        someone else updated it since, :class:`ConflictError` is raised and nothing changes."""
        await self._ready()  # async-only
        check_owner(scope)
        check_id(record_id)
        check_int(expected_version, "expected_version", low=1, high=MAX_COUNT)
        if all(v is None for v in (content, importance, confidence, tags, metadata, source)):
            # as the HTTP API answers it: a call with nothing to change wrote a new version
            # equal to the last one (a history entry and a version for nothing)
            raise ValidationError(
                "nothing to change: pass at least one of content, importance, confidence, "
                "tags, metadata, source"
            )
        changes: dict[str, Any] = {"version": expected_version + 1, "updated_at": self._clock.now()}
        if content is not None:
            text = validate_content(content, max_chars=self.max_content_chars)
            text, pii_extra = self._redact(scope, text, None)
            changes["content_hash"] = content_hash(text)
        if importance is not None:
            changes["importance"] = check_unit(importance, "importance")
        if confidence is not None:
            changes["confidence"] = check_unit(confidence, "confidence")
        if source is not None:
            changes["source"] = check_enum(Source, source, "source")
        if tags is not None:
            changes["tags"] = check_tags(tags)
        if metadata is not None:
            changes["metadata"] = check_metadata(metadata)
        current = await self._store.get(scope, record_id)
        check_read_version(current.id, current.version, expected_version)
        if content is not None:
            changes["content"] = replace(current.content, raw=text)
            if pii_extra:
                changes["metadata"] = {**changes.get("metadata", current.metadata), **pii_extra}
        new = replace(current, **changes)
        if content is None or current.type is not RecordType.MESSAGE:
            await self._ctx.replace(
                scope, new, expected_version=expected_version, reindex=content is not None
            )
            return new
        from memstrata._async.search.reply_terms import terms_after_change

        # A turn's reply is indexed under its questions: it follows their new words, in the
        # same transaction (before session 28 it kept the old ones).
        write = await self._ctx.version_write(new, reindex=True)
        again = await terms_after_change(self._store, current, write.record)
        async with self._store.transaction() as tx:
            await tx.replace(scope, write, expected_version=expected_version)
            if again:
                await tx.reterm(scope, again)
        return new

    # --- reading -----------------------------------------------------------------------
    async def get(
        self, scope: Scope, record_id: str, *, include_deleted: bool = False
    ) -> MemoryRecord:
        await self._ready()  # async-only
        return await self._reads.get(
            check_scope(scope),
            check_id(record_id),
            include_deleted=check_bool(include_deleted, "include_deleted"),
        )

    async def history(self, scope: Scope, record_id: str) -> builtins.list[MemoryRecord]:
        """Every version of a record, oldest first."""
        await self._ready()  # async-only
        return await self._reads.history(check_scope(scope), check_id(record_id))

    async def list(
        self,
        scope: Scope,
        *,
        filters: Filters | Mapping[str, Any] | None = None,
        limit: int = 100,
        offset: int = 0,
        newest_first: bool = True,
    ) -> builtins.list[MemoryRecord]:
        await self._ready()  # async-only
        check_int(limit, "limit", low=1, high=100_000)
        check_int(offset, "offset", low=0, high=2**62)
        check_bool(newest_first, "newest_first")
        return await self._reads.list(
            check_scope(scope),
            Filters.parse(filters),
            limit=limit,
            offset=offset,
            newest_first=newest_first,
        )

    async def search(
        self,
        scope: Scope,
        query: str,
        top_k: int = 10,
        *,
        layers: Iterable[str] | str | None = None,
        filters: Filters | Mapping[str, Any] | None = None,
        mode: str | None = None,
        explain: bool = False,
        config: SearchConfig | None = None,
    ) -> builtins.list[SearchHit]:
        """Hybrid (BM25 + dense) search within ``scope``; see :class:`SearchConfig`."""
        await self._ready()  # async-only
        check_scope(scope)
        query = validate_content(
            query, max_chars=self.max_content_chars, field="query", stored=False
        )
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 1000:
            raise ValidationError(f"top_k must be an integer in [1, 1000], got {top_k!r}")
        flt = Filters.parse(filters)
        check_bool(explain, "explain")
        if layers is not None:
            allowed = types_of_layers(check_names(layers, "layers"))
            flt = replace(flt, types=allowed if flt.types is None else flt.types & allowed)
        if config is not None and not isinstance(config, SearchConfig):
            raise ValidationError("config must be a memstrata.SearchConfig")
        cfg = config or self.search_config
        if mode is not None:
            cfg = cfg.with_mode(mode)
        if self._pii is not None:  # embedded, cached and matched redacted
            query = self._pii.redact_query(scope.tenant, query)
        return await hybrid_search(
            self._reads,
            self._embedder.for_scope(scope),
            scope,
            query,
            top_k=top_k,
            filters=flt,
            config=cfg,
            now=self._clock.now(),
            explain=explain,
        )

    # --- forgetting --------------------------------------------------------------------
    @completes  # async-only
    async def delete(self, scope: Scope, record_id: str, *, actor: str = "library") -> MemoryRecord:
        """Soft delete: hidden from reads and searches, restorable until purged. A record
        already deleted is returned as stored, with no change and no audit event."""
        await self._ready()  # async-only
        actor = check_id(actor, "actor")  # before the write: a refused call writes nothing
        check_owner(scope)
        record_id = check_id(record_id)
        found = await self._store.get(scope, record_id, include_deleted=True)  # NotFound outside
        if not found.is_active:  # nothing happens, so no event says it did
            return found
        event = self.audit.event(
            scope.tenant, actor, "delete", user=scope.user, record_ids=[record_id]
        )
        return await self._set_status(scope, found, RecordStatus.DELETED, event)

    @completes  # async-only
    async def restore(
        self, scope: Scope, record_id: str, *, actor: str = "library"
    ) -> MemoryRecord:
        """Undo a soft delete. A fact whose key has another live fact is the current value
        again, the other ends superseded by it (``facts.restore``); a chunk of a document
        with another live version brings its own version back in its place
        (``knowledge.restore``). A live record is returned as stored, with no change and no
        audit event (before session 27 the log showed a restore that never happened)."""
        await self._ready()  # async-only
        actor = check_id(actor, "actor")  # before the write: a refused call writes nothing
        check_owner(scope)
        found = await self._store.get(scope, check_id(record_id), include_deleted=True)
        if found.is_active:
            return found
        event = self.audit.event(
            scope.tenant, actor, "restore", user=scope.user, record_ids=[found.id]
        )
        if found.type is RecordType.FACT and isinstance(found.metadata.get("key"), str):
            events = await self.audit.ahead([event])
            return await self.layers.facts.restore(scope, found, audit=self.audit, events=events)
        if found.type is RecordType.KNOWLEDGE and isinstance(found.metadata.get("qa_id"), str):
            events = await self.audit.ahead([event])
            return await self.layers.knowledge.restore(
                scope, found, audit=self.audit, events=events
            )
        return await self._set_status(scope, found, RecordStatus.ACTIVE, event)

    async def _set_status(
        self, scope: Scope, found: MemoryRecord, status: RecordStatus, event: AuditEvent
    ) -> MemoryRecord:
        """Set the status of a record of ``scope`` (checked) and record ``event`` in the
        same unit of work (SQLite, PostgreSQL, and ``memory://`` since session 27; a store
        without a log of its own gets it just before): killed anywhere, a record deleted or
        restored has its event, and an event its change (before session 25 the event was
        written after the change had committed). A record another writer gave ``status``
        meanwhile is not changed, and no event is written for it. A turn's reply follows
        it: indexed under its questions while it is live, under none of them once deleted
        (``reply_terms.terms_after_change``; before session 28 a deleted question's words
        still found its reply)."""
        from memstrata._async.search.reply_terms import terms_after_change

        again = await terms_after_change(self._store, found, replace(found, status=status))
        events = await self.audit.ahead([event])
        async with self._store.transaction() as tx:
            if await tx.set_status(scope, [found.id], status, self._clock.now()):
                await self.audit.append_in(tx, events)
                if again:
                    await tx.reterm(scope, again)
        return await self._store.get(scope, found.id, include_deleted=True)

    @completes  # async-only
    async def purge(
        self,
        scope: Scope,
        record_ids: Sequence[str] | None = None,
        *,
        actor: str = "library",
        compact: bool = False,
    ) -> PurgeReport:
        """Destroy records for real (or every trace of the user). ``compact=True`` then
        runs :meth:`compact`, so the database's files keep no byte of them either."""
        await self._ready()  # async-only
        actor = check_id(actor, "actor")  # checked first: a purge cannot be undone
        check_bool(compact, "compact")
        check_owner(scope)
        whole = record_ids is None
        if record_ids is not None:  # every id checked before anything is written
            record_ids = await self._purgeable(scope, record_ids)
        # A job's writes are checked against its claim (jobs.Fence); a whole-user purge made
        # by one deletes that claim with the user's jobs, and its own writes (the audit
        # event) are the erasure, not something derived: they are not the job's.
        with unfenced() if whole else nullcontext():
            # Recorded before the purge, as the maintenance pass records its retention
            # purges: a purge cannot be undone, and an event written after it is lost to a
            # kill between the two. Killed there now, the event precedes a purge not made
            # (purge again); a purge that fails says so in a purge_failed event. The event
            # holds no word of the user: ids (of some records; none for a whole user, whom
            # it does not name — nor does its actor when it names the user, as the purge's
            # redaction of their own events decides (audit_types.names_user: ``ann`` and
            # ``user:ann`` do; ``joanna`` purging ``ann`` names someone else and is kept).
            await self.audit.record(
                scope.tenant,
                PURGED if whole and names_user(actor, scope.user) else actor,
                "purge",
                user=None if whole else scope.user,
                record_ids=list(record_ids or ()),
                reason="a whole user" if whole else None,
            )
            try:
                report = await self._purge(scope, record_ids)
            except Exception as exc:
                # It names the user (the purge failed, or part of it: purge again), and the
                # purge of the whole user that succeeds redacts it with their other events.
                try:
                    await self.audit.record(
                        scope.tenant,
                        actor,
                        "purge_failed",
                        user=scope.user,
                        record_ids=list(record_ids or ()),
                        reason=f"the purge recorded before it failed: {type(exc).__name__}: {exc}",
                    )
                except Exception as unrecorded:  # the store is down: its error is the news
                    _log.warning("purge_failed event not recorded: %s", unrecorded)
                raise
            if whole:  # keep what happened, not who: the user's events lose their ids
                await self.audit.redact_subject(scope.tenant, scope.user)
        if compact:  # after the audit event: its rewrite of the user's events goes too
            report = replace(report, compaction=await self.compact())
        return report

    async def compact(self, *, lock_timeout: float = 10.0) -> CompactReport:
        """Rewrite the store's files so no deleted row's bytes remain (store/compaction.py).

        SQLite: ``VACUUM``, WAL truncated. PostgreSQL: ``VACUUM (FULL,
        ANALYZE)`` of every table of the schema (each locked against reads and writes while
        it is copied), ``pg_statistic`` rewritten, WAL switched and checkpointed; what the
        server keeps out of reach is in ``residuals``; a table another transaction holds for
        over ``lock_timeout`` seconds is skipped and named. ``memory://`` has no files."""
        await self._ready()  # async-only
        from memstrata.store.compaction import Compactable

        lock_timeout = check_number(lock_timeout, "lock_timeout", low=0.0, high=86_400.0)

        store: object = getattr(self._store, "durable", self._store)  # behind Redis
        if not isinstance(store, Compactable):
            return CompactReport()
        compact: Any = store.compact  # async-only
        return cast(CompactReport, await compact(lock_timeout=lock_timeout))  # async-only
        # sync: return store.compact(lock_timeout=lock_timeout)

    async def _purgeable(self, scope: Scope, record_ids: Sequence[str]) -> builtins.list[str]:
        """``record_ids`` checked: each a record of ``scope`` (``NotFoundError`` as ``get``
        says of one that is not: nothing is purged, nor recorded)."""
        record_ids = check_ids(record_ids, "record_ids")
        found = {r.id for r in await self._store.get_many(scope, record_ids)}  # one read
        for rid in record_ids:
            if rid not in found:
                await self._store.get(scope, rid, include_deleted=True)
        return list(record_ids)

    async def _purge(self, scope: Scope, record_ids: Sequence[str] | None) -> PurgeReport:
        """Destroy for real. With ids: those records. Without: everything of the user
        (records, history, vectors, caches, queued jobs), verified empty afterwards."""
        # A job of the user that this process runs (the background worker, a flush), past
        # reading the turns, writes what it derived from them (facts, clusters, summaries)
        # after the purge and brings the purged words back: it is waited for and the
        # purge done again.
        runner = self.__dict__.get("_runner")
        busy = runner is not None and runner.running(scope.tenant, scope.user)
        report = await self._purge_once(scope, record_ids)
        if runner is not None and (busy or runner.running(scope.tenant, scope.user)):
            await runner.wait_user(scope.tenant, scope.user)
            again = await self._purge_once(scope, record_ids, again=True)
            report = PurgeReport(
                records=report.records + again.records,
                versions=report.versions + again.versions,
                vectors=report.vectors + again.vectors,
                jobs=report.jobs + again.jobs,
                cache_entries=report.cache_entries + again.cache_entries,
                remaining=again.remaining,
            )
        return report

    async def _purge_once(
        self, scope: Scope, record_ids: Sequence[str] | None, *, again: bool = False
    ) -> PurgeReport:
        """One pass of :meth:`_purge`; ``again``: the records themselves are gone already,
        what was derived from them since is purged."""
        from memstrata.traces import forget_words

        # What this process keeps of users' words between calls (sentences, names, terms,
        # the embedders' vectors of texts) may hold the purged records'.
        forget_words()
        if record_ids is None:
            return await self._store.purge_user(scope.tenant, scope.user)
        from memstrata._async.consolidation import refresh_stale_summaries
        from memstrata._async.rederive import rederive

        # What was derived from them repeats their words: clusters, episodes, automatic key
        # entries are derived again from the sources left, facts and procedures cite only
        # those, under the same id with no earlier version; with no source left they are
        # purged too. Summaries are rebuilt from the turns left the same way.
        from memstrata._async.search.reply_terms import purge_records

        # A reply indexed under a purged question is indexed again without its words.
        report = (
            PurgeReport() if again else await purge_records(self._store, scope, list(record_ids))
        )
        _, more = await rederive(
            self._ctx, scope, record_ids, reason="sources were purged", purge=True
        )
        report = replace(
            report,
            records=report.records + more.records,
            versions=report.versions + more.versions,
            vectors=report.vectors + more.vectors,
            cache_entries=report.cache_entries + more.cache_entries,
            remaining=report.remaining + more.remaining,
        )
        await refresh_stale_summaries(
            self._ctx, scope, set(record_ids), rebuild=True, reason="summarised turns were purged"
        )
        return report

    # --- maintenance (maintenance.py) -----------------------------------------------------
    @completes  # async-only
    async def maintain(
        self,
        scope: Scope,
        *,
        policy: str | ForgettingPolicy = "default",
        dry_run: bool = False,
        retention: Retention | None = None,
        consolidate: bool = True,
        actor: str = "library",
        now: datetime | str | None = None,
    ) -> MaintenanceReport:
        """One maintenance pass over the user of ``scope``: forgetting policy (soft deletes
        with a log entry, restorable), decay scores, retention purges, consolidation,
        stale summaries refreshed. ``now`` runs it as of that time (default: the clock)."""
        await self._ready()  # async-only
        from memstrata._async import maintenance as _maintenance

        check_owner(scope)
        when = check_time(now, "now") if now is not None else None
        check_bool(dry_run, "dry_run")
        check_bool(consolidate, "consolidate")
        check_id(actor, "actor")
        from memstrata.maintenance_types import Retention

        if retention is not None and not isinstance(retention, Retention):
            raise ValidationError(
                f"retention must be a memstrata Retention, got {type(retention).__name__}"
            )
        return await _maintenance.maintain(
            self._ctx,
            scope,
            policy=policy,
            dry_run=dry_run,
            retention=retention or self.retention,
            consolidate=consolidate,
            audit=self.audit,
            actor=actor,
            now=when,
        )

    @completes  # async-only
    async def forget(
        self,
        scope: Scope,
        record_ids: Sequence[str],
        *,
        reason: str = "explicit request",
        actor: str = "library",
    ) -> builtins.list[LogEntry]:
        """Explicit forget: soft-delete with a log entry; ``restore`` brings them back."""
        await self._ready()  # async-only
        from memstrata._async import maintenance as _maintenance

        scope = check_owner(scope)
        record_ids = tuple(dict.fromkeys(check_ids(record_ids, "record_ids")))  # each once
        reason, actor = check_text(reason, "reason"), check_id(actor, "actor")
        return await _maintenance.forget(
            self._ctx, scope, record_ids, reason=reason, audit=self.audit, actor=actor
        )

    @completes  # async-only
    async def set_importance_by_tag(
        self, scope: Scope, tag: str, importance: float, *, actor: str = "library"
    ) -> builtins.list[MemoryRecord]:
        await self._ready()  # async-only
        from memstrata._async import maintenance as _maintenance

        return await _maintenance.set_importance_by_tag(
            self._ctx,
            check_owner(scope),
            tag,
            importance,
            audit=self.audit,
            actor=check_id(actor, "actor"),
        )

    # --- access control (seed 003): Scope(caller=..., roles=...) reads, owners write ------
    @completes  # async-only
    async def set_access(
        self,
        scope: Scope,
        record_id: str,
        *,
        visibility: Visibility | str | None = None,
        allowed_users: Sequence[str] | None = None,
        allowed_roles: Sequence[str] | None = None,
        actor: str = "library",
    ) -> MemoryRecord:
        """Who besides the user may read a record (a new version). Roles must be among
        ``Memory(roles=...)``; users are user ids of the same tenant. The rules the record
        already has change nothing: it is returned as stored, with no version or event."""
        await self._ready()  # async-only
        check_owner(scope)
        record_id = check_id(record_id)
        actor = check_id(actor, "actor")  # before the write: a refused call writes nothing
        current = await self._store.get(scope, record_id, include_deleted=True)
        access = _access_control(
            current.access, visibility, allowed_users, allowed_roles, self.roles
        )
        if access == current.access:  # the rules it has: no version, no event (session 27)
            return current
        new = replace(
            current, access=access, version=current.version + 1, updated_at=self._clock.now()
        )
        event = self.audit.event(
            scope.tenant,
            actor,
            "set_access",
            user=scope.user,
            record_ids=[record_id],
            details={
                "visibility": access.visibility.value,
                "allowed_users": list(access.allowed_users),
                "allowed_roles": list(access.allowed_roles),
            },
        )
        write = await self._ctx.version_write(new, reindex=False)
        # The new version and its event in one transaction (memory://: the event first),
        # as delete and restore: the access a record has is never one no event gave it.
        events = await self.audit.ahead([event])
        async with self._store.transaction() as tx:
            await tx.replace(scope, write, expected_version=current.version)
            await self.audit.append_in(tx, events)
        return new

    async def set_quota(self, scope: Scope, quota: _quotas.Quota) -> None:
        """Override one user's quota (ValidationError if below what they already use)."""
        await self._ready()  # async-only
        from memstrata._async import quotas as _quotas

        await _quotas.set_user_quota(
            self._store,
            self.quotas or Quotas(),
            check_owner(scope),
            quota,
            self._clock.now(),
        )
        if self.quotas is None:
            self.quotas = Quotas()
        await self._mark_quotas_in_use()

    async def _schedule_maintenance(self, scope: Scope) -> None:
        if self._maintenance_every is not None:
            from memstrata._async import maintenance as _maintenance

            await _maintenance.schedule(
                self._store, scope, self._clock.now(), self._maintenance_every
            )

    async def _run_maintain_job(self, job: Any) -> None:
        from memstrata._async import maintenance as _maintenance

        scope = Scope(job.tenant, job.user)
        await _maintenance.maintain(
            self._ctx,
            scope,
            retention=self.retention,
            audit=self.audit,
            actor="system:maintenance-job",
        )
        if self._clock.now() >= job.run_after:  # on time (not flushed early): next one
            await self._schedule_maintenance(scope)

    # --- jobs --------------------------------------------------------------------------
    async def flush(self, scope: Scope | None = None, *, timeout: float | None = None) -> RunReport:
        """Run every queued background job now (deterministic tests and benchmarks).

        Jobs another worker holds (the background thread, another process) are waited for;
        a dead process's jobs come back when their lease runs out (seconds) and run here.
        ``timeout`` bounds the wait (the report's ``waiting`` counts what is still held)."""
        await self._ready()  # async-only
        if timeout is not None:
            timeout = check_number(timeout, "timeout", low=0.0, high=math.inf)
        if scope is None:
            return await self._runner.run_pending(include_delayed=True, wait=True, timeout=timeout)
        check_owner(scope)  # the jobs write the user's derived records: a caller changes nothing
        return await self._runner.run_pending(
            tenant=scope.tenant,
            user=scope.user,
            session=scope.session,
            include_delayed=True,
            wait=True,
            timeout=timeout,
        )

    async def run_worker(
        self,
        *,
        poll_seconds: float = 1.0,
        stop: Callable[[], bool] = lambda: False,
        on_run: Callable[[RunReport], object] | None = None,
    ) -> None:
        """Run jobs until ``stop()`` is true (what ``memstrata worker`` does); ``on_run``
        is given the report of each run that claimed a job (idle polls report nothing)."""
        # NaN, inf or a negative pause failed inside the loop's sleep (a bare ValueError or
        # OverflowError from `memstrata worker --poll nan`)
        poll_seconds = check_number(poll_seconds, "poll_seconds", low=0.0, high=86_400.0)
        await self._ready()  # async-only
        await self._runner.run_forever(poll_seconds=poll_seconds, stop=stop, on_run=on_run)

    # --- context -----------------------------------------------------------------------
    async def build_context(
        self,
        scope: Scope,
        query: str | None = None,
        token_budget: int = 16000,
        system_prompt: str | None = None,
        *,
        reserve_ratio: float | None = None,
    ) -> AssembledContext:
        """Assemble what the model should see, never over ``token_budget``.

        Order: system prompt → key memory → summaries → profile facts → relevant memories →
        working memory → the session's recent turns → ``query``. ``reserve_ratio`` overrides
        the share kept free for the response (default 20%, seed 000 §7).
        Returns chat ``messages`` plus the ``items`` used (layer, score, source ids)."""
        await self._ready()  # async-only
        check_scope(scope)
        if query is not None:
            query = validate_content(
                query, max_chars=self.max_content_chars, field="query", stored=False
            )
            query = self._ctx.redact_query(scope, query)
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise ValidationError("system_prompt must be a string")
        check_int(token_budget, "token_budget", high=MAX_TOKEN_BUDGET)
        if token_budget < 1:  # before any retrieval: a refused call must not count accesses
            raise BudgetError(f"token_budget must be a positive integer, got {token_budget}")
        if reserve_ratio is not None:
            reserve_ratio = check_ratio(reserve_ratio, "reserve_ratio")
        if self.quotas is not None:
            from memstrata._async import quotas as _quotas

            await _quotas.check_context(self._store, self.quotas, scope, token_budget)
        from memstrata._async.context.builder import build
        from memstrata.context.builder import ContextRequest

        req = ContextRequest(
            scope, query, token_budget, system_prompt, reserve_ratio, config=self.context_config
        )
        if self._count is None:
            from memstrata.tokens import estimate_tokens

            self._count = estimate_tokens
        return await build(self._sources, req, self._count)

    async def _search_for_context(
        self, scope: Scope, query: str, top_k: int, filters: Filters, vector: Any = None
    ) -> builtins.list[SearchHit]:
        # The context asks for many hits (as many as the budget could hold), so a smaller
        # candidate pool per list keeps build_context fast.
        config = replace(self.search_config, pool_factor=min(2, self.search_config.pool_factor))
        return await hybrid_search(
            self._reads,
            self._embedder.for_scope(scope),
            scope,
            query,
            top_k=top_k,
            filters=filters,
            config=config,
            now=self._clock.now(),
            vector=vector,
            touch=False,  # the builder counts what it shows (LayerSources.shown)
            ranking_scores=True,  # it packs by the ranking's scores
        )

    async def _ranked_for_context(
        self, scope: Scope, query: str, top_k: int, filters: Filters, vector: Any = None
    ) -> Any:
        """As ``_search_for_context``, decoded as the context packs (``RankedHits``)."""
        from memstrata._async.search.hybrid import search_ranked

        config = replace(self.search_config, pool_factor=min(2, self.search_config.pool_factor))
        return await search_ranked(
            self._reads,
            self._embedder.for_scope(scope),
            scope,
            query,
            top_k=top_k,
            filters=filters,
            config=config,
            now=self._clock.now(),
            vector=vector,
        )

    # --- portability -------------------------------------------------------------------
    async def export_records(
        self,
        scope: Scope,
        fp: IO[str],
        *,
        include_embeddings: bool = False,
        include_deleted: bool = True,
        include_history: bool = True,
    ) -> int:
        """Write the scope's records to ``fp`` as versioned JSON Lines (format version 3,
        each record followed by its earlier versions; version 2, current versions only,
        with ``include_history=False``: :mod:`memstrata.portability`), each page written
        before the next is read (see :meth:`export_chunks`); returns the record count."""
        check_scope(scope)
        check_text_sink(fp)
        count = 0
        async for text, records in self._export_pages(
            scope, include_embeddings, include_deleted, include_history
        ):
            try:
                fp.write(text)
            except (OSError, ValueError) as exc:  # the caller's file: full, closed ...
                raise export_write_failed(exc, count) from exc
            count += records
        return count

    async def export_chunks(
        self,
        scope: Scope,
        *,
        include_embeddings: bool = False,
        include_deleted: bool = True,
        include_history: bool = True,
    ) -> AsyncIterator[str]:
        """The export :meth:`export_records` writes, as the text of whole lines produced a
        page of records at a time (what the HTTP export streams): the first chunk is the
        header and the first page, the last the end line. Memory and each embedder call are
        bounded by a page (``EXPORT_PAGE`` records, ``EXPORT_EMBED_BATCH`` texts a call),
        whatever the user's history. The walk pages by ``(observed_at, insertion order)``
        (``Store.list_pages``), so a record that exists throughout is exported exactly once
        whatever is purged or added meanwhile. Each record's earlier versions are read a
        page at a time too (``Store.histories``, one read a page, or one per
        ``HISTORY_PAGE`` versions; a record with more, a part of ``HISTORY_PAGE`` at a
        time: ``Store.history_parts``). An error ends the iteration with no end line,
        so what was produced reads as incomplete; bad arguments fail at the first chunk."""
        async for text, _ in self._export_pages(
            scope, include_embeddings, include_deleted, include_history
        ):
            yield text

    async def _export_pages(
        self, scope: Scope, include_embeddings: bool, include_deleted: bool, include_history: bool
    ) -> AsyncIterator[tuple[str, int]]:
        """The lines of an export, a page at a time, each with its number of records."""
        from memstrata.portability import (
            EXPORT_PAGE,
            EXPORT_VERSION,
            PLAIN_VERSION,
            end_line,
            header_line,
            record_lines,
        )

        await self._ready()  # async-only
        check_scope(scope)
        check_bool(include_embeddings, "include_embeddings")
        check_bool(include_history, "include_history")
        flt = Filters(
            include_deleted=check_bool(include_deleted, "include_deleted"), include_superseded=True
        )
        model_id, dims = self._raw_embedder.model_id, self._raw_embedder.dims
        head = header_line(
            model_id=model_id,
            dims=dims,
            exported_at=self._clock.now(),
            version=EXPORT_VERSION if include_history else PLAIN_VERSION,
        )
        count = versions = 0
        async for page in self._reads.list_pages(scope, flt, batch_size=EXPORT_PAGE):
            vectors = await self._export_vectors(scope, page) if include_embeddings else None
            count += len(page)
            if not include_history:
                yield head + record_lines(page, vectors), len(page)
                head = ""
                continue
            async for text, records, past in self._export_runs(scope, page, vectors, head):
                versions += past
                yield text, records
                head = ""
        yield head + end_line(count, versions if include_history else None), 0

    async def _export_runs(
        self,
        scope: Scope,
        page: Sequence[MemoryRecord],
        vectors: Sequence[Vector] | None,
        head: str,
    ) -> AsyncIterator[tuple[str, int, int]]:
        """The lines of a page of an export with history, a run of records at a time
        (``portability.history_runs``), each with its numbers of records and earlier
        versions: a run's histories in one ``Store.histories`` read (of the records with a
        version above 1), a record with more than ``HISTORY_PAGE`` earlier versions on its
        own, its line and then its history a part at a time (``Store.history_parts``), so
        an export holds a part of one record's history, not all of it. Only versions below
        the page's: a record updated since the page was read is exported as the page has
        it, with the history it had then. ``head`` begins the first text (made with it,
        so that no run's text is held twice)."""
        from memstrata import portability

        at = 0
        for run, long in portability.history_runs(page):
            vecs = None if vectors is None else vectors[at : at + len(run)]
            at += len(run)
            if not long:
                past = await self._export_past(scope, run)
                held = sum(map(len, past.values()))
                yield head + portability.record_lines(run, vecs, past), len(run), held
                head = ""
                continue
            yield head + portability.record_lines(run, vecs), 1, 0
            head = ""
            rec = run[0]
            async for part in self._reads.history_parts(
                scope, rec.id, below=rec.version, size=portability.HISTORY_PAGE
            ):
                yield portability.past_lines(part), 0, len(part)

    async def _export_past(
        self, scope: Scope, run: Sequence[MemoryRecord]
    ) -> dict[str, builtins.list[MemoryRecord]]:
        """The earlier versions of a run's records, oldest first, by id, below the
        records' versions: one ``Store.histories`` read of those with a version above 1,
        none when none has."""
        older = [r for r in run if r.version > 1]
        found = await self._reads.histories(scope, [r.id for r in older]) if older else {}
        past: dict[str, builtins.list[MemoryRecord]] = {}
        for rec in older:
            kept = [v for v in found.get(rec.id, ()) if v.version < rec.version]
            if kept:
                past[rec.id] = kept
        return past

    async def _export_vectors(
        self, scope: Scope, page: Sequence[MemoryRecord]
    ) -> builtins.list[Vector]:
        """The vectors of a page of an export: the ones the store holds (one read), made by
        the embedder's current model; a record stored without a vector, or with another
        model's (an older model, a re-embed under way), is embedded as the file says its
        vectors are (``EXPORT_EMBED_BATCH`` texts a call, no cache read or filled)."""
        from memstrata.portability import EXPORT_EMBED_BATCH

        model_id, dims = self._raw_embedder.model_id, self._raw_embedder.dims
        stored = await self._store.stored_vectors(scope, [r.id for r in page])
        vectors: dict[int, Vector] = {}
        for i, rec in enumerate(page):
            held = stored.get(rec.id)
            if held is not None and held.model == model_id and held.vector.shape == (dims,):
                vectors[i] = held.vector
        missing = [i for i in range(len(page)) if i not in vectors]
        for start in range(0, len(missing), EXPORT_EMBED_BATCH):
            batch = missing[start : start + EXPORT_EMBED_BATCH]
            made = await self._embedder.embed_uncached([page[i].text for i in batch])
            vectors.update(zip(batch, made, strict=True))
        return [vectors[i] for i in range(len(page))]

    async def import_records(self, fp: IO[str], *, into: Scope | None = None) -> ImportReport:
        """Read an export. Every line is checked before anything is written; then all
        records are written in one transaction. ``into`` remaps tenant and user (and agent
        when given) and gives the records new ids; records already present are skipped. A
        record whose id another record of the user holds (one created at another time: a
        fact key begun again after a purge names its first fact as the exported one was
        named) is kept beside it under a new id (``ImportReport.renamed``), with the
        import's references to it; importing the same export again adds nothing. A
        record's earlier versions (format version 3) are written with it, remapped,
        renamed and redacted as it is (``ImportReport.versions``), so ``history`` gives
        what it gave where the export was made; a record skipped skips its versions.

        Memory is a page's (``EXPORT_PAGE`` records, ``HISTORY_PAGE`` earlier versions),
        whatever the file's size or one record's history: the file is read once, each page
        checked, its ids looked up (one read) and the page put in a temporary file (a
        record with more earlier versions than a page has them in parts, a page each:
        ``portability.Continued``); then, a page at a time, the records are remapped and
        redacted and those without a usable vector embedded (one call), onto a second
        temporary file; then the transaction, one insert a page. So a bad line anywhere, a
        refused quota or a failed write leaves nothing written.
        The async API reads, checks, spools and tokenizes each page on a worker thread, so
        its event loop keeps serving other calls during a large import."""
        await self._ready()  # async-only
        from memstrata.portability import (
            EXPORT_PAGE,
            AnyOf,
            Continued,
            ImportReport,
            PageSpool,
            collided_id,
            read_pages,
            remapped_id,
        )

        if into is not None:
            check_owner(into)
        check_text_source(fp)
        ids: set[str] = set()  # every id of the file: duplicates, references when remapped
        present: set[str] = set()  # (final) ids of records already stored: skipped
        renamed: dict[str, str] = {}  # (final) ids another record holds -> the import's ids
        by_user: dict[Scope, int] = {}  # records to write per user: their quota
        read = 0  # records of the file

        def records_of(page: builtins.list[Entry]) -> Iterator[MemoryRecord]:
            return (e[0] for e in page if not isinstance(e, Continued))

        checked: PageSpool[Entry] = PageSpool()
        with checked:
            pages = read_pages(
                fp,
                model_id=self._raw_embedder.model_id,
                dims=self._raw_embedder.dims,
                max_chars=self.max_content_chars,
                ids=ids,
                page_size=EXPORT_PAGE,
            )
            while True:
                page = await asyncio.to_thread(next, pages, None)  # async-only
                # sync: page = next(pages, None)
                if page is None:
                    break
                # (the page's records, not held in a list of their own: the last page's
                # would stay held through the writes)
                keys = [
                    (rec.scope.user_scope, rec.id)
                    if into is None
                    else (Scope(into.tenant, into.user), remapped_id(rec.id, into))
                    for rec in records_of(page)
                ]
                read += len(keys)
                found = await self._stored_created(keys)
                moved = {
                    rid: collided_id(rid, rec.created_at)
                    for (_, rid), rec in zip(keys, records_of(page), strict=True)
                    if rid in found and found[rid] != rec.created_at
                }
                renamed |= moved
                again = await self._stored_ids([(w, moved[r]) for w, r in keys if r in moved])
                present |= {r for r in found if r not in moved} | again
                for who, rid in keys:
                    if rid not in found or (rid in moved and moved[rid] not in again):
                        by_user[who] = by_user.get(who, 0) + 1
                await asyncio.to_thread(checked.add, page)  # async-only
                # sync: checked.add(page)
            fresh = sum(by_user.values())
            async with AsyncExitStack() as admitted:  # each user's share, all or nothing
                for who, n in by_user.items():
                    await admitted.enter_async_context(self._ctx.admit(who, n, self._clock.now()))
                facts: set[str] = set()  # ids of the file's facts and chunks it writes
                writes, embedded = await self._import_writes(
                    checked, into, ids, present, renamed, facts
                )
                brought = AnyOf(present, facts)  # the file's records, stored or written
                with writes:
                    checked.close()  # its disk space, while the transaction runs
                    taken, versions = await self._import_write(writes)
                    # a key with a live fact of the store's and one of the file's keeps
                    # one; the file's own live facts of a key stay as the file has them
                    # so does a document with a live version of the store's and one of
                    # the file's (each after taking the name's turn: ``races.take_turn``)
                    for written in writes.pages():
                        await self.layers.facts.settle(
                            (e[0].record for e in written if not isinstance(e, Continued)),
                            brought=brought,
                        )
                        await self.layers.knowledge.settle(
                            (e[0].record for e in written if not isinstance(e, Continued)),
                            brought=brought,
                        )
        return ImportReport(
            imported=fresh - len(taken),
            skipped=read - fresh + len(taken),
            reembedded=embedded,
            renamed=len({new for new in renamed.values() if new not in present | taken}),
            versions=versions,
        )

    async def _import_writes(
        self,
        checked: PageSpool[Entry],
        into: Scope | None,
        ids: set[str],
        present: set[str],
        renamed: Mapping[str, str],
        brought: set[str],
    ) -> tuple[PageSpool[WrittenEntry], int]:
        """The writes of an import, a page at a time onto disk (remapped, renamed, redacted,
        those already present left out, those without a usable vector embedded in one call
        a page), each with its earlier versions (remapped, renamed and redacted alike; the
        parts of a long history as they come), with how many were embedded; the id of each
        fact and document chunk written is added to ``brought``."""
        from memstrata.portability import Continued, PageSpool, remap_page, rename_page
        from memstrata.search.tokenize import tokenize

        writes: PageSpool[WrittenEntry] = PageSpool()
        pages = checked.pages()

        def kept_of_next() -> builtins.list[Entry] | None:
            """The next page's records to write (remapped, redacted, those already present
            left out), each with its file vector and its earlier versions, or ``None``
            after the last page."""
            page = next(pages, None)
            if page is None:
                return None
            if into is not None:
                page = remap_page(page, into, ids)
            page = rename_page(page, renamed)
            kept: builtins.list[Entry] = []
            for entry in page:
                if isinstance(entry, Continued):
                    if entry.record.id not in present:
                        kept.append(entry.moved(self._ctx.redact))
                    continue
                raw, vec, past = entry
                if raw.id in present:
                    continue
                rec = self._ctx.redact(raw)
                # a redacted record's file vector is the clear text's: embed again
                kept.append((rec, vec if rec is raw else None, tuple(map(self._ctx.redact, past))))
                if rec.type in (RecordType.FACT, RecordType.KNOWLEDGE):  # what settle asks of
                    brought.add(rec.id)
            return kept

        def spool(kept: builtins.list[Entry], made: Iterator[Vector]) -> None:
            writes.add(
                [
                    e
                    if isinstance(e, Continued)
                    else (
                        RecordWrite(
                            e[0], next(made) if e[1] is None else e[1], tuple(tokenize(e[0].text))
                        ),
                        e[2],
                    )
                    for e in kept
                ]
            )

        embedded = 0
        try:
            while True:
                kept = await asyncio.to_thread(kept_of_next)  # async-only
                # sync: kept = kept_of_next()
                if kept is None:
                    break
                missing = [e[0].text for e in kept if not isinstance(e, Continued) and e[1] is None]
                made: Iterator[Vector] = iter([])
                if missing:
                    made = iter(await self._embedder.embed_batch(missing))
                    embedded += len(missing)
                await asyncio.to_thread(spool, kept, made)  # async-only
                # sync: spool(kept, made)
        except BaseException:
            writes.close()
            raise
        return writes, embedded

    async def _import_write(self, writes: PageSpool[WrittenEntry]) -> tuple[set[str], int]:
        """Write an import in one transaction, an insert a page and the page's earlier
        versions after it (``insert_history``; a part of a long history in a call of its
        own, with the version after it); returns the ids skipped because another import
        committed them after they were looked up, and the earlier versions written."""
        from memstrata.portability import Continued

        taken: set[str] = set()
        while True:
            versions = 0
            try:
                async with self._store.transaction() as tx:
                    for page in writes.pages():
                        made = [
                            e
                            for e in page
                            if not isinstance(e, Continued) and e[0].record.id not in taken
                        ]
                        if made:
                            await tx.insert([w for w, _ in made])
                        past = [p for _, p in made if p]
                        if past:
                            await tx.insert_history(past)
                            versions += sum(map(len, past))
                        for part in page:  # after the page's inserts: its record's among them
                            if isinstance(part, Continued) and part.record.id not in taken:
                                await tx.insert_history([part.past], [part.newer])
                                versions += len(part.past)
                return taken, versions
            except ValidationError:
                # Another import of the same lines committed some of them since they were
                # looked up: skip those, as if they had been there before (the whole
                # transaction again, since a failed one wrote nothing).
                now: set[str] = set()
                for page in writes.pages():
                    now |= await self._stored_ids(
                        [
                            (e[0].record.scope.user_scope, e[0].record.id)
                            for e in page
                            if not isinstance(e, Continued)
                        ]
                    )
                if now <= taken:
                    raise
                taken |= now

    async def _stored_ids(self, keys: Sequence[tuple[Scope, str]]) -> set[str]:
        """Those of the ``(user scope, id)`` keys whose record is stored (any status)."""
        return set(await self._stored_created(keys))

    async def _stored_created(self, keys: Sequence[tuple[Scope, str]]) -> dict[str, datetime]:
        """The ``created_at`` of each stored record (any status) of the ``(user scope,
        id)`` keys: one read per user."""
        by_user: dict[Scope, builtins.list[str]] = {}
        for who, rid in keys:
            by_user.setdefault(who, []).append(rid)
        found: dict[str, datetime] = {}
        for who, rids in by_user.items():
            found.update((r.id, r.created_at) for r in await self._store.get_many(who, rids))
        return found

    # --- introspection -----------------------------------------------------------------
    async def stats(self, scope: Scope) -> dict[str, Any]:
        """Counts of the records ``scope`` reads, the user's queued and failed jobs, the
        models and the store. Through a caller (``Scope.caller``) the counts are of what the
        caller may read and the jobs 0: they are the owner's operations, none the caller's
        (until session 27 a caller read the owner's job counts). The store's URL is given
        without its password (it was served whole by ``GET .../stats`` to every key)."""
        await self._ready()  # async-only
        s = await self._store.stats(check_scope(scope))
        if scope.caller is not None:
            s = replace(s, pending_jobs=0, failed_jobs=0)
        return {
            "scope": str(scope),
            "records": s.records,
            "active": s.active,
            "deleted": s.deleted,
            "by_type": dict(s.by_type),
            "pending_jobs": s.pending_jobs,
            "failed_jobs": s.failed_jobs,
            "embedding_model": self._raw_embedder.model_id,
            "embedding_dims": self._raw_embedder.dims,
            "llm": self._llm_name(),
            "store": redact_url(self._store.url),  # served to any key of the tenant
        }

    def _llm_name(self) -> str:
        """The LLM's name, without building the default one (a count needs no LLM)."""
        llm = self.__dict__.get("_llm")
        if llm is not None:
            return str(llm.name)
        from memstrata.llm.factory import DEFAULT_LLM

        return DEFAULT_LLM
