"""Every library operation over HTTP, checked against what the library itself holds."""

from __future__ import annotations

import json

from memstrata import Filters, Scope

from .conftest import Served

U = "/v1/users/alice"


def _say(s: Served, text: str, session: str = "s1", role: str = "user") -> dict[str, object]:
    r = s.client.post(
        f"{U}/sessions/{session}/messages",
        json={"role": role, "content": text},
        headers=s.h(s.member),
    )
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


def test_messages_single_and_batch_are_stored_in_the_key_tenant(served: Served) -> None:
    one = _say(served, "I moved to Lisbon last week")
    r = served.client.post(
        f"{U}/sessions/s1/messages/batch",
        headers=served.h(served.member),
        json={
            "messages": [
                {"role": "assistant", "content": "How do you like Lisbon?"},
                {"role": "user", "content": "I love it", "observed_at": "2024-05-08T13:00:00Z"},
            ]
        },
    )
    assert r.status_code == 201
    batch = r.json()["records"]
    assert [b["role"] for b in batch] == ["assistant", "user"]
    assert batch[1]["observed_at"].startswith("2024-05-08T13:00:00")
    stored = served.memory.get(Scope("acme", "alice"), str(one["id"]))
    assert stored.tenant == "acme" and stored.session == "s1" and stored.type.value == "message"


def test_memory_crud_versions_history_and_conflict(served: Served) -> None:
    h = served.h(served.member)
    r = served.client.post(
        f"{U}/memories", headers=h, json={"content": "Prefers window seats", "tags": ["travel"]}
    )
    assert r.status_code == 201
    rid = r.json()["id"]
    assert served.client.get(f"{U}/memories/{rid}", headers=h).json()["version"] == 1
    r = served.client.patch(
        f"{U}/memories/{rid}",
        headers=h,
        json={"expected_version": 1, "content": "Prefers aisle seats"},
    )
    assert r.status_code == 200 and r.json()["version"] == 2
    stale = served.client.patch(
        f"{U}/memories/{rid}", headers=h, json={"expected_version": 1, "content": "lost update"}
    )
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "version_conflict"
    assert (
        served.client.get(f"{U}/memories/{rid}", headers=h).json()["content"]["raw"]
        == "Prefers aisle seats"
    )
    hist = served.client.get(f"{U}/memories/{rid}/history", headers=h).json()["records"]
    assert [v["content"]["raw"] for v in hist] == ["Prefers window seats", "Prefers aisle seats"]
    assert served.client.delete(f"{U}/memories/{rid}", headers=h).json()["status"] == "deleted"
    assert served.client.get(f"{U}/memories/{rid}", headers=h).status_code == 404
    assert (
        served.client.get(f"{U}/memories/{rid}?include_deleted=true", headers=h).status_code == 200
    )
    assert served.client.post(f"{U}/memories/{rid}/restore", headers=h).json()["status"] == "active"
    # purge is admin-only, then the record is gone for real
    assert served.client.post(f"{U}/purge", headers=h, json={"ids": [rid]}).status_code == 403
    r = served.client.post(f"{U}/purge", headers=served.h(served.admin), json={"ids": [rid]})
    assert r.status_code == 200 and r.json()["records"] == 1 and r.json()["remaining"] == 0
    assert (
        served.client.get(f"{U}/memories/{rid}?include_deleted=true", headers=h).status_code == 404
    )


def test_list_paginates_to_the_end(served: Served) -> None:
    h = served.h(served.member)
    for i in range(7):
        served.client.post(
            f"{U}/memories",
            headers=h,
            json={"content": f"note number {i} about topic {i * 13}", "dedup": False},
        )
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = served.client.get(
            f"{U}/memories?limit=3&offset={offset}&type=note", headers=h
        ).json()
        assert page["total"] == 7
        seen += [r["id"] for r in page["items"]]
        offset = page["next_offset"]
    assert len(seen) == len(set(seen)) == 7


def test_list_refuses_an_empty_tag_filter(served: Served) -> None:
    """An empty ``tag=`` names no tag (tags are never blank): 422 naming the field, as
    schemathesis's negative-data check expects (it once found the empty tag accepted)."""
    h = served.h(served.member)
    r = served.client.get(f"{U}/memories?tag=", headers=h)
    assert r.status_code == 422
    assert "tag" in r.text
    assert served.client.get(f"{U}/memories?tag=x", headers=h).status_code == 200


