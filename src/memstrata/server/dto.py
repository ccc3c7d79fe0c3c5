"""The HTTP API's request and response bodies (pydantic lives here, at the edge only).

Request models forbid unknown fields, so a typo is a 422 that names the field instead of a
silently ignored option. Response models mirror :func:`memstrata.codec.record_to_dict`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from ..codec import record_to_dict
from ..jobs import Job
from ..layers.episodic_types import EpisodeHit
from ..layers.knowledge_types import MAX_DOCUMENT_CHARS
from ..layers.procedural_types import FailureWarning, Suggestion
from ..maintenance_types import LogEntry, MaintenanceReport
from ..record_names import RecordTypeName
from ..records import MemoryRecord
from ..worker_types import RunReport
from .inspect import LayerItem, LayersView

MAX_TEXT = 100_000
MAX_BATCH = 1000
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]
Id = Annotated[str, Field(min_length=1, max_length=256)]


_JSON_KINDS = {bool: "true or false", list: "an array", dict: "an object"}


def _time_text(value: Any) -> Any:
    # Request models are strict (no "1" for 1, no false for 0), but a time arrives in JSON
    # as an ISO 8601 string; a number is refused rather than read as a Unix timestamp
    # (pydantic's lax mode would: 12 is 1970-01-01T00:00:12, and seconds and milliseconds
    # cannot be told apart).
    if isinstance(value, str):
        # Read as the library reads it (validation.check_time), not by pydantic, which took
        # a string of digits for a Unix time too ("2024": 1970-01-01T00:33:44; "20240101",
        # 2024-01-01 to the library, 1970-08-23)
        try:
            return datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(
                f"send the time as an ISO 8601 string such as 2024-05-08T13:00:00Z, not "
                f"{value[:40]!r} (a number in a string is not read as a Unix time either)"
            ) from None
    if isinstance(value, int | float) and not isinstance(value, bool):
        why = "not a number (a Unix time in seconds and one in milliseconds look alike)"
    else:
        why = f"not {_JSON_KINDS.get(type(value), type(value).__name__)}"
    raise ValueError(f"send the time as an ISO 8601 string such as 2024-05-08T13:00:00Z, {why}")


Time = Annotated[datetime, Field(strict=False), BeforeValidator(_time_text)]


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


RoleName = Literal["user", "assistant", "system", "tool"]
SourceName = Literal[
    "explicit_user_input",
    "implicit_inference",
    "system_generated",
    "external_data",
    "corrected_memory",
]
VisibilityName = Literal["private", "shared", "public"]
LayerName = Literal[
    "messages", "summaries", "episodic", "semantic", "mid_term", "key", "procedural", "working"
]


class MessageIn(Request):
    role: RoleName
    content: Text
    observed_at: Time | None = Field(
        None, description="When it was said (ISO 8601); default now. Naive times are UTC."
    )
    metadata: dict[str, Any] = Field(default_factory=dict)


class MessageBatchIn(Request):
    messages: list[MessageIn] = Field(min_length=1, max_length=MAX_BATCH)


class MemoryIn(Request):
    content: Text
    type: RecordTypeName = "note"
    importance: float | None = Field(None, ge=0, le=1)
    confidence: float = Field(1.0, ge=0, le=1)
    tags: list[Annotated[str, Field(max_length=256)]] = Field(default_factory=list, max_length=100)
    metadata: dict[str, Any] = Field(default_factory=dict)
    source: SourceName = "explicit_user_input"
    observed_at: Time | None = None
    visibility: VisibilityName | None = None
    source_ids: list[Id] = Field(default_factory=list, max_length=1000)
    dedup: bool = True
    session: Id | None = None
    agent: Id | None = None


class MemoryPatch(Request):
    expected_version: int = Field(
        ge=1,
        le=2**63 - 1,
        description="The version you read; a newer one makes this a 409 and changes nothing.",
    )
    content: Text | None = None
    importance: float | None = Field(None, ge=0, le=1)
    confidence: float | None = Field(None, ge=0, le=1)
    tags: list[Annotated[str, Field(max_length=256)]] | None = Field(None, max_length=100)
    metadata: dict[str, Any] | None = None
    source: SourceName | None = None


class PurgeIn(Request):
    ids: list[Id] | None = Field(
        None,
        min_length=1,
        max_length=1000,
        description="Records to destroy; omit with all_of_user=true.",
    )
    all_of_user: bool = Field(False, description="Destroy every trace of the user.")


class SearchIn(Request):
    query: Text
    top_k: int = Field(10, ge=1, le=1000)
    layers: list[LayerName] | None = None
    filters: dict[str, Any] | None = Field(
        None,
        description="types, tags, tags_all, observed_after, observed_before, valid_at, "
        "min_importance, sources, metadata, include_deleted, include_superseded, ids",
    )
    mode: Literal["hybrid", "lexical", "dense"] | None = None
    explain: bool = False
    session: Id | None = None
    agent: Id | None = None


class ContextIn(Request):
    query: Text | None = None
    token_budget: int = Field(4000, ge=1, le=2_000_000)
    system_prompt: Annotated[str, Field(max_length=MAX_TEXT)] | None = None
    reserve_ratio: float | None = Field(None, ge=0, lt=1)
    session: Id | None = None
    agent: Id | None = None


class KeyMemoryIn(Request):
    text: Annotated[str, Field(min_length=1, max_length=4000)]
    priority: int = Field(0, ge=-1000, le=1000)


class KeyMemoryPatch(Request):
    expected_version: int = Field(ge=1, le=2**63 - 1)
    text: Annotated[str, Field(min_length=1, max_length=4000)] | None = None
    priority: int | None = Field(None, ge=-1000, le=1000)


class TaskIn(Request):
    goal: Annotated[str, Field(min_length=1, max_length=4000)]
    steps: list[Annotated[str, Field(min_length=1, max_length=4000)]] = Field(
        default_factory=list, max_length=200
    )


class TaskStepIn(Request):
    status: Literal["pending", "in_progress", "completed", "failed"]
    result: Annotated[str, Field(max_length=MAX_TEXT)] | None = None
    error: Annotated[str, Field(max_length=MAX_TEXT)] | None = None


class TaskNoteIn(Request):
    text: Text
    tool: Annotated[str, Field(max_length=256)] | None = None


class TaskCompleteIn(Request):
    success: bool
    outcome: Text
    feedback: Annotated[str, Field(max_length=MAX_TEXT)] = ""


# --- responses --------------------------------------------------------------------------
class Content(BaseModel):
    raw: str
    summary: str | None
    structured: dict[str, Any]


class RelationOut(BaseModel):
    kind: str
    target_id: str


class AccessOut(BaseModel):
    visibility: str
    allowed_users: list[str]
    allowed_roles: list[str]


class RecordOut(BaseModel):
    id: str
    tenant: str
    user: str
    agent: str | None
    session: str | None
    type: str
    role: str | None
    content: Content
    embedding_model: str | None
    embedding_dims: int | None
    importance: float
    confidence: float
    tags: list[str]
    source: str
    version: int
    access_count: int
    decay_score: float
    superseded_by: str | None
    relations: list[RelationOut]
    access: AccessOut
    source_ids: list[str]
    metadata: dict[str, Any]
    content_hash: str
    status: str
    created_at: str | None
    updated_at: str | None
    observed_at: str | None
    last_accessed_at: str | None
    valid_from: str | None
    valid_to: str | None
    deleted_at: str | None

    @classmethod
    def of(cls, record: MemoryRecord) -> RecordOut:
        return cls.model_validate(record_to_dict(record))


class RecordList(BaseModel):
    items: list[RecordOut]
    total: int
    limit: int
    offset: int
    next_offset: int | None


class Records(BaseModel):
    records: list[RecordOut]


class HitOut(BaseModel):
    score: float
    layer: str
    source_ids: list[str]
    explanation: dict[str, float | int | None] | None
    record: RecordOut


class SearchOut(BaseModel):
    hits: list[HitOut]


class ContextItemOut(BaseModel):
    block: str
    layer: str
    score: float
    record_id: str | None
    source_ids: list[str]
    text: str
    tokens: int
    observed_at: str | None


class TurnOut(BaseModel):
    role: str
    content: str
    record_id: str | None


class PlanOut(BaseModel):
    total: int
    usable: int
    system: int
    memory: int
    history: int
    reserve: int
    complexity: str


class ChatMessage(BaseModel):
    role: str
    content: str


class ContextOut(BaseModel):
    messages: list[ChatMessage]
    items: list[ContextItemOut]
    dropped: list[ContextItemOut]
    history: list[TurnOut]
    tokens: int
    plan: PlanOut


class PurgeOut(BaseModel):
    records: int
    versions: int
    vectors: int
    jobs: int
    cache_entries: int
    remaining: int


class RunReportOut(BaseModel):
    """What a run of the user's jobs did: every job it ``claimed`` ends in exactly one of
    ``done``, ``retried``, ``failed``, ``lost``, ``revoked`` and ``given_back``, so they add
    up to ``claimed``; ``waiting`` counts jobs another worker still held when the run
    returned (not claimed by it)."""

    done: int
    retried: int
    failed: int
    errors: list[str]
    claimed: int = 0
    lost: int = 0
    revoked: int = 0
    given_back: int = 0
    waiting: int = 0

    @classmethod
    def of(cls, report: RunReport) -> RunReportOut:
        return cls(
            done=report.done,
            retried=report.retried,
            failed=report.failed,
            errors=report.errors,
            claimed=report.claimed,
            lost=report.lost,
            revoked=report.revoked,
            given_back=report.given_back,
            waiting=report.waiting,
        )


class JobOut(BaseModel):
    id: str
    kind: str
    session: str | None
    status: str
    attempts: int
    last_error: str | None
    created_at: str
    run_after: str

    @classmethod
    def of(cls, job: Job) -> JobOut:
        return cls(
            id=job.id,
            kind=job.kind,
            session=job.session,
            status=str(job.status),
            attempts=job.attempts,
            last_error=job.last_error,
            created_at=job.created_at.isoformat(),
            run_after=job.run_after.isoformat(),
        )


class Jobs(BaseModel):
    jobs: list[JobOut]


class TaskDone(BaseModel):
    task: RecordOut
    episode: RecordOut
    lessons: list[str]


class ImportOut(BaseModel):
    imported: int
    skipped: int
    reembedded: int
    renamed: int = 0  # of imported: kept under a new id beside a record holding theirs
    versions: int = 0  # earlier versions written with the imported records


class Stats(BaseModel):
    model_config = ConfigDict(extra="allow")
    records: int
    active: int
    deleted: int
    by_type: dict[str, int]
    pending_jobs: int
    failed_jobs: int


class LayerItemOut(BaseModel):
    record: RecordOut
    details: dict[str, Any]

    @classmethod
    def of(cls, item: LayerItem) -> LayerItemOut:
        return cls(record=RecordOut.of(item.record), details=item.details)


class LayersOut(BaseModel):
    short_term: list[LayerItemOut]
    mid_term: list[LayerItemOut]
    summaries: list[LayerItemOut]
    facts: list[LayerItemOut]
    episodes: list[LayerItemOut]
    key: list[LayerItemOut]
    tasks: list[LayerItemOut]
    notes: list[LayerItemOut]
    counts: dict[str, int]

    @classmethod
    def of(cls, v: LayersView) -> LayersOut:
        def items(xs: list[LayerItem]) -> list[LayerItemOut]:
            return [LayerItemOut.of(x) for x in xs]

        return cls(
            short_term=items(v.short_term),
            mid_term=items(v.mid_term),
            summaries=items(v.summaries),
            facts=items(v.facts),
            episodes=items(v.episodes),
            key=items(v.key),
            tasks=items(v.tasks),
            notes=items(v.notes),
            counts=v.counts,
        )


class WhoAmI(BaseModel):
    key_id: str
    tenant: str
    role: str
    user: str | None = Field(None, description="The user the key is bound to (None: service)")
    roles: list[str] = Field(default_factory=list, description="Its access-control roles")


class AccessIn(Request):
    """Who besides the user may read a record (seed 003); omitted fields stay as they are."""

    visibility: VisibilityName | None = None
    allowed_users: list[Id] | None = Field(None, max_length=1000)
    allowed_roles: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(
        None, max_length=100
    )


class Health(BaseModel):
    status: str


class ErrorBody(BaseModel):
    code: str
    message: str
    fields: list[str] = Field(default_factory=list)


class ErrorOut(BaseModel):
    error: ErrorBody


# --- the layer services and maintenance ---------------------------------------------------
MAX_DOCUMENT = MAX_DOCUMENT_CHARS  # characters, as the library's ingest; the body limit first
FactKey = Annotated[str, Field(min_length=1, max_length=128)]
Tag = Annotated[str, Field(min_length=1, max_length=256)]
# memstrata.policies.forgetting.POLICY_NAMES (tests/server check they are the same)
PolicyName = Literal[
    "default", "capacity", "decay", "exponential", "hotness", "hybrid", "importance", "time"
]


class FactIn(Request):
    """A profile fact (``memstrata.llm.models.ExtractedFact``) and where it came from."""

    category: Annotated[str, Field(min_length=1, max_length=64)] = Field(
        description="preference, identity, relation, ..."
    )
    key: FactKey = Field(description='What the fact is about: "location", "likes_tea"')
    value: Annotated[str, Field(min_length=1, max_length=2000)]
    confidence: float = Field(
        ge=0,
        le=1,
        description="A different value replaces the current one only with a higher "
        "confidence; otherwise it is recorded as a conflict and the value is kept.",
    )
    evidence: Annotated[str, Field(max_length=MAX_TEXT)] = Field(
        "", description="The sentence it came from"
    )
    replaces: Annotated[str, Field(max_length=2000)] = Field(
        "", description="A value the user says they left (it ends the fact that holds it)"
    )
    ended: bool = Field(
        False,
        description="The user says this value no longer holds and gives no new one: the "
        'current fact holding it ends ("location: no longer Berlin"); any later value '
        "replaces the ending",
    )
    source_ids: list[Id] = Field(
        default_factory=list, max_length=1000, description="Records it came from"
    )
    expires_at: Time | None = Field(None, description="After this the fact no longer holds")
    source: SourceName = "explicit_user_input"
    observed_at: Time | None = Field(None, description="When the user said it; default now")


class FactUpsertOut(BaseModel):
    action: Literal["inserted", "confirmed", "replaced", "conflict", "unchanged", "earlier"] = (
        Field(
            description="inserted: a new key; confirmed: the same value again (mentions + 1, "
            "confidence up); replaced: a new value won (previous is the version it ended); "
            "conflict: the value was kept and this one recorded in its conflicts; unchanged: "
            "the same source_ids were seen before; earlier: said before the current value "
            "began, so stored in the history (previous) until the next value began"
        )
    )
    fact: RecordOut = Field(description="The key's current fact afterwards")
    previous: RecordOut | None = Field(
        None, description="The version it superseded (earlier: the value stored in the history)"
    )


class FactQueryIn(Request):
    query: Text | None = Field(None, description="Most similar first; without: most confident")
    limit: int | None = Field(None, ge=1, le=1000, description="Default: the layer's (20)")
    min_confidence: float | None = Field(None, ge=0, le=1, description="Default: 0.6")


class RecallIn(Request):
    query: Text
    k: int | None = Field(None, ge=1, le=1000, description="Default: the layer's (3)")
    session: Id | None = None


class EpisodeHitOut(BaseModel):
    score: float
    similarity: float
    record: RecordOut

    @classmethod
    def of(cls, hit: EpisodeHit) -> EpisodeHitOut:
        return cls(score=hit.score, similarity=hit.similarity, record=RecordOut.of(hit.record))


class EpisodeHits(BaseModel):
    hits: list[EpisodeHitOut]


class FeedbackIn(Request):
    text: Text = Field(description="What the user said about how something went")
    source_ids: list[Id] = Field(default_factory=list, max_length=1000)
    session: Id | None = None


class SuggestIn(Request):
    query: Text = Field(description="The new task's goal")


class SuggestionOut(BaseModel):
    subtasks: list[str]
    strategy: str
    success_rate: float
    similarity: float
    reason: str
    pattern: RecordOut

    @classmethod
    def of(cls, s: Suggestion) -> SuggestionOut:
        return cls(
            subtasks=list(s.subtasks),
            strategy=s.strategy,
            success_rate=s.confidence,
            similarity=s.similarity,
            reason=s.reason,
            pattern=RecordOut.of(s.pattern),
        )


class SuggestOut(BaseModel):
    suggestion: SuggestionOut | None = Field(
        description="A proven decomposition to reuse (null: none is similar and reliable)"
    )


class WarningsIn(Request):
    text: Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]
    limit: int = Field(500, ge=1, le=100_000, description="Failure patterns looked at")


class FailureWarningOut(BaseModel):
    pattern: str
    mitigation: str
    severity: int
    matched: list[str]
    record: RecordOut

    @classmethod
    def of(cls, w: FailureWarning) -> FailureWarningOut:
        return cls(
            pattern=w.pattern,
            mitigation=w.mitigation,
            severity=w.severity,
            matched=list(w.matched),
            record=RecordOut.of(w.record),
        )


class WarningsOut(BaseModel):
    warnings: list[FailureWarningOut]


class FailurePatternIn(Request):
    pattern: Text
    indicators: list[Annotated[str, Field(min_length=1, max_length=256)]] = Field(
        min_length=1, max_length=100, description="Words whose presence in a task warns"
    )
    mitigation: Text
    severity: int = Field(3, ge=1, le=5)


class KnowledgeIn(Request):
    text: Annotated[str, Field(min_length=1, max_length=MAX_DOCUMENT)]
    qa_id: Id | None = Field(None, description="The document's id; default a new one")
    title: Text | None = None
    importance: float = Field(0.5, ge=0, le=1)
    tags: list[Tag] = Field(default_factory=list, max_length=100)
    session: Id | None = None


class DocumentOut(BaseModel):
    qa_id: str
    title: str | None
    text: str = Field(description="The chunks joined in order, overlaps removed")
    chunks: list[RecordOut]


class ForgetIn(Request):
    ids: list[Id] = Field(min_length=1, max_length=1000)
    reason: Annotated[str, Field(min_length=1, max_length=1000)] = "explicit request"


class LogEntryOut(BaseModel):
    record_id: str
    action: str
    policy: str
    reason: str
    score: float
    at: datetime

    @classmethod
    def of(cls, e: LogEntry) -> LogEntryOut:
        return cls(
            record_id=e.record_id,
            action=e.action,
            policy=e.policy,
            reason=e.reason,
            score=e.score,
            at=e.at,
        )


class ForgetOut(BaseModel):
    forgotten: list[LogEntryOut]


class MaintainIn(Request):
    policy: PolicyName = "default"
    dry_run: bool = Field(False, description="Decide and report; change nothing")
    consolidate: bool = Field(True, description="Also merge near-duplicates, refresh summaries")
    now: Time | None = Field(None, description="Run as of this time (default: now)")


class MaintenanceOut(BaseModel):
    scope: str
    policy: str
    dry_run: bool
    scanned: int
    forgotten: int
    downgraded: int
    preserved: int
    purged: int
    merged: int
    refreshed: int
    rederived: int
    decay_updated: int
    skipped: int
    counters_swept: int = Field(
        0, description="Counter rows of past days and rate windows deleted, store-wide"
    )
    jobs_swept: int = Field(
        0, description="Finished (done) jobs past their retention deleted, store-wide"
    )
    log: list[LogEntryOut]

    @classmethod
    def of(cls, r: MaintenanceReport) -> MaintenanceOut:
        return cls.model_validate({**r.as_dict(), "log": [LogEntryOut.of(e) for e in r.log]})


class ImportanceByTagIn(Request):
    tag: Tag
    importance: float = Field(ge=0, le=1)
