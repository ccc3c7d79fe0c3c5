"""The hot responses' JSON, built once: records, search hits and contexts.

A route that returns a pydantic model pays three times: the model is built from the
library's objects (validating every field), FastAPI serialises it, and the bytes are sent.
For the requests an agent makes on every turn (a message, a search, a context) the routes
build the JSON-safe dicts below directly and serialise them in pydantic-core's Rust
encoder (:class:`JsonAnswer`); a context of 69 items cost 0.33 ms through its models and
0.16 ms this way. The routes keep their ``response_model`` (:mod:`.dto`), so the OpenAPI
schema is unchanged, and ``tests/server/test_answers.py`` checks that every body here
validates as its model and serialises to the same JSON as the model would.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any

from pydantic_core import to_json
from starlette.responses import Response

from ..codec import record_to_dict
from ..context.assemble import AssembledContext, ContextItem
from ..records import MemoryRecord
from ..search.hit import SearchHit

__all__ = ["JsonAnswer", "context_body", "hit_body", "record_body", "records_body"]


class JsonAnswer(Response):
    """``application/json`` from plain dicts and lists, encoded in Rust (pydantic-core).

    A NaN or infinity becomes ``null`` (FastAPI's own JSON refuses them with a 500)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return to_json(content)


def record_body(record: MemoryRecord) -> dict[str, Any]:
    """:class:`~memstrata.server.dto.RecordOut`'s JSON."""
    return record_to_dict(record)


def records_body(records: list[MemoryRecord]) -> dict[str, Any]:
    """:class:`~memstrata.server.dto.Records`' JSON."""
    return {"records": [record_to_dict(r) for r in records]}


def hit_body(hit: SearchHit) -> dict[str, Any]:
    """:class:`~memstrata.server.dto.HitOut`'s JSON."""
    return {
        "score": float(hit.score),
        "layer": hit.layer,
        "source_ids": list(hit.source_ids),
        "explanation": dict(hit.explanation) if hit.explanation is not None else None,
        "record": record_to_dict(hit.record),
    }


@functools.lru_cache(maxsize=16384)
def _utc_iso(at: datetime) -> str:
    return at.isoformat()


def _iso(at: datetime | None) -> str | None:
    """``at.isoformat()``, from a bounded cache for UTC times (the store's): a context's
    150-200 items and dropped ones are mostly the same records request after request, and
    ``isoformat`` (0.7 us) was half of what building a context's JSON cost. Only UTC times
    are cached: equal times in two zones compare equal but print differently."""
    if at is None:
        return None
    return _utc_iso(at) if at.tzinfo is UTC else at.isoformat()


def _item(it: ContextItem) -> dict[str, Any]:
    return {
        "block": it.block,
        "layer": it.layer,
        "score": float(it.score),
        "record_id": it.record_id,
        "source_ids": it.source_ids,  # a tuple: to_json writes it as the same array
        "text": it.text,
        "tokens": it.tokens,
        "observed_at": _iso(it.observed_at),
    }


def context_body(built: AssembledContext) -> dict[str, Any]:
    """:class:`~memstrata.server.dto.ContextOut`'s JSON."""
    p = built.plan
    return {
        "messages": [{"role": m["role"], "content": m["content"]} for m in built.messages],
        "items": [_item(i) for i in built.items],
        "dropped": [_item(i) for i in built.dropped],
        "history": [
            {"role": h.role, "content": h.content, "record_id": h.record_id} for h in built.history
        ],
        "tokens": built.tokens,
        "plan": {
            "total": p.total,
            "usable": p.usable,
            "system": p.system,
            "memory": p.memory,
            "history": p.history,
            "reserve": p.reserve,
            "complexity": p.complexity,
        },
    }
