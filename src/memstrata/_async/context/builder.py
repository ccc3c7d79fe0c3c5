"""``build_context``: hierarchical retrieval from every layer, queried concurrently, then
:func:`assemble` (pure) fits it to the budget.

Hierarchical fetch (seed 002 §8.5): the recent turns (short-term window), the semantic hits
(hybrid search over past turns, episodes, clusters, knowledge), and the summaries — each item
tagged with its layer and provenance, deduplicated by record id and by turns already present
in the recent window, and capped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, tzinfo
from functools import lru_cache
from typing import Any, Protocol

from memstrata._async.search.hybrid import AsyncRankedHits
from memstrata._async.store.base import Vector
from memstrata.aio.search_tasks import CONTEXT_POOL, join, spawn  # async-only
from memstrata.context.answer_types import AnswerType, asked_type, holds_type, names_in
from memstrata.context.assemble import AssembledContext, ContextItem, HistoryTurn, assemble
from memstrata.context.budget import allocate, asks_overview, estimate_task
from memstrata.context.config import local
from memstrata.context.ctx_request import ContextRequest
from memstrata.context.dates import format_date
from memstrata.context.fact_rank import rank_facts
from memstrata.context.question_turns import question_share
from memstrata.context.reactions import reaction_share
from memstrata.context.relative import annotate_relative_dates
from memstrata.context.roles import addresses_assistant
from memstrata.context.speakers import named_speakers
from memstrata.context.standing import Standing
from memstrata.context.temporal import Period, resolve_period
from memstrata.context.trim import trim_turn
from memstrata.records import MemoryRecord, RecordType, Role
from memstrata.scope import Scope
from memstrata.search.hit import SearchHit, layer_of
from memstrata.search.tokenize import tokenize
from memstrata.store.types import RecordView, speaker_of
from memstrata.tokens import estimate_tokens
from memstrata.traces import keeps_words

# sync: from memstrata.search.search_tasks import CONTEXT_POOL, join, spawn

__all__ = ["ContextRequest", "AsyncContextSources", "build"]

# Where the sync twin runs its concurrent reads (module-level: the bench swaps it); the
# async source runs them as tasks and has no pool (None).
_POOL = CONTEXT_POOL
# Compared by identity or set membership: an enum's ``.value`` is a slow descriptor, read
# ~1,200 times per build over 200 candidates.
_DIGESTS = frozenset({RecordType.SUMMARY, RecordType.EPISODE, RecordType.CLUSTER})
_MESSAGE, _FACT, _ASSISTANT = RecordType.MESSAGE, RecordType.FACT, Role.ASSISTANT
_ROLE_NAMES = {role: role.value for role in Role}

# A candidate as the context renders it: a decoded record, or (the search's hits, when the
# store reads views) its view, which holds every field the context shows.
Shown = MemoryRecord | RecordView


class AsyncContextSources(Protocol):
    """What each layer contributes; ``Memory`` implements it over its layer services."""

    async def standing(
        self, scope: Scope, user_scope: Scope, summaries: int | None
    ) -> Standing: ...
    async def embed_query(self, scope: Scope, query: str) -> Vector: ...
    async def facts(self, scope: Scope, vector: Vector, limit: int) -> list[MemoryRecord]: ...
    async def relevant(
        self,
        scope: Scope,
        query: str,
        limit: int,
        vector: Vector,
        *,
        facts: bool = False,
        period: Period | None = None,
        clusters: bool = True,
    ) -> list[SearchHit]: ...
    async def ranked(
        self, scope: Scope, query: str, limit: int, vector: Vector, *, facts: bool, clusters: bool
    ) -> AsyncRankedHits: ...
    async def clusters(
        self, scope: Scope, vector: Vector, limit: int
    ) -> list[tuple[MemoryRecord, float]]: ...
    async def records(self, scope: Scope, ids: Sequence[str]) -> list[MemoryRecord]: ...
    async def shown(self, scope: Scope, records: Sequence[Shown]) -> None: ...
    async def neighbours(
        self, scope: Scope, record: MemoryRecord, after: bool
    ) -> list[MemoryRecord]: ...


def _speaker_text(rec: Shown, text: str | None = None) -> str:
    """``text`` (the record's own by default) after its speaker's name."""
    body = rec.text if text is None else text
    speaker = rec.speaker if isinstance(rec, RecordView) else speaker_of(rec.metadata)
    name = speaker or (_ROLE_NAMES[rec.role] if rec.role else None)
    if not name or rec.type is not _MESSAGE or rec.text.startswith(f"{name}:"):
        return body
    return f"{name}: {body}"


def _trimmed(req: ContextRequest, text: str, memo: dict[str, str]) -> str:
    """An assistant turn's words as shown: a long one cut to the sentences sharing the
    question's terms (``ContextConfig.trim_turns_over``; context/trim.py). ``memo`` (one per
    build) keeps each text's cut: replies that repeat one another are cut once."""
    over = req.config.trim_turns_over
    if not over or not req.query or estimate_tokens(text) <= over:
        return text
    if addresses_assistant(req.query):
        return text  # what the assistant said is asked: its replies stay whole
    cut = memo.get(text)
    if cut is None:
        cut = memo[text] = trim_turn(text, _terms(req.query), _terms)
    return cut


