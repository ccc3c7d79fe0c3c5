"""``build_context``: hierarchical retrieval from every layer, queried concurrently, then
:func:`assemble` (pure) fits it to the budget.

Hierarchical fetch (seed 002 §8.5): the recent turns (short-term window), the semantic hits
(hybrid search over past turns, episodes, clusters, knowledge), and the summaries — each item
tagged with its layer and provenance, deduplicated by record id and by turns already present
in the recent window, and capped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from ..records import MemoryRecord
from ..scope import Scope
from ..search.hit import SearchHit
from .assemble import AssembledContext, ContextItem, HistoryTurn, assemble
from .budget import allocate, estimate_task

__all__ = ["ContextRequest", "ContextSources", "build"]

_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="memstrata-context")
_DIGESTS = frozenset({"summary", "episode", "cluster"})


class ContextSources(Protocol):
    """What each layer contributes; ``Memory`` implements it over its layer services."""

    def key(self, scope: Scope) -> list[MemoryRecord]: ...
    def working(self, scope: Scope) -> tuple[MemoryRecord, str] | None: ...
    def history(self, scope: Scope) -> list[MemoryRecord]: ...
    def summaries(self, scope: Scope, limit: int) -> list[MemoryRecord]: ...
    def facts(self, scope: Scope, query: str, limit: int) -> list[tuple[MemoryRecord, float]]: ...
    def relevant(self, scope: Scope, query: str, limit: int) -> list[SearchHit]: ...


@dataclass(frozen=True, slots=True)
class ContextRequest:
    scope: Scope
    query: str | None
    token_budget: int
    system_prompt: str | None = None
    reserve_ratio: float | None = None
    relevant_k: int | None = None   # default: as many as the budget could hold (≥ 30)
    summaries_k: int = 3
    facts_k: int = 20

    @property
    def relevant_limit(self) -> int:
        if self.relevant_k is not None:
            return self.relevant_k
        return max(30, min(300, self.token_budget // 25))


def _speaker_text(rec: MemoryRecord) -> str:
    speaker = rec.metadata.get("speaker") if isinstance(rec.metadata, dict) else None
    name = speaker or (rec.role.value if rec.role else None)
    if not name or rec.type.value != "message" or rec.text.startswith(f"{name}:"):
        return rec.text
    return f"{name}: {rec.text}"


def _items(req: ContextRequest, got: dict[str, Any], window_ids: set[str]) -> list[ContextItem]:
    items: list[ContextItem] = []
    seen: set[str] = set()

    def add(block: str, rec: MemoryRecord, score: float, layer: str, text: str | None = None,
            priority: int = 0) -> None:
        if rec.id in seen:
            return
        seen.add(rec.id)
        items.append(ContextItem(block, text or _speaker_text(rec), layer, score, rec.id,
                                 rec.source_ids or (rec.id,), rec.observed_at, priority))

    for rank, rec in enumerate(got["key"]):
        origin_user = rec.metadata.get("origin", "user") == "user"
        add("key", rec, 1.0 - rank * 1e-3, "key", priority=3 if origin_user else 2)
    working = got["working"]
    if working is not None:
        add("working", working[0], 1.0, "working", text=working[1], priority=1)
    # A summary, episode or cluster made only of turns that are shown anyway repeats them.
    shown = set(window_ids) | {h.record.id for h in got["relevant"]
                               if h.record.type.value == "message"}

    def redundant(rec: MemoryRecord) -> bool:
        return (rec.type.value in _DIGESTS and bool(rec.source_ids)
                and set(rec.source_ids) <= shown)

    # The newest summaries are background: they fill what relevant memories leave (a
    # summary that is relevant to the query arrives through the search with its own score).
    for rec in got["summaries"]:
        if not redundant(rec):
            add("summaries", rec, 0.05, "summaries")
    for rec, score in got["facts"]:
        add("facts", rec, score, "semantic")
    for hit in got["relevant"]:
        if hit.record.type.value == "message" and hit.record.id in window_ids:
            continue  # already in the recent turns
        if not redundant(hit.record):
            add("relevant", hit.record, hit.score, hit.layer)
    return items


def build(sources: ContextSources, req: ContextRequest, count: Callable[[str], int]
          ) -> AssembledContext:
    scope = req.scope
    user_scope = scope.user_scope.with_agent(scope.agent)
    jobs: dict[str, Future[Any]] = {
        "key": _POOL.submit(sources.key, user_scope),
        "working": _POOL.submit(sources.working, scope) if scope.session else None,  # type: ignore[dict-item]
        "history": _POOL.submit(sources.history, scope) if scope.session else None,  # type: ignore[dict-item]
        "summaries": _POOL.submit(sources.summaries, user_scope, req.summaries_k),
    }
    if req.query:
        jobs["facts"] = _POOL.submit(sources.facts, user_scope, req.query, req.facts_k)
        jobs["relevant"] = _POOL.submit(sources.relevant, user_scope, req.query,
                                        req.relevant_limit)
    got: dict[str, Any] = {"facts": [], "relevant": [], "working": None, "history": []}
    for name, fut in jobs.items():
        if fut is not None:
            got[name] = fut.result()
    history_records: Sequence[MemoryRecord] = got["history"]
    history = [HistoryTurn(r.role.value if r.role else "user", _speaker_text(r), r.observed_at,
                           r.id) for r in history_records]
    window_ids = {r.id for r in history_records}
    complexity, knowledge = estimate_task(req.query or "")
    plan = allocate(req.token_budget, complexity=complexity, knowledge_need=knowledge,
                    conversation_length=len(history), reserve_ratio=req.reserve_ratio)
    return assemble(plan=plan, system_prompt=req.system_prompt, query=req.query,
                    items=_items(req, got, window_ids), history=history, count=count)
