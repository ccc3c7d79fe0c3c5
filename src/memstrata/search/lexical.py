"""The lexical candidate list of one search: the store's BM25 list for the whole query and,
when the query joins several named entities (:mod:`.entities`), one per entity, merged."""

from __future__ import annotations

from ..filters import Filters
from ..scope import Scope
from ..store.base import Candidate, Store
from .entities import entity_queries, merge_lists
from .tokenize import tokenize

__all__ = ["lexical_candidates"]


def lexical_candidates(
    store: Store,
    scope: Scope,
    query: str,
    pool: int,
    filters: Filters,
    *,
    split_entities: bool,
) -> list[Candidate]:
    """``store.lexical_search`` of the query's terms; with ``split_entities``, also of each
    entity's own question, merged by best normalised score (at most ``pool``).

    Tokenising here, on the search's worker thread, lets a process's first Chinese query
    load jieba's dictionary (~150 ms) while the calling thread embeds the query."""
    terms = tokenize(query)
    if not terms:
        return []
    whole = store.lexical_search(scope, terms, pool, filters)
    subs = entity_queries(query) if split_entities else []
    if not subs:
        return whole
    lists = [whole]
    for sub in subs:
        sub_terms = tokenize(sub)
        if sub_terms:
            lists.append(store.lexical_search(scope, sub_terms, pool, filters))
    return merge_lists(lists, pool)
