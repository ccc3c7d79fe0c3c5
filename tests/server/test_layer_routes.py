"""The layer services and maintenance over HTTP (facts, episodes, procedures, knowledge,
forget, maintain, importance by tag), each answer compared with what the library itself
returns for the same scope."""

from __future__ import annotations

from typing import Any

from memstrata import Filters, Scope
from memstrata.layers.knowledge_types import rejoin
from memstrata.llm.models import ExtractedFact
from memstrata.policies.forgetting import POLICY_NAMES
from memstrata.records import MemoryRecord
from memstrata.server.dto import FactIn, PolicyName

from .conftest import Served

U = "/v1/users/alice"
ALICE = Scope("acme", "alice")


def _ids(records: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(r["id"], r["version"]) for r in records]


def _lib(records: list[MemoryRecord]) -> list[tuple[str, int]]:
    return [(r.id, r.version) for r in records]


def _fact(s: Served, secret: str, **fields: object) -> dict[str, Any]:
    body = {"category": "identity", "key": "location", **fields}
    r = s.client.post(f"{U}/facts", headers=s.h(secret), json=body)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def test_fact_upserts_report_what_the_conflict_rules_decided(served: Served) -> None:
    m = served.member
    first = _fact(served, m, value="Paris", confidence=0.7, source_ids=["m1"])
    assert first["action"] == "inserted" and first["previous"] is None
    assert first["fact"]["content"]["structured"]["value"] == "Paris"
    again = _fact(served, m, value="paris ", confidence=0.7, source_ids=["m2"])
    assert again["action"] == "confirmed" and again["fact"]["id"] == first["fact"]["id"]
    assert again["fact"]["content"]["structured"]["mentions"] == 2
    assert again["fact"]["confidence"] == 0.75
    unsure = _fact(served, m, value="Lyon", confidence=0.5, source_ids=["m3"])
    assert unsure["action"] == "conflict" and unsure["fact"]["id"] == first["fact"]["id"]
    assert unsure["fact"]["content"]["structured"]["conflicts"][0]["value"] == "Lyon"
    seen = _fact(served, m, value="Lyon", confidence=0.5, source_ids=["m3"])
    assert seen["action"] == "unchanged" and seen["fact"]["version"] == unsure["fact"]["version"]
    moved = _fact(
        served, m, value="Berlin", confidence=0.9, evidence="I moved to Berlin", source_ids=["m4"]
    )
    assert moved["action"] == "replaced" and moved["fact"]["id"] != first["fact"]["id"]
    assert moved["previous"]["id"] == first["fact"]["id"]
    assert moved["previous"]["superseded_by"] == moved["fact"]["id"]

    # what the library holds for the same scope
    current = served.memory.facts.get(ALICE, "location")
    assert current is not None and current.id == moved["fact"]["id"]
    h = served.h(m)
    got = served.client.get(f"{U}/facts/location", headers=h).json()
    assert (got["id"], got["version"]) == (current.id, current.version)
    history = served.client.get(f"{U}/facts/location/history", headers=h).json()["records"]
    assert _ids(history) == _lib(served.memory.facts.history(ALICE, "location"))
    assert {v["content"]["structured"]["value"] for v in history} == {"Paris", "Berlin"}
    assert served.client.get(f"{U}/facts/employer", headers=h).status_code == 404
    assert served.client.get(f"{U}/facts/employer/history", headers=h).json()["records"] == []


def test_a_fact_marked_ended_ends_the_value_it_names(served: Served) -> None:
    m = served.member
    first = _fact(served, m, value="Berlin", confidence=0.9, source_ids=["m1"])
    other = _fact(served, m, value="Rome", confidence=0.1, ended=True, source_ids=["m2"])
    assert other["action"] == "unchanged"  # the current value is not Rome
    ended = _fact(served, m, value="Berlin", confidence=0.1, ended=True, source_ids=["m3"])
    assert ended["action"] == "replaced" and ended["previous"]["id"] == first["fact"]["id"]
    assert ended["fact"]["content"]["raw"] == "location: no longer Berlin"
    assert ended["fact"]["content"]["structured"]["ended"] is True
    back = _fact(served, m, value="Berlin", confidence=0.1, source_ids=["m4"])
    assert back["action"] == "replaced" and back["previous"]["id"] == ended["fact"]["id"]


