"""The search pipeline: candidates from the store, fusion, score terms, MMR, top-k.

Candidate generation is the store's job (it knows its indexes); everything after is pure
and identical for every store. The lexical and dense lists are fetched concurrently.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime

import numpy as np

from ..embedder.base import Embedder
from ..filters import Filters
from ..scope import Scope
from ..store.base import Candidate, Store
from .config import SearchConfig
from .fusion import Fused, reciprocal_rank_fusion, weighted_fusion
from .hit import SearchHit, layer_of
from .mmr import mmr_order
from .scoring import access_heat, recency
from .tokenize import tokenize

__all__ = ["search"]

_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memstrata-search")


def _candidates(store: Store, embedder: Embedder, scope: Scope, query: str, pool: int,
                filters: Filters, config: SearchConfig) -> dict[str, list[Candidate]]:
    lists: dict[str, list[Candidate]] = {}
    lexical = None
    if config.mode in ("hybrid", "lexical"):
        terms = tokenize(query)
        if terms:
            lexical = _POOL.submit(store.lexical_search, scope, terms, pool, filters)
    if config.mode in ("hybrid", "dense"):
        vector = embedder.embed_batch([query], query=True)[0]
        lists["dense"] = store.vector_search(scope, vector, pool, filters)
    if config.mode in ("hybrid", "lexical"):
        lists["lexical"] = lexical.result() if lexical is not None else []
    return lists


def _fuse(lists: dict[str, list[Candidate]], config: SearchConfig) -> list[Fused]:
    weights = {"lexical": config.lexical_weight, "dense": config.dense_weight}
    if config.fusion == "weighted":
        return weighted_fusion(lists, weights)
    return reciprocal_rank_fusion(lists, weights, k=config.rrf_k)


def search(store: Store, embedder: Embedder, scope: Scope, query: str, *, top_k: int,
           filters: Filters, config: SearchConfig, now: datetime,
           explain: bool = False) -> list[SearchHit]:
    pool = max(config.min_pool, config.pool_factor * top_k)
    lists = _candidates(store, embedder, scope, query, pool, filters, config)
    fused = _fuse(lists, config)
    by_id = {r.id: r for r in store.get_many(scope, [f.id for f in fused])}
    scored: list[tuple[float, Fused, dict[str, float]]] = []
    for f in fused:
        rec = by_id.get(f.id)
        if rec is None or f.score < config.min_relevance:
            continue
        terms = {
            "relevance": f.score,
            "recency": recency(rec.observed_at, now, config.half_life_days),
            "importance": rec.importance,
            "access": access_heat(rec, config.hot_accesses),
        }
        final = (f.score + config.recency_weight * terms["recency"]
                 + config.importance_weight * terms["importance"]
                 + config.access_weight * terms["access"])
        scored.append((final, f, terms))
    scored.sort(key=lambda t: (-t[0], t[1].id))

    penalties: dict[str, float] = {}
    if config.mmr_lambda is not None and len(scored) > 1:
        texts = [by_id[f.id].text for _, f, _ in scored]
        vectors = np.asarray(embedder.embed_batch(texts), dtype=np.float32)
        order = mmr_order([s for s, _, _ in scored], vectors, top_k, config.mmr_lambda)
        penalties = {scored[i][1].id: p for i, p in order}
        scored = [scored[i] for i, _ in order]
    chosen = scored[:top_k]

    ids = [f.id for _, f, _ in chosen]
    if ids:
        store.touch(scope, ids, now)
    hits: list[SearchHit] = []
    for final, f, terms in chosen:
        rec = replace(by_id[f.id], access_count=by_id[f.id].access_count + 1,
                      last_accessed_at=now)
        explanation = None
        if explain:
            explanation = {
                "lexical_rank": f.ranks.get("lexical"),
                "lexical_bm25": f.raw.get("lexical"),
                "dense_rank": f.ranks.get("dense"),
                "dense_cosine": f.raw.get("dense"),
                **terms,
                "recency_weight": config.recency_weight,
                "importance_weight": config.importance_weight,
                "access_weight": config.access_weight,
                "mmr_redundancy": penalties.get(f.id),
                "final": final,
            }
        hits.append(SearchHit(rec, final, layer_of(rec.type),
                              rec.source_ids or (rec.id,), explanation))
    return hits
