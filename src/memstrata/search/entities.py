"""Questions that join several named entities, split into one question per entity (pure).

"What have Caroline and Melanie both painted?" asks about two people; BM25 over the whole
question ranks first the turns that name the commoner of the two (or both), and the other
person's turns can fall below the budget. Each entity's own question ("What have Caroline
both painted?", "What have Melanie both painted?") finds that entity's best turns, and the
lexical list keeps, for every turn, its best normalised score over the whole question and
the per-entity questions (:func:`merge_lists`), so the top of each appears near the top.

Entities are names joined by a conjunction: in English capitalised words ("Caroline and
Melanie", "Ana, Bo and Cy"); in Chinese person or place names as jieba tags them (``nr``,
``ns``) joined by 和 / 与 / 跟 / 同 / 及 / 、. Anything else is not split.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..store.base import Candidate
from .fusion import min_max

__all__ = ["entity_queries", "merge_lists"]

_NAME = r"[A-Z][\w'’-]*"
_EN_GROUP = re.compile(
    rf"\b({_NAME}(?:\s*,\s*{_NAME})*)\s*,?\s+(?:and|&|or)\s+({_NAME})\b",
)
_EN_NOT_NAMES = frozenset("I What When Where Who Whom Whose Why How Which Did Do Does".split())
_ZH_JOIN = frozenset("和 与 跟 同 及 、".split())
_ZH_NAME_TAGS = frozenset({"nr", "ns", "nrt", "nz"})
_MAX_ENTITIES = 4


def _english(query: str) -> list[str]:
    for m in _EN_GROUP.finditer(query):
        names = [n.strip() for n in m.group(1).split(",")] + [m.group(2)]
        names = [n for n in names if n not in _EN_NOT_NAMES]
        if len(set(names)) < 2:
            continue
        span = (m.start(), m.end())
        out = []
        for name in dict.fromkeys(names):
            sub = f"{query[: span[0]]}{name}{query[span[1] :]}"
            out.append(" ".join(sub.split()))
        return out[:_MAX_ENTITIES]
    return []


def _chinese(query: str) -> list[str]:
    import rjieba

    tagged: list[tuple[str, str]] = list(rjieba.tag(query))
    for i, (_, tag) in enumerate(tagged):
        if tag not in _ZH_NAME_TAGS:
            continue
        names = [i]
        j = i + 1
        while j + 1 < len(tagged) and tagged[j][0] in _ZH_JOIN:
            if tagged[j + 1][1] not in _ZH_NAME_TAGS:
                break
            names.append(j + 1)
            j += 2
        if len(names) < 2 or len({tagged[k][0] for k in names}) < 2:
            continue
        head = "".join(w for w, _ in tagged[:i])
        tail = "".join(w for w, _ in tagged[j:])
        subs = dict.fromkeys(f"{head}{tagged[k][0]}{tail}" for k in names)
        return list(subs)[:_MAX_ENTITIES]
    return []


def entity_queries(query: str) -> list[str]:
    """One question per entity when ``query`` joins two or more names; else empty."""
    if any("\u4e00" <= ch <= "\u9fff" for ch in query):
        return _chinese(query)
    return _english(query)


def merge_lists(lists: Sequence[Sequence[Candidate]], k: int) -> list[Candidate]:
    """One lexical list from several: each scored by its best min-max normalised score
    over the lists it is in (1.0 = the top of some list), best first, ties by best rank
    in any list, then by first appearance; at most ``k``."""
    best: dict[str, float] = {}
    rank: dict[str, int] = {}
    for cands in lists:
        for c, norm in min_max(cands):
            if norm > best.get(c.id, -1.0):
                best[c.id] = norm
        for r, c in enumerate(cands):
            rank[c.id] = min(r, rank.get(c.id, r))
    order = {cid: i for i, cid in enumerate(best)}
    ranked = sorted(best.items(), key=lambda kv: (-kv[1], rank[kv[0]], order[kv[0]]))
    return [Candidate(cid, score) for cid, score in ranked[:k]]
