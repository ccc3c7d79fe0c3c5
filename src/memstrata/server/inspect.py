"""What each layer holds for one user: the data behind the web inspector (``/ui``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..filters import Filters
from ..layers.mid_term import heat
from ..records import MemoryRecord, RecordType
from ..scope import Scope
from .calls import Call, awaited

if TYPE_CHECKING:
    from ..aio import AsyncMemory

__all__ = ["LayerItem", "LayersView", "layers_view"]


@dataclass(frozen=True, slots=True)
class LayerItem:
    record: MemoryRecord
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LayersView:
    """Newest first within each layer; ``counts`` are totals, the lists are cut to a limit."""

    short_term: list[LayerItem]
    mid_term: list[LayerItem]
    summaries: list[LayerItem]
    facts: list[LayerItem]
    episodes: list[LayerItem]
    key: list[LayerItem]
    tasks: list[LayerItem]
    notes: list[LayerItem]
    counts: dict[str, int]


async def layers_view(
    mem: AsyncMemory, scope: Scope, limit: int = 50, *, call: Call = awaited
) -> LayersView:
    """Every layer of ``scope`` (a session narrows short-term turns and tasks to it).

    ``mem`` is an ``AsyncMemory``; a sync ``Memory`` with ``call=in_thread`` (each of its
    calls on a worker thread, see :mod:`memstrata.server.calls`)."""

    async def of(scope: Scope, rtype: RecordType) -> list[MemoryRecord]:
        return await call(mem.list, scope, filters=Filters(types=frozenset({rtype})), limit=limit)

    user = scope.user_scope
    now = mem.clock.now()
    cfg = mem.layers.ctx.config
    if scope.session:
        turns = (await call(mem.layers.short_term.window, scope))[-limit:]
        turns.reverse()
    else:
        turns = await of(user, RecordType.MESSAGE)
    clusters = (await call(mem.layers.mid_term.clusters, user))[:limit]
    max_len = max((int(c.content.structured.get("count", 0)) for c in clusters), default=0)
    mid: list[LayerItem] = []
    for c in clusters:
        s = c.content.structured
        last = s.get("last_visit")
        last_visit = datetime.fromisoformat(last) if isinstance(last, str) else c.updated_at
        mid.append(
            LayerItem(
                c,
                {
                    "hits": int(s.get("hits", 0)),
                    "visits": int(s.get("visits", 0)),
                    "members": int(s.get("count", 0)),
                    "heat": round(
                        heat(
                            int(s.get("visits", 0)),
                            int(s.get("count", 0)),
                            last_visit,
                            now,
                            max_interaction_length=max_len,
                            recency_hours=cfg.heat_recency_hours,
                        ),
                        4,
                    ),
                    "promoted_key": s.get("promoted_key"),
                },
            )
        )
    facts = []
    for f in await of(user, RecordType.FACT):
        s = f.content.structured
        facts.append(
            LayerItem(
                f,
                {
                    "key": s.get("key"),
                    "value": s.get("value"),
                    "category": s.get("category"),
                    "confidence": f.confidence,
                    "mentions": int(s.get("mentions", 1)),
                    "versions": f.version,
                    "conflicts": len(s.get("conflicts", []) or []),
                },
            )
        )
    key = [
        LayerItem(
            k, {"origin": k.metadata.get("origin"), "priority": k.metadata.get("priority", 0)}
        )
        for k in (await call(mem.key.list, user))[:limit]
    ]
    task_scope = scope if scope.session else user
    tasks = [
        LayerItem(
            t,
            {
                "status": t.metadata.get("task_status"),
                "goal": t.content.structured.get("goal"),
                "steps": t.content.structured.get("steps", []),
            },
        )
        for t in await of(task_scope, RecordType.TASK)
    ]
    counts = {
        name: await call(mem.store.count, user, Filters(types=frozenset({rtype})))
        for name, rtype in (
            ("messages", RecordType.MESSAGE),
            ("clusters", RecordType.CLUSTER),
            ("summaries", RecordType.SUMMARY),
            ("facts", RecordType.FACT),
            ("episodes", RecordType.EPISODE),
            ("key", RecordType.KEY),
            ("tasks", RecordType.TASK),
            ("notes", RecordType.NOTE),
        )
    }
    return LayersView(
        short_term=[LayerItem(t) for t in turns],
        mid_term=mid,
        summaries=[
            LayerItem(s, {"kind": s.metadata.get("summary_kind")})
            for s in await of(user, RecordType.SUMMARY)
        ],
        facts=facts,
        episodes=[LayerItem(e) for e in await of(user, RecordType.EPISODE)],
        key=key,
        tasks=tasks,
        notes=[
            LayerItem(n, {"tags": list(n.tags), "importance": n.importance})
            for n in await call(
                mem.list,
                user,
                filters=Filters(types=frozenset({RecordType.NOTE, RecordType.KNOWLEDGE})),
                limit=limit,
            )
        ],
        counts=counts,
    )
