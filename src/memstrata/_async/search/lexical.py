"""The lexical candidate list of one search: the store's BM25 list for the whole query and,
when the query joins several named entities (:mod:`memstrata.search.entities`), one per
entity, merged."""

from __future__ import annotations

from dataclasses import replace

from memstrata._async.store.base import AsyncStore, Candidate
from memstrata.filters import Filters
from memstrata.records import RecordType
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
    own text holds a query term, and a message's score loses what the query's other terms
    gave it (only a message is indexed under words not its own): one store search per such
    term over those messages (every store's BM25 adds up over the query's distinct terms).
    Costs a read of the candidates' texts, and those searches, for a caller's search only."""
    found = await store.lexical_search(scope, terms, pool, filters)
    if scope.caller is None or not found:
        return found
    ids = [c.id for c in found]
    views = getattr(store, "views", None)
    if views is not None:
        seen = [(v.id, v.type, v.text) for v in (await views(scope, ids)).values()]
    else:
        seen = [(r.id, r.type, r.text) for r in await store.get_many(scope, ids)]
    own = {rid: set(tokenize(text)) for rid, _, text in seen}
    kept = [c for c in found if not own.get(c.id, set()).isdisjoint(terms)]
    messages = {rid for rid, rtype, _ in seen if rtype is RecordType.MESSAGE}
    foreign = {  # per message, the query terms not its own: its score may hold them
        c.id: [t for t in dict.fromkeys(terms) if t not in own[c.id]]
        for c in kept
        if c.id in messages
    }
    foreign = {rid: ts for rid, ts in foreign.items() if ts}
    if not foreign:
        return kept
    score = {c.id: c.score for c in kept}
    for term in dict.fromkeys(t for ts in foreign.values() for t in ts):
        among = replace(filters, ids=frozenset(r for r, ts in foreign.items() if term in ts))
        for c in await store.lexical_search(scope, [term], len(among.ids or ()), among):
            score[c.id] -= c.score
    rescored = [Candidate(c.id, max(0.0, score[c.id])) for c in kept]
    return sorted(rescored, key=lambda c: -c.score)  # stable: ties keep the store's order