def test_fact_lists_and_relevance_match_the_library(served: Served) -> None:
    m = served.member
    _fact(served, m, value="Lisbon", confidence=0.9)
    _fact(served, m, key="employer", value="Acme Bakery", confidence=0.4)
    _fact(
        served,
        m,
        category="preference",
        key="likes_tea",
        value="green tea",
        confidence=0.8,
        expires_at="2026-02-01T00:00:00Z",  # before the served clock: expired already
    )
    h = served.h(m)
    listed = served.client.get(f"{U}/facts", headers=h).json()["records"]
    assert _ids(listed) == _lib(served.memory.facts.all(ALICE))
    assert {r["content"]["structured"]["key"] for r in listed} == {"location", "employer"}
    sure = served.client.get(f"{U}/facts", headers=h, params={"min_confidence": 0.5}).json()
    assert _ids(sure["records"]) == _lib(served.memory.facts.all(ALICE, min_confidence=0.5))
    assert len(sure["records"]) == 1

    for body in ({}, {"query": "where does she live"}, {"limit": 1, "min_confidence": 0.3}):
        r = served.client.post(f"{U}/facts/relevant", headers=h, json=body)
        assert r.status_code == 200, r.text
        expected = served.memory.facts.relevant(
            ALICE,
            body.get("query"),
            limit=body.get("limit"),
            min_confidence=body.get("min_confidence"),
        )
        assert _ids(r.json()["records"]) == _lib(expected), body
    assert served.client.get(f"{U}/facts/likes_tea", headers=h).status_code == 404
    # a fact key named like a route is still that key's fact
    _fact(served, m, key="relevant", value="yes", confidence=0.9)
    assert served.client.get(f"{U}/facts/relevant", headers=h).json()["content"]["raw"] == (
        "relevant: yes"
    )


def test_episodes_feedback_recall_and_a_sessions_episode(served: Served) -> None:
    h = served.h(served.member)
    r = served.client.post(
        f"{U}/episodes/feedback",
        headers=h,
        json={"text": "The Lisbon trip plan was perfect", "source_ids": ["m9"]},
    )
    assert r.status_code == 201, r.text
    fb = r.json()
    assert fb["type"] == "episode" and fb["importance"] == 0.9 and fb["source_ids"] == ["m9"]
    assert served.memory.get(ALICE, fb["id"]).content.structured["kind"] == "feedback"

    for text in ("We planned the Lisbon trip", "Book the train on Friday"):
        r = served.client.post(
            f"{U}/sessions/s1/messages", headers=h, json={"role": "user", "content": text}
        )
        assert r.status_code == 201
    assert served.client.get(f"{U}/episodes/sessions/s1", headers=h).status_code == 404
    assert served.client.post(f"{U}/sessions/s1/end", headers=h).json()["failed"] == 0
    got = served.client.get(f"{U}/episodes/sessions/s1", headers=h)
    assert got.status_code == 200, got.text
    episode = served.memory.episodes.conversation_episode(ALICE.with_session("s1"))
    assert episode is not None and got.json()["id"] == episode.id

    r = served.client.post(f"{U}/episodes/recall", headers=h, json={"query": "Lisbon trip", "k": 5})
    assert r.status_code == 200, r.text
    hits = r.json()["hits"]
    expected = served.memory.episodes.recall(ALICE, "Lisbon trip", 5)
    assert [(x["record"]["id"], x["score"]) for x in hits] == [
        (e.record.id, e.score) for e in expected
    ]
    assert {fb["id"], episode.id} <= {x["record"]["id"] for x in hits}
    default_k = served.client.post(f"{U}/episodes/recall", headers=h, json={"query": "trip"})
    assert len(default_k.json()["hits"]) == len(served.memory.episodes.recall(ALICE, "trip"))


def test_procedures_failures_warnings_and_a_proven_plan(served: Served) -> None:
    h = served.h(served.member)
    r = served.client.post(
        f"{U}/procedures/failures",
        headers=h,
        json={
            "pattern": "Calling the billing API in a loop",
            "indicators": ["billing", "loop"],
            "mitigation": "Batch the calls and back off on 429",
            "severity": 4,
        },
    )
    assert r.status_code == 201, r.text
    rec = r.json()
    assert rec["type"] == "procedure" and rec["content"]["structured"]["severity"] == 4
    text = "retry the billing export in a loop until it works"
    r = served.client.post(f"{U}/procedures/warnings", headers=h, json={"text": text})
    [warning] = r.json()["warnings"]
    [lib] = served.memory.procedures.warnings(ALICE, text)
    assert warning["record"]["id"] == lib.record.id == rec["id"]
    assert warning["matched"] == lib.matched and warning["severity"] == 4
    quiet = served.client.post(f"{U}/procedures/warnings", headers=h, json={"text": "say hi"})
    assert quiet.json()["warnings"] == []

    goal = "Book a flight to Lisbon"
    assert served.client.post(
        f"{U}/procedures/suggest", headers=h, json={"query": goal}
    ).json() == {"suggestion": None}
    t = served.client.post(
        f"{U}/sessions/s1/task", headers=h, json={"goal": goal, "steps": ["search", "pay"]}
    )
    assert t.status_code == 201
    for i in (0, 1):
        step = served.client.post(
            f"{U}/sessions/s1/task/steps/{i}", headers=h, json={"status": "completed"}
        )
        assert step.status_code == 200
    done = served.client.post(
        f"{U}/sessions/s1/task/complete", headers=h, json={"success": True, "outcome": "booked"}
    )
    assert done.status_code == 200
    r = served.client.post(f"{U}/procedures/suggest", headers=h, json={"query": goal})
    suggestion = r.json()["suggestion"]
    lib_suggestion = served.memory.procedures.suggest(ALICE, goal)
    assert suggestion is not None and lib_suggestion is not None
    assert suggestion["subtasks"] == lib_suggestion.subtasks == ["search", "pay"]
    assert suggestion["pattern"]["id"] == lib_suggestion.pattern.id
    assert suggestion["success_rate"] == lib_suggestion.confidence == 1.0


