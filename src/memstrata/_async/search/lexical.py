"""The lexical candidate list of one search: the store's BM25 list for the whole query and,
when the query joins several named entities (:mod:`memstrata.search.entities`), one per
entity, merged."""

from __future__ import annotations

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
    """``store.lexical_search``; through a caller, only the candidates whose own text holds
    one of ``terms``. A reply is indexed under the words of the question before it
    (:mod:`memstrata.search.reply_terms`), and that question may not be shared: a caller
    matching a shared reply on them learnt what the owner asked (view27). One read of the
    candidates' texts (views, else records) for a caller's search."""
    found = await store.lexical_search(scope, terms, pool, filters)
    if scope.caller is None or not found:
        return found
    ids = [c.id for c in found]
    views = getattr(store, "views", None)
    if views is not None:
        texts = {rid: v.text for rid, v in (await views(scope, ids)).items()}
    else:
        texts = {r.id: r.text for r in await store.get_many(scope, ids)}
    wanted = set(terms)
    return [c for c in found if c.id in texts and not wanted.isdisjoint(tokenize(texts[c.id]))]