# The caches below are bounded in entries, and a turn may be 100,000 characters (800 MB for
# 8,192 of them): only texts up to _KEPT_CHARS are kept; a longer one is worked out at each
# call, as tokens.estimate_tokens does (session 29).
_KEPT_CHARS = 4096


def _terms(text: str) -> frozenset[str]:
    """Lexical terms of a question or of a sentence of a long turn (the same turns come back
    as candidates build after build: kept, if short)."""
    return _kept_terms(text) if len(text) <= _KEPT_CHARS else frozenset(tokenize(text))


@lru_cache(maxsize=4096)
def _kept_terms(text: str) -> frozenset[str]:
    """Holds users' sentences: a purge empties it (:func:`forget_texts`)."""
    return frozenset(tokenize(text))


@lru_cache(maxsize=8192)
def _dated(text: str, at: datetime, zone: tzinfo | None) -> str:
    """``text`` with its relative dates resolved (:func:`annotate_relative_dates`), kept
    between builds: the same turns are offered build after build, and resolving is two
    scans of the text (regular expressions when a hint is found). ``zone`` is part of the
    key because equal instants in two zones fall on different days. Holds users'
    sentences: a purge empties it (:func:`forget_texts`)."""
    return annotate_relative_dates(text, at)


def _resolved(text: str, at: datetime | None) -> str:
    if at is None:
        return text
    if len(text) > _KEPT_CHARS:
        return annotate_relative_dates(text, at)
    return _dated(text, at, at.tzinfo)


def _question_share(text: str) -> float:
    """:func:`question_share`, a turn that asks kept between builds (most turns have no
    question mark and cost one scan; the others are split into sentences)."""
    if "?" not in text and "？" not in text:
        return 0.0
    return _asked(text) if len(text) <= _KEPT_CHARS else question_share(text)


@lru_cache(maxsize=8192)
def _asked(text: str) -> float:
    """Holds users' sentences: a purge empties it (:func:`forget_texts`)."""
    return question_share(text)


def _reaction_share(text: str) -> float:
    """:func:`reaction_share`, kept between builds like :func:`_question_share`."""
    return _reacted(text) if len(text) <= _KEPT_CHARS else reaction_share(text)


@lru_cache(maxsize=8192)
def _reacted(text: str) -> float:
    """Holds users' sentences: a purge empties it (:func:`forget_texts`)."""
    return reaction_share(text)


@lru_cache(maxsize=8192)
def _kept_names(text: str) -> frozenset[str]:
    """Holds users' sentences: a purge empties it (:func:`forget_texts`)."""
    return names_in(text)


@lru_cache(maxsize=8192)
def _kept_time(text: str) -> bool:
    """Holds users' sentences: a purge empties it (:func:`forget_texts`)."""
    return holds_type("time", text)


def _holds(kind: AnswerType, text: str, speakers: frozenset[str]) -> bool:
    """:func:`holds_type`, a turn's names and dates kept between builds."""
    if len(text) > _KEPT_CHARS:
        return holds_type(kind, text, speakers)
    if kind == "time":
        return _kept_time(text)
    if kind == "name":
        return holds_type(kind, text, speakers, _kept_names(text))
    return holds_type(kind, text)


def _answer_typed(
    query: str, out: dict[str, tuple[Shown, float, str]], boost: float
) -> dict[str, tuple[Shown, float, str]]:
    """``out`` with ``boost`` added to the turns that hold what ``query`` asks for (a date
    for "when", a number for "how many", a name for "which"; context/answer_types.py)."""
    kind = asked_type(query)
    if kind is None:
        return out
    speakers = frozenset(who for rec, _, _ in out.values() if (who := _spoken_by(rec)))
    return {
        rid: (rec, score + boost, layer)
        if _is_message(rec) and _holds(kind, rec.text, speakers)
        else (rec, score, layer)
        for rid, (rec, score, layer) in out.items()
    }


