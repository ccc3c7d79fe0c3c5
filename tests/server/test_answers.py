"""The hot routes' JSON built directly (server/answers.py) is what their models would send."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memstrata import Memory, Message, Role, Scope
from memstrata.context.assemble import AssembledContext, ContextItem
from memstrata.search.hit import SearchHit
from memstrata.server.answers import (
    JsonAnswer,
    _item,
    context_body,
    hit_body,
    record_body,
    records_body,
)
from memstrata.server.dto import (
    ChatMessage,
    ContextItemOut,
    ContextOut,
    HitOut,
    PlanOut,
    RecordOut,
    Records,
    TurnOut,
)

from .conftest import CLOCK, Served

A = Scope("acme", "alice", session="s1")


def _same(body: dict[str, Any], model: BaseModel) -> None:
    """``body`` validates as ``model``'s class and encodes to the same JSON values."""
    sent = json.loads(JsonAnswer(body).body)
    assert sent == json.loads(model.model_dump_json())
    assert type(model).model_validate(sent) == model


# The models built field by field from the library's objects: the independent reference the
# bodies of server/answers.py are checked against (the server sends those bodies only).
def _hit_model(hit: SearchHit) -> HitOut:
    return HitOut(
        score=hit.score,
        layer=hit.layer,
        source_ids=list(hit.source_ids),
        explanation=dict(hit.explanation) if hit.explanation is not None else None,
        record=RecordOut.of(hit.record),
    )


def _item_model(it: ContextItem) -> ContextItemOut:
    return ContextItemOut(
        block=it.block,
        layer=it.layer,
        score=it.score,
        record_id=it.record_id,
        source_ids=list(it.source_ids),
        text=it.text,
        tokens=it.tokens,
        observed_at=it.observed_at.isoformat() if it.observed_at else None,
    )


def _context_model(built: AssembledContext) -> ContextOut:
    p = built.plan
    return ContextOut(
        messages=[ChatMessage(role=m["role"], content=m["content"]) for m in built.messages],
        items=[_item_model(i) for i in built.items],
        dropped=[_item_model(i) for i in built.dropped],
        history=[
            TurnOut(role=h.role, content=h.content, record_id=h.record_id) for h in built.history
        ],
        tokens=built.tokens,
        plan=PlanOut(
            total=p.total,
            usable=p.usable,
            system=p.system,
            memory=p.memory,
            history=p.history,
            reserve=p.reserve,
            complexity=p.complexity,
        ),
    )


def _memory(tmp_path: Path) -> Memory:
    mem = Memory(f"sqlite:///{tmp_path}/a.db", embedder="hashing", background=False, clock=CLOCK)
    trips = [f"I flew to Lisbon on trip {i} and ate pastéis in Belém" for i in range(40)]
    mem.add_messages(A.with_session("s0"), [Message(role=Role.USER, content=t) for t in trips])
    mem.add_messages(
        A,
        [
            Message(role=Role.USER, content="What should I eat tonight?"),
            Message(role=Role.ASSISTANT, content="Something from your trips, maybe."),
            Message(role=Role.USER, content="Remind me what I had in Lisbon."),
        ],
    )
    mem.add(
        A,
        "Alice is allergic to peanuts",
        type="fact",
        importance=0.9,
        confidence=0.75,
        tags=["health", "food"],
        metadata={"from": "intake", "n": 3, "nested": {"ok": True}},
        observed_at=datetime(2026, 2, 1, 9, 30, tzinfo=UTC),
        visibility="shared",
    )
    return mem


def test_records_hits_and_contexts_encode_as_their_models(tmp_path: Path) -> None:
    with _memory(tmp_path) as mem:
        records = mem.list(A, limit=50)
        fact = next(r for r in records if r.type.value == "fact")
        deleted = mem.delete(A, records[0].id)
        for r in [*records, fact, deleted]:
            _same(record_body(r), RecordOut.of(r))
        _same(records_body(records), Records(records=[RecordOut.of(r) for r in records]))

        for explain in (False, True):
            hits = mem.search(A, "peanuts Lisbon trip", 5, explain=explain)
            assert hits and (hits[0].explanation is not None) == explain
            for h in hits:
                _same(hit_body(h), _hit_model(h))

        built = mem.build_context(
            A, "what did I eat in Lisbon?", 400, "You are helpful.", reserve_ratio=0.1
        )
        assert built.items and built.dropped and built.history  # every list is exercised
        _same(context_body(built), _context_model(built))


def test_the_hot_routes_answer_json_with_their_status(served: Served) -> None:
    c, h = served.client, served.h(served.member)
    added = c.post(
        "/v1/users/alice/sessions/s1/messages",
        headers=h,
        json={"role": "user", "content": "I moved to Lisbon last week"},
    )
    assert added.status_code == 201
    assert added.headers["content-type"] == "application/json"
    assert RecordOut.model_validate(added.json()).content.raw == "I moved to Lisbon last week"
    batch = c.post(
        "/v1/users/alice/sessions/s1/messages/batch",
        headers=h,
        json={"messages": [{"role": "user", "content": "and I like tiles"}]},
    )
    assert batch.status_code == 201
    assert len(Records.model_validate(batch.json()).records) == 1
    found = c.post("/v1/users/alice/search", headers=h, json={"query": "Lisbon", "explain": True})
    assert found.status_code == 200 and found.json()["hits"][0]["explanation"]["final"] > 0
    context = c.post("/v1/users/alice/context", headers=h, json={"query": "Lisbon"})
    assert context.status_code == 200
    assert ContextOut.model_validate(context.json()).items
    memory = c.post("/v1/users/alice/memories", headers=h, json={"content": "likes tiles"})
    assert memory.status_code == 201
    rid = memory.json()["id"]
    got = c.get(f"/v1/users/alice/memories/{rid}", headers=h)
    assert got.status_code == 200 and got.json() == memory.json()
    listed = c.get("/v1/users/alice/memories", headers=h, params={"limit": 1})
    assert listed.status_code == 200 and listed.json()["next_offset"] == 1


def test_a_context_items_time_is_printed_in_its_own_zone() -> None:
    """UTC times are printed from a cache; an equal time in another zone (equal as a
    datetime, so a cache keyed by it alone would hand back the UTC text) keeps its offset."""
    noon = datetime(2026, 3, 1, 12, 0, 0, 250, tzinfo=UTC)
    lisbon = noon.astimezone(timezone(timedelta(hours=1)))
    assert noon == lisbon and hash(noon) == hash(lisbon)
    items = [ContextItem("relevant", "x", "notes", 0.5, observed_at=at) for at in (noon, lisbon)]
    items.append(ContextItem("relevant", "y", "notes", 0.4))
    sent = [_item(i)["observed_at"] for i in (*items, items[0])]
    assert sent == [
        "2026-03-01T12:00:00.000250+00:00",
        "2026-03-01T13:00:00.000250+01:00",
        None,
        "2026-03-01T12:00:00.000250+00:00",
    ]
    assert [json.loads(JsonAnswer(_item(i)).body) for i in items] == [
        _item_model(i).model_dump() for i in items
    ]