def test_search_with_filters_and_explain(served: Served) -> None:
    h = served.h(served.member)
    served.client.post(
        f"{U}/memories", headers=h, json={"content": "Allergic to peanuts", "tags": ["health"]}
    )
    served.client.post(
        f"{U}/memories",
        headers=h,
        json={"content": "Peanut butter is a favourite snack of her brother", "tags": ["family"]},
    )
    r = served.client.post(
        f"{U}/search",
        headers=h,
        json={"query": "peanuts allergy", "explain": True, "filters": {"tags": ["health"]}},
    )
    assert r.status_code == 200
    hits = r.json()["hits"]
    assert [x["record"]["content"]["raw"] for x in hits] == ["Allergic to peanuts"]
    terms = hits[0]["explanation"]
    assert {"lexical_bm25", "dense_cosine", "relevance", "recency", "final"} <= set(terms)
    bad = served.client.post(
        f"{U}/search", headers=h, json={"query": "x", "filters": {"colour": "red"}}
    )
    assert bad.status_code == 422 and "colour" in bad.json()["error"]["message"]


def test_context_budget_system_prompt_blocks_and_cuts(served: Served) -> None:
    h = served.h(served.member)
    for i in range(30):
        served.client.post(
            f"{U}/memories",
            headers=h,
            json={
                "content": f"Fact {i}: the user visited city {i} and liked the museums there",
                "dedup": False,
            },
        )
    _say(served, "Which museums did I like?")
    body = {
        "query": "Which museums did I like?",
        "token_budget": 300,
        "system_prompt": "You are helpful.",
        "session": "s1",
    }
    r = served.client.post(f"{U}/context", headers=h, json=body)
    assert r.status_code == 200
    ctx = r.json()
    assert ctx["tokens"] <= ctx["plan"]["usable"] <= 300
    assert ctx["messages"][0] == {"role": "system", "content": "You are helpful."}
    assert ctx["items"] and {i["block"] for i in ctx["items"]} <= {
        "key",
        "summaries",
        "facts",
        "relevant",
        "working",
    }
    assert ctx["dropped"], "a 300-token budget cannot hold 30 facts: some must be cut"
    kept = {i["record_id"] for i in ctx["items"]}
    assert not kept & {i["record_id"] for i in ctx["dropped"]}


def test_key_memory_tasks_end_session_jobs_stats_layers(served: Served) -> None:
    h = served.h(served.member)
    k = served.client.post(
        f"{U}/key-memory", headers=h, json={"text": "Ship v2 by Friday", "priority": 5}
    )
    assert k.status_code == 201
    kid = k.json()["id"]
    e = served.client.patch(
        f"{U}/key-memory/{kid}",
        headers=h,
        json={"expected_version": 1, "text": "Ship v2 by Monday"},
    )
    assert e.status_code == 200 and e.json()["version"] == 2
    listed = served.client.get(f"{U}/key-memory", headers=h).json()["records"]
    assert [x["content"]["raw"] for x in listed] == ["Ship v2 by Monday"]

    t = served.client.post(
        f"{U}/sessions/s1/task",
        headers=h,
        json={"goal": "Book a flight", "steps": ["search", "pay"]},
    )
    assert t.status_code == 201
    assert (
        served.client.post(
            f"{U}/sessions/s1/task/steps/0",
            headers=h,
            json={"status": "completed", "result": "found TP123"},
        ).status_code
        == 200
    )
    assert (
        served.client.post(
            f"{U}/sessions/s1/task/steps/9", headers=h, json={"status": "completed"}
        ).status_code
        == 422
    )
    assert (
        served.client.post(
            f"{U}/sessions/s1/task/notes", headers=h, json={"text": "window seat"}
        ).status_code
        == 200
    )
    cur = served.client.get(f"{U}/sessions/s1/task", headers=h).json()
    assert cur["content"]["structured"]["steps"][0]["status"] == "completed"
    done = served.client.post(
        f"{U}/sessions/s1/task/complete", headers=h, json={"success": True, "outcome": "booked"}
    )
    assert done.status_code == 200 and done.json()["episode"]["type"] == "episode"
    assert served.client.get(f"{U}/sessions/s1/task", headers=h).status_code == 404

    for text in ("I work as a nurse in Porto", "I have two cats", "My sister is Ana"):
        _say(served, text)
    assert served.client.get(f"{U}/jobs?status=pending", headers=h).json()["jobs"]
    report = served.client.post(f"{U}/sessions/s1/end", headers=h).json()
    assert report["done"] >= 1 and report["failed"] == 0
    assert not served.client.get(f"{U}/jobs?status=pending", headers=h).json()["jobs"]
    stats = served.client.get(f"{U}/stats", headers=h).json()
    assert stats["by_type"]["message"] == 3 and stats["pending_jobs"] == 0
    layers = served.client.get(f"{U}/layers?session=s1", headers=h).json()
    assert len(layers["short_term"]) == 3 and layers["key"] and layers["tasks"]
    assert layers["counts"]["messages"] == 3
    assert all("heat" in c["details"] for c in layers["mid_term"])
    who = served.client.get("/v1/whoami", headers=h).json()
    assert who["tenant"] == "acme" and who["role"] == "member"
    assert served.client.delete(f"{U}/key-memory/{kid}", headers=h).status_code == 204
    assert served.client.get(f"{U}/key-memory", headers=h).json()["records"] == []