@keeps_words
def forget_texts() -> None:
    """Drop the sentences this process keeps between builds (a purge does, through
    :func:`memstrata.traces.forget_words`)."""
    _kept_terms.cache_clear()
    _dated.cache_clear()
    _asked.cache_clear()
    _reacted.cache_clear()
    _kept_names.cache_clear()
    _kept_time.cache_clear()


def _is_assistant(rec: Shown) -> bool:
    return rec.role is _ASSISTANT


def _penalised(
    rec: Shown, score: float, question: float, assistant: float, reaction: float
) -> float:
    """A turn's ``score`` less ``question`` × its share that only asks and ``reaction`` ×
    its share that only reacts, then less ``assistant`` when an assistant said it. An
    assistant's turn is not read for reactions: its replies speak to the user ("You could
    try the Rothfuss novel") and say what it recommended, and ``assistant_penalty`` already
    weighs them (0 when the question asks what the assistant said)."""
    if question:
        score -= question * _question_share(rec.text)
    if assistant and _is_assistant(rec):
        return score - assistant
    if reaction and not _is_assistant(rec):
        score -= reaction * _reaction_share(rec.text)
    return score


def _is_message(rec: Shown) -> bool:
    return rec.type is _MESSAGE


def _spoken_by(rec: Shown) -> str | None:
    """The speaker a turn's metadata names (``None`` without one, or for a non-turn)."""
    if rec.type is not _MESSAGE:
        return None
    who = rec.speaker if isinstance(rec, RecordView) else speaker_of(rec.metadata)
    return who if isinstance(who, str) and who else None


def _speaker_penalised(
    query: str, out: dict[str, tuple[Shown, float, str]], penalty: float
) -> dict[str, tuple[Shown, float, str]]:
    """``out`` with ``penalty`` taken from the turns of speakers ``query`` does not name,
    when it names some of the candidates' speakers but not all (context/speakers.py)."""
    speakers = {who for rec, _, _ in out.values() if (who := _spoken_by(rec)) is not None}
    if len(speakers) < 2:
        return out
    named = named_speakers(query, speakers)
    if not named or named == speakers:
        return out
    return {
        rid: (rec, score - penalty, layer)
        if (who := _spoken_by(rec)) is not None and who not in named
        else (rec, score, layer)
        for rid, (rec, score, layer) in out.items()
    }


def _asks(text: str) -> bool:
    return "?" in text or "？" in text


def _scored_hits(
    req: ContextRequest,
    hits: Sequence[tuple[Shown, float, str]],
    dated: Sequence[SearchHit],
    extra: Mapping[str, tuple[MemoryRecord, float]],
) -> list[tuple[Shown, float, str]]:
    """Every candidate once, with its final score: the hit's (``hits``: record or view,
    score, layer), plus the session and date boosts, plus turns brought in by digests and
    neighbours (at their own, lower score), minus the question penalty of a turn that asks
    and the assistant penalty."""
    cfg = req.config
    out: dict[str, tuple[Shown, float, str]] = {}
    for rec, score, layer in hits:
        out.setdefault(rec.id, (rec, score, layer))
    if dated and cfg.temporal_boost:
        top = max(h.score for h in dated) or 1.0
        for h in dated:
            shown, score, layer = out.get(h.record.id, (h.record, 0.0, h.layer))
            out[h.record.id] = (shown, score + cfg.temporal_boost * h.score / top, layer)
    for rid, (rec, score) in extra.items():
        if rid not in out:
            out[rid] = (rec, score, layer_of(rec.type))
    to_assistant = cfg.assistant_penalty
    if to_assistant and addresses_assistant(req.query or ""):
        to_assistant = 0.0  # the question asks what the assistant said
    reaction = cfg.reaction_penalty
    if cfg.question_penalty or to_assistant or reaction:
        out = {
            rid: (
                rec,
                _penalised(rec, score, cfg.question_penalty, to_assistant, reaction),
                layer,
            )
            if _is_message(rec)
            else (rec, score, layer)
            for rid, (rec, score, layer) in out.items()
        }
    if cfg.speaker_penalty and req.query:
        out = _speaker_penalised(req.query, out, cfg.speaker_penalty)
    if cfg.answer_type_boost and req.query:
        out = _answer_typed(req.query, out, cfg.answer_type_boost)
    if cfg.session_boost:
        per_session: dict[str, float] = {}
        for rec, score, _ in out.values():
            if rec.session and _is_message(rec):
                per_session[rec.session] = per_session.get(rec.session, 0.0) + score
        best = max(per_session.values(), default=0.0) or 1.0
        out = {
            rid: (
                rec,
                score + cfg.session_boost * per_session.get(rec.session or "", 0.0) / best,
                layer,
            )
            for rid, (rec, score, layer) in out.items()
        }
    return sorted(out.values(), key=lambda t: -t[1])