def test_knowledge_is_chunked_and_read_back_whole(served: Served) -> None:
    h = served.h(served.member)
    text = " ".join(
        f"Paragraph {i} of the Lisbon guide: trams, tiles and pastries." for i in range(600)
    )
    r = served.client.post(
        f"{U}/knowledge",
        headers=h,
        json={"text": text, "qa_id": "guide", "title": "Lisbon guide", "tags": ["travel"]},
    )
    assert r.status_code == 201, r.text
    doc = r.json()
    assert doc["qa_id"] == "guide" and doc["title"] == "Lisbon guide"
    assert len(doc["chunks"]) > 1 and doc["text"] == text
    assert all(c["type"] == "knowledge" and c["tags"] == ["travel"] for c in doc["chunks"])
    stored = served.memory.list(
        ALICE, filters={"types": ["knowledge"]}, limit=1000, newest_first=False
    )
    assert [c["id"] for c in doc["chunks"]] == [s.id for s in stored]
    got = served.client.get(f"{U}/knowledge/guide", headers=h).json()
    assert got == doc
    assert rejoin(stored) == [("guide", got["text"])]
    assert served.client.get(f"{U}/knowledge/missing", headers=h).status_code == 404
    # without a qa_id the document gets a new one
    r = served.client.post(f"{U}/knowledge", headers=h, json={"text": "Short note on trams"})
    assert r.status_code == 201 and r.json()["qa_id"] and r.json()["title"] is None


def _add(s: Served, content: str, **extra: object) -> str:
    r = s.client.post(f"{U}/memories", headers=s.h(s.member), json={"content": content, **extra})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def test_forget_soft_deletes_with_a_log_and_restore_brings_back(served: Served) -> None:
    a, b = _add(served, "Alice's old phone number"), _add(served, "Alice's old address")
    keep = _add(served, "Alice likes jazz")
    h = served.h(served.member)
    r = served.client.post(
        f"{U}/forget", headers=h, json={"ids": [a, b, a], "reason": "user asked"}
    )
    assert r.status_code == 200, r.text
    entries = r.json()["forgotten"]
    assert [e["record_id"] for e in entries] == [a, b]
    assert {(e["action"], e["policy"], e["reason"]) for e in entries} == {
        ("forget", "explicit", "user asked")
    }
    for rid in (a, b):
        assert served.memory.get(ALICE, rid, include_deleted=True).status.value == "deleted"
    assert served.memory.get(ALICE, keep).status.value == "active"
    events = served.client.get(
        "/v1/audit", headers=served.h(served.admin), params={"action": "forget"}
    ).json()["events"]
    assert {e["record_ids"][0] for e in events} == {a, b}
    assert {e["actor"] for e in events} == {f"key:{served.member.split('_')[1]}"}
    assert served.client.post(f"{U}/memories/{a}/restore", headers=h).json()["status"] == "active"
    # forgetting it again, or a forgotten one, is a 404 that forgets nothing
    r = served.client.post(f"{U}/forget", headers=h, json={"ids": [keep, b]})
    assert r.status_code == 404
    assert served.memory.get(ALICE, keep).status.value == "active"


def _snapshot(s: Served) -> list[tuple[str, int, str, float]]:
    return [
        (r.id, r.version, r.status.value, r.importance)
        for r in s.memory.store.list(
            ALICE, Filters(include_deleted=True, include_superseded=True), limit=10_000
        )
    ]


