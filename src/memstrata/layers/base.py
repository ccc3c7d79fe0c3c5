"""What every layer service gets: the store, providers, clock and the layer defaults.

Layer services never talk to each other directly: the ingest pipeline calls each one's
``on_messages`` / ``on_session_end`` from a background job, and ``build_context`` asks each
for its block. Pure rules (thresholds, formulas, conflict resolution) live in functions
beside each service so they are tested without a store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from ..clock import Clock
from ..embedder.base import Embedder
from ..llm.base import LLM
from ..policies.pii import PIIRedactor
from ..records import MemoryRecord
from ..scope import Scope
from ..search.tokenize import tokenize
from ..store.base import RecordWrite, Store

__all__ = ["IngestStep", "LayerConfig", "LayerContext"]

_Model = TypeVar("_Model", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class LayerConfig:
    """Every default of DESIGN §2–§4 in one place; change one by passing a new config."""

    # short-term buffer (seed 004: 20 rounds FIFO; seed 000/001: 8000-token cap)
    short_term_rounds: int = 20
    short_term_token_cap: int = 8000
    tool_output_max_chars: int = 500  # rule compression (seed 000 §7)
    ack_max_chars: int = 20
    # mid-term clusters (PMemo / MemoryOS)
    # None = calibrated per embedder and script (layers.mid_term.CLUSTER_JOIN; 0.7 otherwise)
    cluster_join_cosine: float | None = None
    max_clusters: int = 100
    promote_hits: int = 10
    heat_recency_hours: float = 24.0
    # long-term summaries
    summary_every_rounds: int = 10
    summary_max_words: int = 200
    # episodic (seed 000 L3, seed 001)
    episodic_top_k: int = 3
    episodic_min_importance: float = 0.3
    episodic_decay: float = 0.95
    feedback_importance: float = 0.9
    # semantic facts (seed 001)
    fact_min_confidence: float = 0.6
    fact_max_in_context: int = 20
    fact_confirm_step: float = 0.05
    # knowledge chunks (seed 002 §8.6)
    chunk_tokens: int = 2000
    chunk_overlap_tokens: int = 200
    # write policies (seed 002)
    dedup_cosine: float = 0.95
    low_value_max_chars: int = 50
    # procedural (seed 002 §8.8)
    procedure_reuse_similarity: float = 0.8
    procedure_reuse_success_rate: float = 0.9


@dataclass(frozen=True, slots=True)
class LayerContext:
    store: Store
    embedder: Embedder  # already cached: texts seen before cost nothing
    llm: LLM
    clock: Clock
    config: LayerConfig
    pii: PIIRedactor | None = None  # Memory(pii=...): applied to every record written here

    def embedder_for(self, scope: Scope) -> Embedder:
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

    def writes(self, records: Sequence[MemoryRecord]) -> list[RecordWrite]:
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
            embedded = self.embedder_for(Scope(tenant, user)).embed_batch(
                [records[i].text for i in positions]
            )
            vectors.update({i: embedded[n] for n, i in enumerate(positions)})
        return [RecordWrite(r, vectors[i], tuple(tokenize(r.text))) for i, r in enumerate(records)]

    def write_with(self, record: MemoryRecord, vector: Any) -> RecordWrite:
        """An index entry whose vector the caller computed (a summary's mean of its turns);
        the record is redacted, and embedded again only if redaction changed its text."""
        redacted = self.redact(record)
        if redacted.text != record.text:
            return self.writes([redacted])[0]
        return RecordWrite(redacted, vector, tuple(tokenize(redacted.text)))

    def insert(self, records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
        """Store new records; returns them as stored (redacted)."""
        if not records:
            return []
        writes = self.writes(records)
        self.store.insert(writes)
        return [w.record for w in writes]

    def replace(
        self, scope: Scope, record: MemoryRecord, *, expected_version: int, reindex: bool = True
    ) -> MemoryRecord:
        """Store ``record`` as the next version; ``reindex`` re-embeds its (changed) text
        (forced when redaction changed it). Returns the version as stored."""
        redacted = self.redact(record)
        reindex = reindex or redacted.text != record.text
        write = (
            self.writes([redacted])[0]
            if reindex
            else RecordWrite(redacted, None, tuple(tokenize(redacted.text)))
        )
        self.store.replace(scope, write, expected_version=expected_version)
        return write.record


class IngestStep(Protocol):
    """A layer's reaction to new turns and to the end of a session (run in background jobs;
    must be idempotent: a job may run twice after a crash)."""

    name: str

    def on_messages(self, scope: Scope, messages: Sequence[MemoryRecord]) -> None: ...

    def on_session_end(self, scope: Scope) -> None: ...