def _items(
    req: ContextRequest,
    got: dict[str, Any],
    window_ids: set[str],
    offered: dict[str, Shown],
) -> list[ContextItem]:
    """The memories offered to the budget; ``offered`` receives their records by id."""
    cfg = req.config
    items: list[ContextItem] = []
    seen: set[str] = set()
    cuts: dict[str, str] = {}

    def add(
        block: str,
        rec: Shown,
        score: float,
        layer: str,
        text: str | None = None,
        priority: int = 0,
    ) -> None:
        if rec.id in seen:
            return
        seen.add(rec.id)
        offered[rec.id] = rec
        turn = rec.type is _MESSAGE
        group = (
            format_date(local(rec.observed_at, cfg), rec.text)
            if turn and cfg.compact_dates and block == "relevant"
            else None
        )
        if text is None:
            long_reply = turn and block == "relevant" and rec.role is _ASSISTANT
            text = _speaker_text(rec, _trimmed(req, rec.text, cuts) if long_reply else None)
            if turn and cfg.resolve_dates:
                text = _resolved(text, local(rec.observed_at, cfg))
        items.append(
            ContextItem(
                block,
                text,
                layer,
                score,
                rec.id,
                rec.source_ids or (rec.id,),
                local(rec.observed_at, cfg),
                priority,
                group=group,
                digest=rec.type in _DIGESTS,
            )
        )

    for rank, rec in enumerate(got["key"]):
        origin_user = rec.metadata.get("origin", "user") == "user"
        if origin_user or cfg.auto_key:
            add("key", rec, 1.0 - rank * 1e-3, "key", priority=3 if origin_user else 2)
    working = got["working"]
    if working is not None:
        add("working", working[0], 1.0, "working", text=working[1], priority=1)
    candidates: list[tuple[Shown, float, str]] = got["candidates"]
    # A summary, episode, cluster or fact made only of turns that are shown anyway repeats
    # them.
    shown = set(window_ids) | {rec.id for rec, _, _ in candidates if _is_message(rec)}

    kinds = _DIGESTS | {_FACT} if cfg.skip_facts_shown else _DIGESTS

    def redundant(rec: Shown) -> bool:
        return rec.type in kinds and bool(rec.source_ids) and set(rec.source_ids) <= shown

    # The newest summaries are background: they fill what relevant memories leave (a
    # summary that is relevant to the query arrives through the search with its own score).
    if cfg.background_summaries:
        for rec in got["summaries"]:
            if not redundant(rec):
                add("summaries", rec, 0.05, "summaries")
    for rec, score in got["facts"]:
        if not redundant(rec):
            add("facts", rec, score, "semantic")
    for rec, score, layer in candidates:
        if _is_message(rec) and rec.id in window_ids:
            continue  # already in the recent turns
        if rec.type in _DIGESTS and cfg.digests != "keep":
            continue
        if redundant(rec):
            continue
        add("facts" if rec.type is _FACT else "relevant", rec, score, layer)
    return items


