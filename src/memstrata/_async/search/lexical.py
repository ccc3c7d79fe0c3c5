"""The lexical candidate list of one search: the store's BM25 list for the whole query and,
when the query joins several named entities (:mod:`memstrata.search.entities`), one per
entity, merged."""

from __future__ import annotations

from dataclasses import replace

from memstrata._async.store.base import AsyncStore, Candidate
from memstrata.filters import Filters
from memstrata.scope import Scope
from memstrata.search.entities import entity_queries, merge_lists
from memstrata.search.tokenize import tokenize

__all__ = ["lexical_candidates"]


async def lexical_candidates(
    store: AsyncStore,
    scope: Scope,
    query: str,
    pool: int,
    filters: Filters,
    *,
    split_entities: bool,
) -> list[Candidate]:
    """``store.lexical_search`` of the query's terms; with ``split_entities``, also of each
    entity's own question, merged by best normalised score (at most ``pool``).

    Tokenising here, in the search's concurrent lexical job (a worker thread in the sync
    twin, a task in the async source), lets a process's first Chinese query load jieba's
    dictionary (~150 ms) while the query is embedded."""
    terms = tokenize(query)
    if not terms:
        return []
    whole = await _own_words(store, scope, terms, pool, filters)
    subs = entity_queries(query) if split_entities else []
    if not subs:
        return whole
    lists = [whole]
    for sub in subs:
        sub_terms = tokenize(sub)
        if sub_terms:
            lists.append(await _own_words(store, scope, sub_terms, pool, filters))
    return merge_lists(lists, pool)


async def _own_words(
    store: AsyncStore, scope: Scope, terms: list[str], pool: int, filters: Filters
) -> list[Candidate]:
    """``store.lexical_search``; through a caller, scored on each candidate's own words.

    A reply is indexed under the words of the question before it
    (:mod:`memstrata.search.reply_terms`), and that question may not be shared: a caller
    matching a shared reply on them, or seeing it rise when a word of the question joins the
    query, learnt what the owner asked (view27). So a caller keeps only the candidates whose
    own text holds a query term, each scored by the sum of its own terms' BM25: one store
    search per distinct term over those candidates (every store's BM25 adds up over the
    query's distinct terms). Costs a read of the candidates' texts and one search per term
    more, for a caller's search only."""
    found = await store.lexical_search(scope, terms, pool, filters)
    if scope.caller is None or not found:
        return found
    ids = [c.id for c in found]
    views = getattr(store, "views", None)
    if views is not None:
        texts = {rid: v.text for rid, v in (await views(scope, ids)).items()}
    else:
        texts = {r.id: r.text for r in await store.get_many(scope, ids)}
    own = {rid: set(tokenize(text)) for rid, text in texts.items()}
    kept = [c for c in found if not own.get(c.id, set()).isdisjoint(terms)]
    distinct = list(dict.fromkeys(terms))
    if len(distinct) < 2 or not kept:
        return kept
    among = replace(filters, ids=frozenset(c.id for c in kept))
    score = dict.fromkeys((c.id for c in kept), 0.0)
    for term in distinct:
        for c in await store.lexical_search(scope, [term], len(kept), among):
            if term in own[c.id]:
                score[c.id] += c.score
    rescored = [Candidate(c.id, score[c.id]) for c in kept]
    return sorted(rescored, key=lambda c: -c.score)  # stable: ties keep the store's order
