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
    dictionary (~150 ms) while the query is embedded.

    Through a caller every store scores a record on its own words, with statistics over
    what the caller may read (:mod:`memstrata.store.caller_bm25`): a reply is indexed under
    the words of the question before it (:mod:`memstrata.search.reply_terms`), which may
    not be shared (view27). Until session 28 this module read a caller's candidates' texts
    and searched once more per query word a matched message lacked, to take those words
    out of the scores; the statistics still counted them."""
    terms = tokenize(query)
    if not terms:
        return []
    whole = await store.lexical_search(scope, terms, pool, filters)
    subs = entity_queries(query) if split_entities else []
    if not subs:
        return whole
    lists = [whole]
    for sub in subs:
        sub_terms = tokenize(sub)
        if sub_terms:
            lists.append(await store.lexical_search(scope, sub_terms, pool, filters))
    return merge_lists(lists, pool)