def test_export_carries_history_unless_asked_not_to(served: Served) -> None:
    h = served.h(served.admin)
    made = served.client.post(f"{U}/memories", headers=h, json={"content": "Alice keeps bees"})
    rid = made.json()["id"]
    changed = served.client.patch(
        f"{U}/memories/{rid}",
        headers=h,
        json={"content": "Alice keeps two hives", "expected_version": 1},
    )
    assert changed.status_code == 200, changed.text
    full = served.client.get(f"{U}/export", headers=h)
    lines = [json.loads(x) for x in full.text.splitlines() if x.strip()]
    assert lines[0]["version"] == 3
    assert [x["past_version"]["content"]["raw"] for x in lines if "past_version" in x] == [
        "Alice keeps bees"
    ]
    assert lines[-1] == {"end": "complete", "count": 1, "past_versions": 1}
    bare = served.client.get(f"{U}/export", headers=h, params={"include_history": "false"})
    plain = [json.loads(x) for x in bare.text.splitlines() if x.strip()]
    assert plain[0]["version"] == 2 and not any("past_version" in x for x in plain)
    assert plain[-1] == {"end": "complete", "count": 1}
    imp = served.client.post(
        "/v1/users/dora/import",
        content=full.content,
        headers={**h, "content-type": "application/x-ndjson"},
    )
    assert imp.status_code == 200 and imp.json()["versions"] == 1, imp.text


def test_export_streams_jsonl_and_import_lands_in_the_callers_tenant(served: Served) -> None:
    h = served.h(served.admin)
    for i in range(5):
        served.client.post(
            f"{U}/memories", headers=h, json={"content": f"memory {i} " * 3, "dedup": False}
        )
    r = served.client.get(f"{U}/export", headers=h)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(x) for x in r.text.splitlines() if x.strip()]
    assert lines[0]["format"] == "memstrata.export"
    assert lines[-1] == {"end": "complete", "count": 5, "past_versions": 0}
    assert sorted(x["record"]["content"]["raw"] for x in lines[1:-1]) == [
        f"memory {i} " * 3 for i in range(5)
    ]
    # Import into another user of the same tenant; the file says tenant acme/user alice, and
    # a globex admin importing it must land in globex, never in acme.
    g_admin = served.keys.create("globex", role="admin").secret
    imp = served.client.post(
        "/v1/users/carol/import",
        content=r.content,
        headers={**served.h(g_admin), "content-type": "application/x-ndjson"},
    )
    assert imp.status_code == 200 and imp.json()["imported"] == 5
    assert served.memory.store.count(Scope("globex", "carol"), Filters()) == 5
    assert served.memory.store.count(Scope("acme", "carol"), Filters()) == 0
    assert served.memory.store.count(Scope("acme", "alice"), Filters()) == 5
    member = served.client.post(
        "/v1/users/carol/import", content=r.content, headers=served.h(served.member)
    )
    assert member.status_code == 403


def test_openapi_docs_health_and_metrics(served: Served) -> None:
    spec = served.client.get("/openapi.json").json()
    assert spec["openapi"].startswith("3.")
    assert all(
        p.startswith("/v1/") or p in ("/healthz", "/readyz", "/metrics") for p in spec["paths"]
    )
    assert served.client.get("/docs").status_code == 200
    assert served.client.get("/healthz").json() == {"status": "ok"}
    assert served.client.get("/readyz").json() == {"status": "ready"}
    _say(served, "hello there, I like tea")
    text = served.client.get("/metrics").text
    assert "memstrata_http_request_duration_seconds_bucket" in text
    assert 'route="/v1/users/{user}/sessions/{session}/messages"' in text
    assert "memstrata_jobs_pending 1.0" in text
