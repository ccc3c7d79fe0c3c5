"""``Memory``: the one entry point. Picks its store from a URL, its providers from arguments.

Everything here is orchestration; scoring, fusion, record construction and validation are
pure functions in their own modules, so ``AsyncMemory`` can share them.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import IO, Any

from .clock import Clock, SystemClock
from .context.assemble import AssembledContext
from .context.builder import ContextRequest
from .context.builder import build as build_context
from .context.config import ContextConfig
from .context.sources import LayerSources
from .embedder.base import Embedder
from .embedder.cache import CachedEmbedder
from .embedder.factory import make_embedder
from .errors import EmbeddingMismatchError, NotFoundError, ValidationError
from .filters import Filters
from .layers.base import LayerConfig, LayerContext
from .layers.episodic import EpisodeService
from .layers.key import KeyMemoryService
from .layers.knowledge import KnowledgeService
from .layers.pipeline import make_ingest_job, make_session_end_job
from .layers.procedural import ProceduralService
from .layers.router import Layer, RouteInput, estimate, route
from .layers.semantic import FactService
from .layers.stack import LayerStack
from .layers.working import TaskService
from .llm.base import LLM
from .llm.factory import make_llm
from .policies.dedup import insert_or_merge
from .portability import ImportReport, export_jsonl, read_jsonl
from .records import MemoryRecord, Message, RecordStatus, RecordType, Role, Source, Visibility
from .reembed import reembed_store
from .scope import Scope
from .search.config import SearchConfig
from .search.hit import SearchHit, types_of_layers
from .search.hybrid import search as hybrid_search
from .search.tokenize import tokenize
from .store.base import PurgeReport, RecordWrite, Store
from .store.url import open_store
from .text import DEFAULT_MAX_CHARS, content_hash, validate_content
from .tokens import TokenCounter, estimate_tokens
from .worker import BackgroundWorker, JobRunner, RunReport
from .writes import check_scope, message_record, note_record

__all__ = ["Memory", "Remembered"]


@dataclass(frozen=True, slots=True)
class Remembered:
    """Where :meth:`Memory.remember` put something, and why (the router's scores)."""

    layer: str
    record: MemoryRecord | None
    scores: RouteInput

_META_MODEL = "embedding_model"
_META_DIMS = "embedding_dims"


class Memory:
    """Layered long-term memory for one application (any number of tenants and users).

    >>> mem = Memory("sqlite:///memory.db")                      # or "memory://"
    >>> alice = Scope(tenant="acme", user="alice", session="s1")
    >>> mem.add_message(alice, "user", "I moved to Lisbon last week")
    >>> mem.search(alice.user_scope, "where does she live?")
    """

    def __init__(self, url: str = "memory://", *, embedder: str | Embedder | None = None,
                 llm: str | LLM | None = None, clock: Clock | None = None,
                 search_config: SearchConfig | None = None,
                 max_content_chars: int = DEFAULT_MAX_CHARS, store: Store | None = None,
                 reembed: bool = False, layer_config: LayerConfig | None = None,
                 background: bool = True, token_counter: TokenCounter | None = None) -> None:
        self._store = store if store is not None else open_store(url)
        try:
            self._raw_embedder = make_embedder(embedder)
            self._embedder = CachedEmbedder(self._raw_embedder, self._store)
            self._llm = make_llm(llm)
            self._check_embedding_model(reembed=reembed)
        except BaseException:
            self._store.close()
            raise
        self._clock = clock or SystemClock()
        self.search_config = search_config or SearchConfig()
        self.max_content_chars = max_content_chars
        self._ctx = LayerContext(self._store, self._embedder, self._llm, self._clock,
                                 layer_config or LayerConfig())
        self.layers = LayerStack.build(self._ctx)
        self._runner = JobRunner(self._store, self.layers.handlers(), self._clock)  # type: ignore[arg-type]
        self._sources = LayerSources(self.layers, self._search_for_context)
        self.context_config = ContextConfig()  # build_context's levers (context/config.py)
        self._count = token_counter or estimate_tokens
        self._worker = BackgroundWorker(self._runner) if background else None

    # --- layer namespaces ----------------------------------------------------------------
    @property
    def key(self) -> KeyMemoryService:
        """Key memory: ``mem.key.set(scope, text, priority)``, ``edit``, ``remove``, ``list``."""
        return self.layers.key

    @property
    def tasks(self) -> TaskService:
        """Working memory: ``mem.tasks.start(scope, goal, steps)``, ``update_step``, ..."""
        return self.layers.tasks

    @property
    def facts(self) -> FactService:
        """Profile facts: ``mem.facts.upsert``, ``get(scope, key)``, ``relevant``, ``history``."""
        return self.layers.facts

    @property
    def episodes(self) -> EpisodeService:
        return self.layers.episodes

    @property
    def knowledge(self) -> KnowledgeService:
        """Documents: ``mem.knowledge.ingest(scope, text, qa_id=...)`` (chunked)."""
        return self.layers.knowledge

    @property
    def procedures(self) -> ProceduralService:
        return self.layers.procedures

    # --- lifecycle ---------------------------------------------------------------------
    def close(self) -> None:
        """Stop the background worker (after its current job) and close the store; jobs
        still queued stay in the store and run at the next start, flush or worker."""
        if self._worker is not None:
            self._worker.stop()
        self._store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def store(self) -> Store:
        return self._store

    @property
    def embedder(self) -> Embedder:
        return self._raw_embedder

    @property
    def llm(self) -> LLM:
        return self._llm

    @property
    def clock(self) -> Clock:
        return self._clock

    def _check_embedding_model(self, *, reembed: bool) -> None:
        """The store remembers the model its vectors came from; mixing two is refused.

        ``reembed=True`` migrates instead: every record is embedded again with this
        Memory's embedder (texts already in the cache for the new model are not)."""
        model, dims = self._raw_embedder.model_id, self._raw_embedder.dims
        stored = self._store.get_meta(_META_MODEL)
        stored_dims = self._store.get_meta(_META_DIMS)
        if stored is not None and (stored != model or stored_dims != str(dims)) and reembed:
            reembed_store(self._store, self._embedder)
            stored = None
        if stored is None:
            self._store.set_meta(_META_MODEL, model)
            self._store.set_meta(_META_DIMS, str(dims))
            return
        if stored != model or stored_dims != str(dims):
            raise EmbeddingMismatchError(
                f"this store was built with embedding model {stored!r} ({stored_dims} dims) but "
                f"was opened with {model!r} ({dims} dims): open it with the same embedder, or "
                f"migrate it with `memstrata reembed --embedder ...` or Memory(..., reembed=True)"
            )

    # --- writing -----------------------------------------------------------------------
    def add_message(self, scope: Scope, role: Role | str, content: str, *,
                    observed_at: datetime | None = None,
                    metadata: Mapping[str, Any] | None = None) -> MemoryRecord:
        """Store one conversational turn (synchronously embedded and indexed)."""
        msg = Message(role=role, content=content, observed_at=observed_at,  # type: ignore[arg-type]
                      metadata=dict(metadata or {}))
        return self.add_messages(scope, [msg])[0]

    def add_messages(self, scope: Scope,
                     messages: Sequence[Message]) -> builtins.list[MemoryRecord]:
        """Store many turns in one embedding call and one transaction (all or nothing)."""
        check_scope(scope)
        now = self._clock.now()
        records = [
            message_record(scope, m if isinstance(m, Message) else Message(**m), now=now,
                           model_id=self._raw_embedder.model_id, dims=self._raw_embedder.dims,
                           max_chars=self.max_content_chars)
            for m in messages
        ]
        self._insert(records)
        if records:
            self._store.enqueue([make_ingest_job(scope, [r.id for r in records], now)])
            self._wake()
        return records

    def end_session(self, scope: Scope) -> RunReport:
        """Close a session: its final summary, conversation episode and clustering run now
        (with any of the session's jobs still queued)."""
        check_scope(scope)
        self._store.enqueue([make_session_end_job(scope, self._clock.now())])
        return self.flush(scope)

    def _wake(self) -> None:
        if self._worker is not None:
            self._worker.wake()

    def add(self, scope: Scope, content: str, *, type: RecordType | str = RecordType.NOTE,
            importance: float | None = None, confidence: float = 1.0,
            tags: Sequence[str] = (), metadata: Mapping[str, Any] | None = None,
            source: Source | str = Source.EXPLICIT_USER_INPUT,
            observed_at: datetime | None = None, visibility: Visibility | str | None = None,
            source_ids: Sequence[str] = (), dedup: bool = True) -> MemoryRecord:
        """Store a memory directly.

        With ``dedup`` (default) a record of the same type whose text is the same, or nearly
        (cosine ≥ ``LayerConfig.dedup_cosine``, 0.95), is not stored twice: the existing one
        gets a new version that merges provenance (mentions, source ids, tags) and is
        returned. ``dedup=False`` always stores a new record."""
        check_scope(scope)
        text = validate_content(content, max_chars=self.max_content_chars)
        rtype = RecordType(type) if not isinstance(type, RecordType) else type
        if importance is None:
            importance = self._llm.score_importance(text)
        record = note_record(
            scope, text, type=rtype, now=self._clock.now(), model_id=self._raw_embedder.model_id,
            dims=self._raw_embedder.dims, max_chars=self.max_content_chars,
            importance=importance, confidence=confidence, tags=tags, metadata=metadata,
            source=source, observed_at=observed_at, visibility=visibility, source_ids=source_ids,
        )
        if dedup:
            return insert_or_merge(self._ctx, scope, record).record
        self._insert([record])
        return record

    def remember(self, scope: Scope, content: str, *, tags: Sequence[str] = (),
                 metadata: Mapping[str, Any] | None = None) -> Remembered:
        """Let the router (seed 000 §9) decide where a piece of information goes.

        Stable, general, important statements become semantic notes; other cross-session
        information becomes an episode (user feedback at importance 0.9); task state goes to
        the session's working memory; low-value text (small talk, errors, under 50 chars with
        no fact) is not stored long-term and comes back with ``record=None``."""
        check_scope(scope)
        text = validate_content(content, max_chars=self.max_content_chars)
        item = estimate(text)
        layer = route(item)
        record: MemoryRecord | None = None
        if layer is Layer.SEMANTIC:
            record = self.add(scope, text, type=RecordType.NOTE, importance=item.importance,
                              tags=tags, metadata=metadata)
        elif layer is Layer.EPISODIC:
            importance = (self._ctx.config.feedback_importance if item.is_user_feedback
                          else item.importance)
            record = self.add(scope, text, type=RecordType.EPISODE, importance=importance,
                              tags=tags, metadata=metadata)
        return Remembered(layer.value, record, item)

    def _insert(self, records: Sequence[MemoryRecord]) -> None:
        self._ctx.insert(records)

    def update(self, scope: Scope, record_id: str, *, expected_version: int,
               content: str | None = None, importance: float | None = None,
               confidence: float | None = None, tags: Sequence[str] | None = None,
               metadata: Mapping[str, Any] | None = None,
               source: Source | str | None = None) -> MemoryRecord:
        """Write a new version of a record. ``expected_version`` is the version you read; if
        someone else updated it since, :class:`ConflictError` is raised and nothing changes."""
        check_scope(scope)
        current = self._store.get(scope, record_id)
        changes: dict[str, Any] = {"version": expected_version + 1,
                                   "updated_at": self._clock.now()}
        if content is not None:
            text = validate_content(content, max_chars=self.max_content_chars)
            changes["content"] = replace(current.content, raw=text)
            changes["content_hash"] = content_hash(text)
        for name, value in (("importance", importance), ("confidence", confidence),
                            ("source", source)):
            if value is not None:
                changes[name] = value
        if tags is not None:
            changes["tags"] = tuple(tags)
        if metadata is not None:
            changes["metadata"] = dict(metadata)
        new = replace(current, **changes)
        self._ctx.replace(scope, new, expected_version=expected_version,
                          reindex=content is not None)
        return new

    # --- reading -----------------------------------------------------------------------
    def get(self, scope: Scope, record_id: str, *, include_deleted: bool = False) -> MemoryRecord:
        return self._store.get(check_scope(scope), record_id, include_deleted=include_deleted)

    def history(self, scope: Scope, record_id: str) -> builtins.list[MemoryRecord]:
        """Every version of a record, oldest first."""
        return self._store.history(check_scope(scope), record_id)

    def list(self, scope: Scope, *, filters: Filters | Mapping[str, Any] | None = None,
             limit: int = 100, offset: int = 0,
             newest_first: bool = True) -> builtins.list[MemoryRecord]:
        if limit < 1 or offset < 0:
            raise ValidationError("limit must be >= 1 and offset >= 0")
        return self._store.list(check_scope(scope), Filters.parse(filters), limit=limit,
                                offset=offset, newest_first=newest_first)

    def search(self, scope: Scope, query: str, top_k: int = 10, *,
               layers: Iterable[str] | str | None = None,
               filters: Filters | Mapping[str, Any] | None = None, mode: str | None = None,
               explain: bool = False,
               config: SearchConfig | None = None) -> builtins.list[SearchHit]:
        """Hybrid (BM25 + dense) search within ``scope``; see :class:`SearchConfig`."""
        check_scope(scope)
        query = validate_content(query, max_chars=self.max_content_chars, field="query")
        if not isinstance(top_k, int) or not 1 <= top_k <= 1000:
            raise ValidationError(f"top_k must be an integer in [1, 1000], got {top_k!r}")
        flt = Filters.parse(filters)
        if layers is not None:
            allowed = types_of_layers(layers)
            flt = replace(flt, types=allowed if flt.types is None else flt.types & allowed)
        cfg = config or self.search_config
        if mode is not None:
            cfg = cfg.with_mode(mode)
        return hybrid_search(self._store, self._embedder, scope, query, top_k=top_k,
                             filters=flt, config=cfg, now=self._clock.now(), explain=explain)

    # --- forgetting --------------------------------------------------------------------
    def delete(self, scope: Scope, record_id: str) -> MemoryRecord:
        """Soft delete: hidden from reads and searches, restorable until purged."""
        return self._set_status(scope, record_id, RecordStatus.DELETED)

    def restore(self, scope: Scope, record_id: str) -> MemoryRecord:
        return self._set_status(scope, record_id, RecordStatus.ACTIVE)

    def _set_status(self, scope: Scope, record_id: str, status: RecordStatus) -> MemoryRecord:
        check_scope(scope)
        self._store.get(scope, record_id, include_deleted=True)  # NotFound outside the scope
        self._store.set_status(scope, [record_id], status, self._clock.now())
        return self._store.get(scope, record_id, include_deleted=True)

    def purge(self, scope: Scope, record_ids: Sequence[str] | None = None) -> PurgeReport:
        """Destroy for real. With ids: those records. Without: everything of the user
        (records, history, vectors, caches, queued jobs), verified empty afterwards."""
        check_scope(scope)
        if record_ids is None:
            return self._store.purge_user(scope.tenant, scope.user)
        for rid in record_ids:
            self._store.get(scope, rid, include_deleted=True)
        return self._store.purge(scope, list(record_ids))

    # --- jobs --------------------------------------------------------------------------
    def flush(self, scope: Scope | None = None) -> RunReport:
        """Run every queued background job now (deterministic tests and benchmarks)."""
        if scope is None:
            return self._runner.run_pending(include_delayed=True)
        return self._runner.run_pending(tenant=scope.tenant, user=scope.user,
                                        session=scope.session, include_delayed=True)

    def run_worker(self, *, poll_seconds: float = 1.0,
                   stop: Callable[[], bool] = lambda: False) -> None:
        """Run jobs until ``stop()`` is true (what ``memstrata worker`` does)."""
        self._runner.run_forever(poll_seconds=poll_seconds, stop=stop)

    # --- context -----------------------------------------------------------------------
    def build_context(self, scope: Scope, query: str | None = None, token_budget: int = 16000,
                      system_prompt: str | None = None, *,
                      reserve_ratio: float | None = None) -> AssembledContext:
        """Assemble what the model should see, never over ``token_budget``.

        Order: system prompt → key memory → summaries → profile facts → relevant memories →
        working memory → the session's recent turns → ``query``. ``reserve_ratio`` overrides
        the share kept free for the response (default 20%, seed 000 §7).
        Returns chat ``messages`` plus the ``items`` used (layer, score, source ids)."""
        check_scope(scope)
        if query is not None:
            query = validate_content(query, max_chars=self.max_content_chars, field="query")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise ValidationError("system_prompt must be a string")
        req = ContextRequest(scope, query, token_budget, system_prompt, reserve_ratio,
                             config=self.context_config)
        return build_context(self._sources, req, self._count)

    def _search_for_context(self, scope: Scope, query: str, top_k: int, filters: Filters,
                            vector: Any = None) -> builtins.list[SearchHit]:
        # The context asks for many hits (as many as the budget could hold), so a smaller
        # candidate pool per list keeps build_context fast.
        config = replace(self.search_config, pool_factor=min(2, self.search_config.pool_factor))
        return hybrid_search(self._store, self._embedder, scope, query, top_k=top_k,
                             filters=filters, config=config, now=self._clock.now(),
                             vector=vector)

    # --- portability -------------------------------------------------------------------
    def export_records(self, scope: Scope, fp: IO[str], *, include_embeddings: bool = False,
                       include_deleted: bool = True) -> int:
        """Write the scope's records as versioned JSON Lines; returns the record count."""
        check_scope(scope)
        flt = Filters(include_deleted=include_deleted, include_superseded=True)
        records: list[MemoryRecord] = []
        offset = 0
        while batch := self._store.list(scope, flt, limit=1000, offset=offset,
                                        newest_first=False):
            records.extend(batch)
            offset += len(batch)
        vectors = None
        if include_embeddings and records:
            vectors = self._embedder.embed_batch([r.text for r in records])
        return export_jsonl(fp, records, vectors, model_id=self._raw_embedder.model_id,
                            dims=self._raw_embedder.dims, exported_at=self._clock.now())

    def import_records(self, fp: IO[str], *, into: Scope | None = None) -> ImportReport:
        """Read an export. Every line is checked before anything is written; then all
        records are written in one transaction. ``into`` remaps tenant and user (and agent
        when given) and gives the records new ids; ids already present are skipped."""
        if into is not None:
            check_scope(into)
        parsed = read_jsonl(fp, into=into, model_id=self._raw_embedder.model_id,
                            dims=self._raw_embedder.dims)
        fresh: list[MemoryRecord] = []
        skipped = 0
        for rec in parsed.records:
            try:
                self._store.get(rec.scope.user_scope, rec.id, include_deleted=True)
                skipped += 1
            except NotFoundError:
                fresh.append(rec)
        writes = []
        missing = [r for r in fresh if r.id not in parsed.vectors]
        embedded: Any = self._embedder.embed_batch([r.text for r in missing]) if missing else []
        new_vectors = {r.id: embedded[i] for i, r in enumerate(missing)}
        for rec in fresh:
            vec = parsed.vectors.get(rec.id)
            if vec is None:
                vec = new_vectors[rec.id]
            writes.append(RecordWrite(rec, vec, tuple(tokenize(rec.text))))
        if writes:
            self._store.insert(writes)
        return ImportReport(imported=len(writes), skipped=skipped,
                            reembedded=len(missing))

    # --- introspection -----------------------------------------------------------------
    def stats(self, scope: Scope) -> dict[str, Any]:
        s = self._store.stats(check_scope(scope))
        return {
            "scope": str(scope), "records": s.records, "active": s.active, "deleted": s.deleted,
            "by_type": dict(s.by_type), "pending_jobs": s.pending_jobs,
            "failed_jobs": s.failed_jobs, "embedding_model": self._raw_embedder.model_id,
            "embedding_dims": self._raw_embedder.dims, "llm": self._llm.name,
            "store": self._store.url,
        }

