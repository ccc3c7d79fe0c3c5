"""The search pipeline: candidates from the store, fusion, score terms, MMR, top-k.

Candidate generation is the store's job (it knows its indexes); everything after is pure
and identical for every store. The lexical and dense lists are fetched concurrently.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from memstrata._async.embedder.base import AsyncEmbedder
from memstrata._async.search.lexical import lexical_candidates
from memstrata._async.store.base import AsyncStore, Candidate
from memstrata.aio.search_tasks import SEARCH_POOL, join, settle, spawn  # async-only
from memstrata.filters import Filters
from memstrata.records import MemoryRecord
from memstrata.scope import Scope
from memstrata.search.config import SearchConfig
from memstrata.search.fusion import (
    Fused,
    match_scores,
    reciprocal_rank_fusion,
    weighted_fusion,
)
from memstrata.search.hit import SearchHit, layer_of
from memstrata.search.mmr import mmr_order
from memstrata.search.scoring import access_heat, recency
from memstrata.store.types import RecordView
from memstrata.validation import counted

# sync: from memstrata.search.search_tasks import SEARCH_POOL, join, settle, spawn

__all__ = ["AsyncRankedHits", "search", "search_ranked"]

# Where the sync twin runs its concurrent reads (module-level: the bench swaps it); the
# async source runs them as tasks and has no pool (None).
_POOL = SEARCH_POOL


_FIELDS = tuple(f.name for f in dataclasses.fields(MemoryRecord))


def _touched(rec: MemoryRecord, now: datetime) -> MemoryRecord:
    """``rec`` as the touch left it (access count + 1), without re-validating every field:
    the record was validated when it was decoded and only two counters change."""
    out = object.__new__(type(rec))
    fields = _FIELDS if type(rec) is MemoryRecord else [f.name for f in dataclasses.fields(rec)]
    for name in fields:
        object.__setattr__(out, name, getattr(rec, name))
    object.__setattr__(out, "access_count", counted(rec.access_count))
    object.__setattr__(out, "last_accessed_at", now)
    return out


async def _candidates(
    store: AsyncStore,
    embedder: AsyncEmbedder,
    scope: Scope,
    query: str,
    pool: int,
    filters: Filters,
    config: SearchConfig,
    vector: npt.NDArray[np.float32] | None = None,
) -> dict[str, list[Candidate]]:
    lists: dict[str, list[Candidate]] = {}
    lexical = None
    if config.mode in ("hybrid", "lexical"):
        lexical = spawn(
            _POOL,
            lexical_candidates,
            *(store, scope, query, pool, filters),
            split_entities=config.split_entities,
        )
    if config.mode in ("hybrid", "dense"):
        try:
            if vector is None:
                vector = (await embedder.embed_batch([query], query=True))[0]
            lists["dense"] = await store.vector_search(scope, vector, pool, filters)
        except BaseException:
            if lexical is not None:
                await settle(lexical)  # the error is raised with no read left running
            raise
    if config.mode in ("hybrid", "lexical"):
        lists["lexical"] = await join(lexical) if lexical is not None else []
    return lists


def _weights(config: SearchConfig) -> dict[str, float]:
    return {"lexical": config.lexical_weight, "dense": config.dense_weight}


def _fuse(lists: dict[str, list[Candidate]], config: SearchConfig) -> list[Fused]:
    """The candidates in rank order (by the fusion's ``score``)."""
    if config.fusion == "weighted":
        anchored = ("lexical",) if config.lexical_scale == "max" else ()
        return weighted_fusion(lists, _weights(config), anchored=anchored)
    return reciprocal_rank_fusion(lists, _weights(config), k=config.rrf_k)


def _needs_records(config: SearchConfig) -> bool:
    """Whether ranking reads record fields (score terms, MMR), so every candidate is loaded."""
    return bool(
        config.recency_weight
        or config.importance_weight
        or config.access_weight
        or config.mmr_lambda is not None
    )


def _terms(
    rec: MemoryRecord, relevance: float, now: datetime, config: SearchConfig
) -> tuple[float, dict[str, float]]:
    terms = {
        "relevance": relevance,
        "recency": recency(rec.observed_at, now, config.half_life_days),
        "importance": rec.importance,
        "access": access_heat(rec, config.hot_accesses),
    }
    return _with_terms(relevance, terms, config), terms


def _with_terms(base: float, terms: dict[str, float], config: SearchConfig) -> float:
    """``base`` plus the weighted score terms: the ranking's ``final`` from the fused
    relevance, a hit's reported score from its match score (the same sum, in one order)."""
    return (
        base
        + config.recency_weight * terms["recency"]
        + config.importance_weight * terms["importance"]
        + config.access_weight * terms["access"]
    )


async def _load_ranked(
    store: AsyncStore, scope: Scope, fused: list[Fused], top_k: int
) -> tuple[list[Fused], dict[str, MemoryRecord]]:
    """Records of the best ``top_k`` fused candidates only, in fused order.

    Decoding a record costs far more than ranking it, and a Chinese query (common words) or a
    large pool brings ~150 candidates, of which top_k are returned. Candidates whose record
    has gone (deleted between the two reads) are skipped and the next ones loaded.
    """
    chosen: list[Fused] = []
    by_id: dict[str, MemoryRecord] = {}
    start = 0
    while len(chosen) < top_k and start < len(fused):
        batch = fused[start : start + (top_k - len(chosen))]
        start += len(batch)
        found = {r.id: r for r in await store.get_many(scope, [f.id for f in batch])}
        for f in batch:
            if f.id in found:
                chosen.append(f)
                by_id[f.id] = found[f.id]
    return chosen, by_id


async def search(
    store: AsyncStore,
    embedder: AsyncEmbedder,
    scope: Scope,
    query: str,
    *,
    top_k: int,
    filters: Filters,
    config: SearchConfig,
    now: datetime,
    explain: bool = False,
    vector: npt.NDArray[np.float32] | None = None,
    touch: bool = True,
    ranking_scores: bool = False,
) -> list[SearchHit]:
    """Hybrid search; ``vector`` is the query's embedding when the caller already has it.

    A hit's ``score`` is its match score plus the weighted score terms (search/fusion.py
    ``match_scores``: on fixed scales, whatever else the search found), the hits in the
    ranking's order (the fused, pool-relative ``final``, unchanged by session 31).
    ``ranking_scores``: the hits carry ``final`` instead, as before session 31 (what
    ``build_context`` packs by, like :func:`search_ranked`'s).

    ``touch``: count an access on every hit returned (a search's caller sees them all).
    ``build_context`` passes ``False`` and counts only the hits it shows: most of its
    candidates never reach the context, and counting them made access heat count records
    nobody saw (and wrote ~200 counters per build). A caller's search (``Scope.caller``:
    another user reading what was shared) counts nothing: its reads must not keep the
    owner's records alive or raise their importance (until session 27 they did)."""
    touch = touch and scope.caller is None
    pool = max(config.min_pool, config.pool_factor * top_k)
    lists = await _candidates(store, embedder, scope, query, pool, filters, config, vector)
    fused = [f for f in _fuse(lists, config) if f.score >= config.min_relevance]
    scored: list[tuple[float, Fused, dict[str, float]]] = []
    if not _needs_records(config):
        ranked, by_id = await _load_ranked(store, scope, fused, top_k)
        for f in ranked:
            final, terms = _terms(by_id[f.id], f.score, now, config)
            scored.append((final, f, terms))
    else:
        by_id = {r.id: r for r in await store.get_many(scope, [f.id for f in fused])}
        for f in fused:
            rec = by_id.get(f.id)
            if rec is not None:
                final, terms = _terms(rec, f.score, now, config)
                scored.append((final, f, terms))
        # stable: equal scores keep the fused order (each side's insertion order), not
        # the order of their random ids (README, "What a hit's score means"; session 31)
        scored.sort(key=lambda t: -t[0])

    penalties: dict[str, float] = {}
    if config.mmr_lambda is not None and len(scored) > 1:
        texts = [by_id[f.id].text for _, f, _ in scored]
        vectors = np.asarray(await embedder.embed_batch(texts), dtype=np.float32)
        order = mmr_order([s for s, _, _ in scored], vectors, top_k, config.mmr_lambda)
        penalties = {scored[i][1].id: p for i, p in order}
        scored = [scored[i] for i, _ in order]
    chosen = scored[:top_k]
    if not ranking_scores or explain:  # what a hit reports: the chosen ones' alone
        match = match_scores(lists, _weights(config), [f.id for _, f, _ in chosen])
        for _, f, _ in chosen:
            f.match = match.get(f.id, 0.0)

    ids = [f.id for _, f, _ in chosen]
    if ids and touch:
        await store.touch(scope, ids, now)
    hits: list[SearchHit] = []
    for final, f, terms in chosen:
        rec = _touched(by_id[f.id], now) if touch else by_id[f.id]
        score = final if ranking_scores else _with_terms(f.match, terms, config)
        explanation = None
        if explain:
            explanation = {
                "match": f.match,
                "lexical_rank": f.ranks.get("lexical"),
                # BM25 weighs a term by the user's whole index: through a caller it told how
                # many of the owner's unshared records hold a word (until session 27)
                "lexical_bm25": f.raw.get("lexical") if scope.caller is None else None,
                "dense_rank": f.ranks.get("dense"),
                "dense_cosine": f.raw.get("dense"),
                **terms,
                "recency_weight": config.recency_weight,
                "importance_weight": config.importance_weight,
                "access_weight": config.access_weight,
                "mmr_redundancy": penalties.get(f.id),
                "final": final,
            }
        hits.append(
            SearchHit(rec, score, layer_of(rec.type), rec.source_ids or (rec.id,), explanation)
        )
    return hits


@dataclass(slots=True)
class AsyncRankedHits:
    """Up to ``top_k`` hits in rank order, decoded on demand: ``hits`` holds those decoded so
    far (in rank order), :meth:`more` decodes the next ones, :meth:`views` reads the rest as
    views without decoding any. ``build_context`` asks for one candidate per 10 tokens of
    budget and shows a few dozen; decoding all of them was most of its cost. No access is
    counted here (the caller counts what it shows)."""

    store: AsyncStore | None
    scope: Scope
    fused: list[Fused]  # the whole ranking; fused[:next] have been looked at
    top_k: int
    hits: list[SearchHit] = field(default_factory=list)
    next: int = 0

    @classmethod
    def of(cls, scope: Scope, hits: list[SearchHit]) -> AsyncRankedHits:
        """Hits already decoded (every one)."""
        return cls(None, scope, [], len(hits), list(hits))

    @property
    def done(self) -> bool:
        return len(self.hits) >= self.top_k or self.next >= len(self.fused)

    async def more(self, n: int) -> list[SearchHit]:
        """Decode up to ``n`` more hits in rank order (skipping records gone since the
        ranking); returns them."""
        new: list[SearchHit] = []
        while not self.done and len(new) < n and self.store is not None:
            want = min(n - len(new), self.top_k - len(self.hits))
            batch = self.fused[self.next : self.next + want]
            self.next += len(batch)
            found = {r.id: r for r in await self.store.get_many(self.scope, [f.id for f in batch])}
            got = [_hit(found[f.id], f.score) for f in batch if f.id in found]
            self.hits.extend(got)
            new.extend(got)
        return new

    async def views(self) -> list[tuple[RecordView, float]] | None:
        """The hits :meth:`more` would decode, in rank order with their scores, as views:
        nothing decoded (records gone since the ranking are skipped, as :meth:`more` skips
        them); ``None`` when the store cannot read views. Closes the ranking."""
        view_of = getattr(self.store, "views", None)
        if view_of is None:
            return None
        out: list[tuple[RecordView, float]] = []
        while self.next < len(self.fused) and len(self.hits) + len(out) < self.top_k:
            batch = self.fused[self.next : self.next + self.top_k - len(self.hits) - len(out)]
            self.next += len(batch)
            found: dict[str, RecordView] = await view_of(self.scope, [f.id for f in batch])
            out += [(found[f.id], f.score) for f in batch if f.id in found]
        self.next = len(self.fused)
        return out


def _hit(rec: MemoryRecord, score: float) -> SearchHit:
    return SearchHit(rec, score, layer_of(rec.type), rec.source_ids or (rec.id,))


async def search_ranked(
    store: AsyncStore,
    embedder: AsyncEmbedder,
    scope: Scope,
    query: str,
    *,
    top_k: int,
    filters: Filters,
    config: SearchConfig,
    now: datetime,
    vector: npt.NDArray[np.float32] | None = None,
) -> AsyncRankedHits:
    """:func:`search` (without touching), decoded lazily when the ranking reads no record
    field (no recency, importance or access term, no MMR: the default); otherwise every hit
    is decoded at once, as :func:`search` does."""
    if _needs_records(config):
        hits = await search(
            store,
            embedder,
            scope,
            query,
            top_k=top_k,
            filters=filters,
            config=config,
            now=now,
            vector=vector,
            touch=False,
            ranking_scores=True,
        )
        return AsyncRankedHits.of(scope, hits)
    pool = max(config.min_pool, config.pool_factor * top_k)
    lists = await _candidates(store, embedder, scope, query, pool, filters, config, vector)
    fused = [f for f in _fuse(lists, config) if f.score >= config.min_relevance]
    return AsyncRankedHits(store, scope, fused, top_k)