def test_maintain_dry_run_changes_nothing_and_reports_like_the_library(served: Served) -> None:
    for i in range(3):
        _add(
            served,
            f"Passing thought number {i} about nothing",
            importance=0.05,
            source="implicit_inference",  # what the user said is never forgotten by a policy
        )
    _add(served, "Alice is allergic to peanuts", importance=0.9, source="implicit_inference")
    before = _snapshot(served)
    when = "2027-06-01T00:00:00Z"  # a pass fifteen months on, when the thoughts are cold
    r = served.client.post(
        f"{U}/maintain",
        headers=served.h(served.member),
        json={"dry_run": True, "now": when, "policy": "hybrid"},
    )
    assert r.status_code == 200, r.text
    report = r.json()
    assert _snapshot(served) == before
    lib = served.memory.maintain(ALICE, policy="hybrid", dry_run=True, now=when)
    assert {k: report[k] for k in lib.as_dict()} == lib.as_dict()
    assert [(e["record_id"], e["action"]) for e in report["log"]] == [
        (e.record_id, e.action) for e in lib.log
    ]
    assert report["dry_run"] is True and report["scanned"] == 4 and report["forgotten"] >= 1
    assert _snapshot(served) == before

    # the pass itself: admin only; then what the dry run said is what happened
    r = served.client.post(
        f"{U}/maintain", headers=served.h(served.admin), json={"now": when, "policy": "hybrid"}
    )
    assert r.status_code == 200, r.text
    done = r.json()
    assert done["dry_run"] is False and done["forgotten"] == report["forgotten"]
    for e in done["log"]:
        if e["action"] == "forget":
            rec = served.memory.get(ALICE, e["record_id"], include_deleted=True)
            assert rec.status.value == "deleted"


def test_importance_by_tag_versions_every_tagged_record(served: Served) -> None:
    tagged = [_add(served, f"Project note {i}", tags=["project-x"]) for i in range(2)]
    other = _add(served, "Unrelated note", tags=["misc"])
    r = served.client.post(
        f"{U}/importance-by-tag",
        headers=served.h(served.member),
        json={"tag": "project-x", "importance": 0.95},
    )
    assert r.status_code == 200, r.text
    records = r.json()["records"]
    assert sorted(x["id"] for x in records) == sorted(tagged)
    for rid in tagged:
        rec = served.memory.get(ALICE, rid)
        assert rec.importance == 0.95 and rec.version == 2
    assert served.memory.get(ALICE, other).version == 1
    nothing = served.client.post(
        f"{U}/importance-by-tag",
        headers=served.h(served.member),
        json={"tag": "no-such-tag", "importance": 0.1},
    )
    assert nothing.status_code == 200 and nothing.json()["records"] == []


def test_the_request_models_mirror_the_librarys_names_and_limits() -> None:
    assert set(PolicyName.__args__) == set(POLICY_NAMES)  # type: ignore[attr-defined]
    ours, theirs = FactIn.model_json_schema(), ExtractedFact.model_json_schema()
    for field in ("category", "key", "value", "replaces", "confidence"):
        mine, lib = ours["properties"][field], theirs["properties"][field]
        for limit in ("minLength", "maxLength", "minimum", "maximum"):
            assert mine.get(limit) == lib.get(limit), (field, limit)


def test_the_same_routes_over_a_sync_memory(served: Served) -> None:
    """``create_app(Memory(...))``: each layer call runs the sync twin on a worker thread."""
    from fastapi.testclient import TestClient

    from memstrata.server import create_app
    from memstrata.server.app import Limits

    app = create_app(served.memory, served.keys, limits=Limits(rate=0), mcp=False)
    h = served.h(served.admin)
    with TestClient(app) as client:
        r = client.post(
            f"{U}/facts",
            headers=h,
            json={"category": "identity", "key": "pet", "value": "a cat", "confidence": 0.8},
        )
        assert r.status_code == 200 and r.json()["action"] == "inserted", r.text
        fact = served.memory.facts.get(ALICE, "pet")
        assert fact is not None and fact.id == r.json()["fact"]["id"]
        assert client.get(f"{U}/facts/pet/history", headers=h).json()["records"][0]["id"] == (
            fact.id
        )
        r = client.post(f"{U}/knowledge", headers=h, json={"text": "Cats sleep a lot."})
        assert r.status_code == 201
        assert client.get(f"{U}/knowledge/{r.json()['qa_id']}", headers=h).json() == r.json()
        r = client.post(f"{U}/maintain", headers=h, json={"dry_run": True})
        assert r.status_code == 200 and r.json()["scanned"] == 2
        r = client.post(f"{U}/forget", headers=h, json={"ids": [fact.id]})
        assert [e["record_id"] for e in r.json()["forgotten"]] == [fact.id]
        assert served.memory.facts.get(ALICE, "pet") is None
