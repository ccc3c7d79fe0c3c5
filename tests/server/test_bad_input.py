"""Bad input over HTTP: the right status, a message that names the fix, nothing written."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Filters, Scope

from .conftest import Served

U = "/v1/users/alice"


def _count(s: Served, tenant: str = "acme", user: str = "alice") -> int:
    return s.memory.store.count(Scope(tenant, user), Filters(include_deleted=True))


def _error(r: object) -> dict[str, object]:
    body = r.json()  # type: ignore[attr-defined]
    assert set(body) == {"error"} and {"code", "message", "fields"} <= set(body["error"])
    assert "Traceback" not in json.dumps(body)
    return body["error"]  # type: ignore[no-any-return]


def test_malformed_json_is_400_and_writes_nothing(served: Served) -> None:
    r = served.client.post(
        f"{U}/memories",
        content=b'{"content": "x",',
        headers={**served.h(served.member), "content-type": "application/json"},
    )
    assert r.status_code == 400
    assert "not valid JSON" in str(_error(r)["message"])
    assert _count(served) == 0


@pytest.mark.parametrize(
    ("body", "field", "fix"),
    [
        ({"content": 5}, "body.content", "send a string"),
        ({"content": "ok", "importance": "high"}, "body.importance", "send a number"),
        ({"content": "ok", "importance": 7}, "body.importance", "smaller"),
        ({"content": ""}, "body.content", "non-empty"),
        ({"content": "ok", "tenant": "globex"}, "body.tenant", "remove this field"),
        ({"content": "ok", "type": "gossip"}, "body.type", "allowed values"),
        ({}, "body.content", "add this field"),
        ([1, 2], "body", "JSON object"),
    ],
)
def test_wrong_types_and_unknown_fields_are_422_naming_the_field(
    served: Served, body: object, field: str, fix: str
) -> None:
    r = served.client.post(f"{U}/memories", json=body, headers=served.h(served.member))
    assert r.status_code == 422, r.text
    err = _error(r)
    assert field in err["fields"]  # type: ignore[operator]
    assert field in str(err["message"]) and fix in str(err["message"])
    assert _count(served) == 0


def test_oversized_bodies_are_413_by_length_and_when_chunked(served: Served) -> None:
    big = json.dumps({"content": "x" * (2 * 1024 * 1024)}).encode()
    r = served.client.post(
        f"{U}/memories",
        content=big,
        headers={**served.h(served.member), "content-type": "application/json"},
    )
    assert r.status_code == 413 and "larger than" in str(_error(r)["message"])

    def chunks():  # type: ignore[no-untyped-def]
        for _ in range(40):
            yield b"x" * 65536

    r = served.client.post(
        f"{U}/memories",
        content=chunks(),
        headers={**served.h(served.member), "content-type": "application/json"},
    )
    assert r.status_code == 413
    assert _count(served) == 0


def test_missing_unknown_and_revoked_keys_are_401(served: Served) -> None:
    body = {"content": "should not be stored"}
    assert served.client.post(f"{U}/memories", json=body).status_code == 401
    for bad in ("nonsense", "ms_000000000000_" + "A" * 43, served.member + "x"):
        r = served.client.post(f"{U}/memories", json=body, headers=served.h(bad))
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    key_id = served.member.split("_")[1]
    assert served.client.get("/v1/whoami", headers=served.h(served.member)).status_code == 200
    served.keys.revoke(key_id)
    r = served.client.post(f"{U}/memories", json=body, headers=served.h(served.member))
    assert r.status_code == 401 and "revoked" in str(_error(r)["message"])
    assert served.client.get("/v1/whoami", headers={"X-API-Key": served.member}).status_code == 401
    assert _count(served) == 0


def test_another_tenants_id_is_404_like_a_missing_one_and_changes_nothing(served: Served) -> None:
    r = served.client.post(
        f"{U}/memories", json={"content": "acme secret plan"}, headers=served.h(served.member)
    )
    rid = r.json()["id"]
    before = served.memory.get(Scope("acme", "alice"), rid)
    g = served.h(served.other)
    missing = served.client.get(f"{U}/memories/{'0' * 32}", headers=g)
    attempts = [
        served.client.get(f"{U}/memories/{rid}", headers=g),
        served.client.get(f"{U}/memories/{rid}?include_deleted=true", headers=g),
        served.client.patch(
            f"{U}/memories/{rid}", headers=g, json={"expected_version": 1, "content": "pwned"}
        ),
        served.client.delete(f"{U}/memories/{rid}", headers=g),
        served.client.post(f"{U}/memories/{rid}/restore", headers=g),
        served.client.get(f"{U}/memories/{rid}/history", headers=g),
        served.client.patch(
            f"{U}/key-memory/{rid}", headers=g, json={"expected_version": 1, "text": "pwned"}
        ),
        served.client.delete(f"{U}/key-memory/{rid}", headers=g),
        served.client.post(
            f"{U}/purge",
            headers=served.h(served.keys.create("globex", role="admin").secret),
            json={"ids": [rid]},
        ),
    ]
    assert missing.status_code == 404
    for r in attempts:
        assert r.status_code == 404, (r.request.method, r.request.url, r.text)
        assert _error(r)["code"] == "not_found"
    assert served.memory.get(Scope("acme", "alice"), rid) == before
    hits = served.client.post(f"{U}/search", headers=g, json={"query": "secret plan"}).json()
    assert hits["hits"] == []


@pytest.mark.parametrize("budget", [0, -5, 10**9, "lots", 2.5])
def test_absurd_budgets_are_422(served: Served, budget: object) -> None:
    r = served.client.post(
        f"{U}/context",
        json={"query": "hi", "token_budget": budget},
        headers=served.h(served.member),
    )
    assert r.status_code == 422 and "body.token_budget" in _error(r)["fields"]  # type: ignore[operator]


def test_a_budget_too_small_for_the_prompt_says_so(served: Served) -> None:
    r = served.client.post(
        f"{U}/context",
        headers=served.h(served.member),
        json={
            "query": "what do you remember about me?",
            "token_budget": 5,
            "system_prompt": "You are a careful assistant.",
        },
    )
    assert r.status_code == 422 and "raise token_budget" in str(_error(r)["message"])


def test_whitespace_ids_and_bad_filters_are_422_and_write_nothing(served: Served) -> None:
    h = served.h(served.member)
    assert (
        served.client.post("/v1/users/%20/memories", json={"content": "x"}, headers=h).status_code
        == 422
    )
    r = served.client.post(
        f"{U}/sessions/s1/messages/batch",
        headers=h,
        json={
            "messages": [
                {"role": "user", "content": "fine"},
                {"role": "wizard", "content": "bad role"},
            ]
        },
    )
    assert r.status_code == 422 and "body.messages.1.role" in _error(r)["fields"]  # type: ignore[operator]
    r = served.client.post(
        f"{U}/search", headers=h, json={"query": "x", "filters": {"observed_after": "last tuesday"}}
    )
    assert r.status_code == 422 and "observed_after" in str(_error(r)["message"])
    assert _count(served) == 0


def test_a_closed_store_is_503_with_retry_after_never_a_traceback(served: Served) -> None:
    assert served.native is not None
    served.native.store.sync.close()  # type: ignore[attr-defined]  # the served SQLite store
    r = served.client.post(
        f"{U}/search", json={"query": "anything"}, headers=served.h(served.member)
    )
    assert r.status_code == 503 and r.headers["retry-after"] == "5"
    _error(r)
    ready = served.client.get("/readyz")
    assert ready.status_code == 503 and _error(ready)["code"] == "not_ready"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4)
    ),
    max_leaves=12,
)
paths = st.sampled_from(
    [
        ("POST", f"{U}/memories"),
        ("POST", f"{U}/search"),
        ("POST", f"{U}/context"),
        ("POST", f"{U}/sessions/s1/messages"),
        ("POST", f"{U}/sessions/s1/messages/batch"),
        ("PATCH", f"{U}/memories/abc"),
        ("POST", f"{U}/key-memory"),
        ("POST", f"{U}/purge"),
        ("POST", f"{U}/sessions/s1/task"),
        ("POST", f"{U}/sessions/s1/task/steps/0"),
    ]
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(paths, json_values | st.binary(max_size=64))
def test_garbage_never_gets_a_5xx(served: Served, route: tuple[str, str], body: object) -> None:
    method, path = route
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = served.client.request(
        method,
        path,
        content=content,
        headers={**served.h(served.admin), "content-type": "application/json"},
    )
    assert r.status_code < 500, r.text
    if r.status_code >= 400:
        _error(r)