async def _gather(
    sources: AsyncContextSources,
    req: ContextRequest,
    query: str,
    user_scope: Scope,
    got: dict[str, Any],
) -> None:
    """The search side: hits, hits in the period the question names, digests' and
    neighbours' turns, facts; stored into ``got``."""
    cfg = req.config
    vector = await sources.embed_query(req.scope, query)
    facts_job = (
        spawn(_POOL, sources.facts, user_scope, vector, req.facts_k)
        if cfg.facts == "similar"
        else None
    )
    clusters_job = (
        spawn(_POOL, sources.clusters, user_scope, vector, cfg.clusters)
        if cfg.clusters and not cfg.clusters_in_search and cfg.digests == "keep"
        else None
    )
    views: list[tuple[RecordView, float]] | None = None
    if req.lazy:
        ranked = await sources.ranked(
            user_scope,
            query,
            req.relevant_limit,
            vector,
            facts=cfg.facts == "search",
            clusters=cfg.clusters_in_search,
        )
        # The candidates are rendered from views: none is decoded. A store that cannot
        # read views has them decoded.
        views = await ranked.views()
        if views is None:
            await ranked.more(ranked.top_k)
        hits = ranked.hits
    else:
        hits = await sources.relevant(
            user_scope,
            query,
            req.relevant_limit,
            vector,
            facts=cfg.facts == "search",
            clusters=cfg.clusters_in_search,
        )
    dated: list[SearchHit] = []
    if cfg.temporal_boost and hits:
        anchor = local(max(h.record.observed_at for h in hits), cfg)
        period = resolve_period(query, anchor)
        if period is not None:
            dated = await sources.relevant(
                user_scope,
                query,
                max(10, req.relevant_limit // 3),
                vector,
                facts=False,
                period=period,
                clusters=cfg.clusters_in_search,
            )
    extra: dict[str, tuple[MemoryRecord, float]] = {}
    have = {h.record.id for h in hits}
    if cfg.digests == "expand":
        wanted: dict[str, float] = {}
        for h in hits:
            if h.record.type in _DIGESTS:
                for sid in h.record.source_ids:
                    if sid not in have:
                        wanted[sid] = max(wanted.get(sid, 0.0), cfg.digest_weight * h.score)
        if wanted:
            for rec in await sources.records(user_scope, list(wanted)):
                if _is_message(rec):
                    extra[rec.id] = (rec, wanted[rec.id])
    if cfg.neighbour_hits:
        top = [h for h in hits if _is_message(h.record)][: cfg.neighbour_hits]
        futures = [
            (h, spawn(_POOL, sources.neighbours, user_scope, h.record, _asks(h.text))) for h in top
        ]
        for h, fut in futures:
            for rec in await join(fut):
                if rec.id not in have:
                    score = cfg.neighbour_weight * h.score
                    if score > extra.get(rec.id, (rec, 0.0))[1]:
                        extra[rec.id] = (rec, score)
    if clusters_job is not None:
        # Below the turns the search found: a cluster's digest retells its turns.
        for rank, (rec, _) in enumerate(await join(clusters_job)):
            extra.setdefault(rec.id, (rec, cfg.cluster_score - rank * 0.01))
    found: list[tuple[Shown, float, str]] = [(h.record, h.score, h.layer) for h in hits]
    found += [(v, score, layer_of(v.type)) for v, score in views or ()]
    got["candidates"] = _scored_hits(req, found, dated, extra)
    if facts_job is not None:
        got["facts"] = _profile(req, await join(facts_job))


def _fact_text(rec: MemoryRecord) -> str:
    return rec.text


def _profile(
    req: ContextRequest, facts: Sequence[MemoryRecord]
) -> list[tuple[MemoryRecord, float]]:
    """The profile's facts (most similar to the question first) scored by the question:
    those sharing a term with it first, then each rank ``fact_step`` lower
    (context/fact_rank.py)."""
    asked = _terms(req.query) if req.query else frozenset()
    return rank_facts(facts, _fact_text, asked, _terms, req.config.fact_step)


async def build(
    sources: AsyncContextSources, req: ContextRequest, count: Callable[[str], int]
) -> AssembledContext:
    scope = req.scope
    user_scope = scope.user_scope.with_agent(scope.agent)
    summaries = req.summaries_k if req.config.background_summaries else None
    standing_job = spawn(_POOL, sources.standing, scope, user_scope, summaries)
    got: dict[str, Any] = {
        "facts": [],
        "candidates": [],
        "working": None,
        "history": [],
        "summaries": [],
    }
    if req.query:
        await _gather(sources, req, req.query, user_scope, got)
    standing: Standing = await join(standing_job)
    got["key"], got["working"] = standing.key, standing.working
    got["history"], got["summaries"] = standing.history, standing.summaries
    history_records: Sequence[MemoryRecord] = got["history"]

    def shown(rec: MemoryRecord) -> str:
        text = _speaker_text(rec)
        when = local(rec.observed_at, req.config)
        return _resolved(text, when) if req.config.resolve_dates else text

    history = [
        HistoryTurn(
            r.role.value if r.role else "user", shown(r), local(r.observed_at, req.config), r.id
        )
        for r in history_records
    ]
    window_ids = {r.id for r in history_records}
    complexity, knowledge = estimate_task(req.query or "")
    plan = allocate(
        req.token_budget,
        complexity=complexity,
        knowledge_need=knowledge,
        conversation_length=len(history),
        reserve_ratio=req.reserve_ratio,
    )
    digest_share = (
        None
        if req.config.digest_share >= 1.0 or asks_overview(req.query or "")
        else req.config.digest_share
    )

    offered: dict[str, Shown] = {}
    built = assemble(
        plan=plan,
        system_prompt=req.system_prompt,
        query=req.query,
        items=_items(req, got, window_ids, offered),
        history=history,
        count=count,
        digest_share=digest_share,
    )
    # Accesses (and cluster hits) count what the context shows, not the candidates it was
    # offered: at a 2k budget ~200 hits are asked for and a few dozen are shown.
    await sources.shown(
        user_scope, [offered[it.record_id] for it in built.items if it.record_id in offered]
    )
    return built
