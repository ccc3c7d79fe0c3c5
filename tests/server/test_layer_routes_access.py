"""The layer and maintenance routes keep the API's rules: the key's tenant only (another
tenant's users and ids are empty or 404 like missing ones), roles, and bad input refused
with a 422 that names the field, with nothing written."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Filters, Scope

from .conftest import Served

U = "/v1/users/alice"
ALICE = Scope("acme", "alice")


def _post(s: Served, secret: str, path: str, body: object) -> Any:
    # json.dumps escapes what UTF-8 cannot carry: a lone surrogate arrives as its escape
    headers = {**s.h(secret), "content-type": "application/json"}
    return s.client.post(f"{U}{path}", headers=headers, content=json.dumps(body).encode())


def _snapshot(s: Served, scope: Scope = ALICE) -> list[tuple[str, int, str, float]]:
    return [
        (r.id, r.version, r.status.value, r.importance)
        for r in s.memory.store.list(
            scope, Filters(include_deleted=True, include_superseded=True), limit=10_000
        )
    ]


def _error(r: Any) -> dict[str, Any]:
    body = r.json()
    assert set(body) == {"error"} and {"code", "message", "fields"} <= set(body["error"])
    assert "Traceback" not in json.dumps(body)
    return body["error"]  # type: ignore[no-any-return]


def _seed(s: Served) -> dict[str, str]:
    """One of everything in acme's alice, written through the API; their ids."""
    m = s.member
    fact = _post(s, m, "/facts", {"category": "identity", "key": "location", "value": "Lisbon",
                                  "confidence": 0.9})  # fmt: skip
    feedback = _post(s, m, "/episodes/feedback", {"text": "The Lisbon plan was great"})
    failure = _post(s, m, "/procedures/failures", {"pattern": "billing loop", "indicators":
                    ["billing"], "mitigation": "batch the calls"})  # fmt: skip
    doc = _post(s, m, "/knowledge", {"text": "Trams climb the hills of Lisbon.", "qa_id": "guide"})
    note = s.client.post(f"{U}/memories", headers=s.h(m), json={"content": "Lisbon trip budget",
                         "tags": ["trip"], "source": "implicit_inference"})  # fmt: skip
    for r in (fact, feedback, failure, doc, note):
        assert r.status_code in (200, 201), r.text
    return {
        "fact": fact.json()["fact"]["id"],
        "feedback": feedback.json()["id"],
        "failure": failure.json()["id"],
        "chunk": doc.json()["chunks"][0]["id"],
        "note": note.json()["id"],
    }


def test_another_tenants_key_sees_nothing_and_changes_nothing(served: Served) -> None:
    ids = _seed(served)
    before = _snapshot(served)
    g, g_admin = served.other, served.keys.create("globex", role="admin").secret
    gh = served.h(g)
    c = served.client
    assert c.get(f"{U}/facts", headers=gh).json()["records"] == []
    assert c.get(f"{U}/facts/location", headers=gh).status_code == 404
    assert c.get(f"{U}/facts/location/history", headers=gh).json()["records"] == []
    assert _post(served, g, "/facts/relevant", {"query": "Lisbon"}).json()["records"] == []
    assert _post(served, g, "/episodes/recall", {"query": "Lisbon plan"}).json()["hits"] == []
    assert _post(served, g, "/procedures/warnings", {"text": "billing"}).json()["warnings"] == []
    assert _post(served, g, "/procedures/suggest", {"query": "billing loop"}).json() == {
        "suggestion": None
    }
    assert c.get(f"{U}/knowledge/guide", headers=gh).status_code == 404
    tagged = _post(served, g, "/importance-by-tag", {"tag": "trip", "importance": 0.1})
    assert tagged.status_code == 200 and tagged.json()["records"] == []
    for secret in (g, g_admin):  # a dry run, then a real pass, over globex's empty alice
        r = _post(served, secret, "/maintain", {"dry_run": secret == g})
        assert r.status_code == 200 and r.json()["scanned"] == 0

    # acme's ids are 404 exactly like missing ones, and nothing is forgotten
    for rid in ids.values():
        theirs = _post(served, g, "/forget", {"ids": [rid]})
        missing = _post(served, g, "/forget", {"ids": ["no-such-id"]})
        assert theirs.status_code == missing.status_code == 404
        assert _error(theirs)["message"].replace(rid, "X") == _error(missing)["message"].replace(
            "no-such-id", "X"
        )
    # globex's writes land in globex's alice
    r = _post(served, g, "/facts", {"category": "identity", "key": "location", "value": "Oslo",
                                    "confidence": 1.0})  # fmt: skip
    assert r.status_code == 200 and r.json()["action"] == "inserted"
    assert r.json()["fact"]["tenant"] == "globex"
    assert served.memory.facts.get(ALICE, "location").text == "location: Lisbon"  # type: ignore[union-attr]
    assert _snapshot(served) == before


ALICE_WRITES = [
    ("/facts", {"category": "c", "key": "k", "value": "v", "confidence": 1.0}),
    ("/episodes/feedback", {"text": "bob was here"}),
    ("/procedures/failures", {"pattern": "p", "indicators": ["x"], "mitigation": "m"}),
    ("/knowledge", {"text": "bob's document"}),
    ("/forget", {"ids": ["FACT"]}),
    ("/importance-by-tag", {"tag": "trip", "importance": 0.0}),
    ("/maintain", {"dry_run": True}),
]


@pytest.mark.parametrize(("path", "body"), ALICE_WRITES)
def test_a_key_bound_to_another_user_writes_nothing(
    served: Served, path: str, body: dict[str, object]
) -> None:
    ids = _seed(served)
    before = _snapshot(served)
    bob = served.keys.create("acme", user="bob").secret
    if body.get("ids") == ["FACT"]:
        body = {"ids": [ids["fact"]]}
    r = _post(served, bob, path, body)
    assert r.status_code == 403, r.text
    assert "belongs to user 'bob'" in _error(r)["message"]
    assert _snapshot(served) == before


def test_a_key_bound_to_another_user_reads_only_what_was_shared(served: Served) -> None:
    ids = _seed(served)
    h = served.h(served.member)
    shared = _post(served, served.member, "/facts", {"category": "identity", "key": "job",
                   "value": "nurse", "confidence": 0.9})  # fmt: skip
    public_id = shared.json()["fact"]["id"]
    r = served.client.put(
        f"{U}/memories/{public_id}/access", headers=h, json={"visibility": "public"}
    )
    assert r.status_code == 200, r.text
    new = served.keys.create("acme", user="bob")
    hb, as_bob = served.h(new.secret), ALICE.as_caller("bob", new.key.access_roles)
    listed = served.client.get(f"{U}/facts", headers=hb).json()["records"]
    assert [x["id"] for x in listed] == [x.id for x in served.memory.facts.all(as_bob)]
    assert [x["id"] for x in listed] == [public_id]
    assert served.client.get(f"{U}/facts/location", headers=hb).status_code == 404
    assert served.client.get(f"{U}/facts/job", headers=hb).json()["id"] == public_id
    assert served.client.get(f"{U}/knowledge/guide", headers=hb).status_code == 404
    assert ids["fact"] not in served.client.get(f"{U}/facts", headers=hb).text


def test_only_an_admin_runs_a_maintenance_pass_and_a_member_may_dry_run(served: Served) -> None:
    _seed(served)
    before = _snapshot(served)
    r = _post(served, served.member, "/maintain", {"now": "2028-01-01T00:00:00Z"})
    assert r.status_code == 403
    message = _error(r)["message"]
    assert "needs an admin key" in message and "--role admin" in message and "dry_run" in message
    assert _snapshot(served) == before
    dry = _post(served, served.member, "/maintain", {"dry_run": True, "now": "2028-01-01T00:00Z"})
    assert dry.status_code == 200 and dry.json()["forgotten"] >= 1
    assert _snapshot(served) == before
    done = _post(served, served.admin, "/maintain", {"now": "2028-01-01T00:00:00Z"})
    assert done.status_code == 200 and done.json()["forgotten"] == dry.json()["forgotten"]
    assert _snapshot(served) != before


BAD = [
    ("/facts", {"category": "c", "key": "k", "value": "v", "confidence": 1, "tenant": "x"},
     "body.tenant", "remove this field"),
    ("/facts", {"category": "c", "key": "k", "value": "v"}, "body.confidence", "add this field"),
    ("/facts", {"category": "c", "key": "k", "value": "v", "confidence": 1.5},
     "body.confidence", "smaller"),
    ("/facts", {"category": "c", "key": "k" * 129, "value": "v", "confidence": 1},
     "body.key", "shorter"),
    ("/facts", {"category": "c", "key": "k", "value": "v", "confidence": 1, "source": "rumour"},
     "body.source", "allowed values"),
    ("/facts", {"category": "c", "key": "k", "value": "v", "confidence": 1,
                "expires_at": 1700000000}, "body.expires_at", "ISO 8601"),
    ("/facts/relevant", {"limit": 0}, "body.limit", "larger"),
    ("/episodes/recall", {"query": "x", "k": "3"}, "body.k", "integer"),
    ("/episodes/feedback", {"text": ""}, "body.text", "non-empty"),
    ("/procedures/failures", {"pattern": "p", "indicators": [], "mitigation": "m"},
     "body.indicators", "at least one"),
    ("/procedures/failures", {"pattern": "p", "indicators": ["x"], "mitigation": "m",
                              "severity": 9}, "body.severity", "smaller"),
    ("/procedures/warnings", {"text": "x", "limit": 0}, "body.limit", "larger"),
    ("/knowledge", {"text": "doc", "importance": -1}, "body.importance", "larger"),
    ("/knowledge", {"text": "doc", "tags": [""]}, "body.tags.0", "non-empty"),
    ("/forget", {"ids": []}, "body.ids", "at least one"),
    ("/forget", {"ids": ["a"], "why": "x"}, "body.why", "remove this field"),
    ("/maintain", {"policy": "lru"}, "body.policy", "allowed values"),
    ("/maintain", {"dry_run": "yes"}, "body.dry_run", "true or false"),
    ("/maintain", {"now": "next tuesday"}, "body.now", "ISO 8601"),
    ("/importance-by-tag", {"tag": "t", "importance": 2}, "body.importance", "smaller"),
    ("/importance-by-tag", {"importance": 0.5}, "body.tag", "add this field"),
]  # fmt: skip


@pytest.mark.parametrize(("path", "body", "field", "fix"), BAD)
def test_bad_bodies_are_422_naming_the_field_and_the_fix(
    served: Served, path: str, body: dict[str, object], field: str, fix: str
) -> None:
    _seed(served)
    before = _snapshot(served)
    r = _post(served, served.admin, path, body)
    assert r.status_code == 422, r.text
    err = _error(r)
    assert field in err["fields"], err
    assert field in err["message"] and fix in err["message"], err["message"]
    assert _snapshot(served) == before


LIBRARY_REFUSALS = [
    ("/facts", {"category": "c", "key": "  ", "value": "v", "confidence": 1}, "fact.key"),
    ("/facts", {"category": "c", "key": "k", "value": "\ud800", "confidence": 1}, "body.value"),
    ("/facts/relevant", {"query": "   "}, "query"),
    ("/episodes/recall", {"query": " \n "}, "query"),
    ("/procedures/failures", {"pattern": " ", "indicators": ["x"], "mitigation": "m"}, "pattern"),
    ("/procedures/suggest", {"query": "\t"}, "query"),
    ("/knowledge", {"text": "   "}, "content"),
    ("/knowledge", {"text": "doc", "title": " "}, "title"),
    ("/forget", {"ids": [" "]}, "record_ids[0]"),
    ("/importance-by-tag", {"tag": " ", "importance": 0.5}, "tag"),
]


@pytest.mark.parametrize(("path", "body", "field"), LIBRARY_REFUSALS)
def test_what_the_library_refuses_is_a_422_naming_the_field(
    served: Served, path: str, body: dict[str, object], field: str
) -> None:
    _seed(served)
    before = _snapshot(served)
    r = _post(served, served.admin, path, body)
    assert r.status_code == 422, r.text
    err = _error(r)
    assert err["code"] == "invalid_request" and field in err["message"], err["message"]
    assert _snapshot(served) == before


def test_a_forget_with_one_missing_id_forgets_none(served: Served) -> None:
    ids = _seed(served)
    before = _snapshot(served)
    r = _post(served, served.member, "/forget", {"ids": [ids["note"], "gone", ids["fact"]]})
    assert r.status_code == 404 and "gone" in _error(r)["message"]
    assert _snapshot(served) == before


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4)
    ),
    max_leaves=12,
)
routes = st.sampled_from(
    [
        "/facts",
        "/facts/relevant",
        "/episodes/recall",
        "/episodes/feedback",
        "/procedures/suggest",
        "/procedures/warnings",
        "/procedures/failures",
        "/knowledge",
        "/forget",
        "/maintain",
        "/importance-by-tag",
    ]
)
fields = st.fixed_dictionaries(
    {},
    optional={
        "category": json_values, "key": json_values, "value": json_values,
        "confidence": json_values, "query": json_values, "text": json_values,
        "ids": json_values, "tag": json_values, "importance": json_values,
        "policy": json_values, "dry_run": json_values, "now": json_values,
        "indicators": json_values, "pattern": json_values, "mitigation": json_values,
    },
)  # fmt: skip


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(routes, json_values | fields | st.binary(max_size=64))
def test_garbage_never_gets_a_5xx(served: Served, path: str, body: object) -> None:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = served.client.post(
        f"{U}{path}",
        content=content,
        headers={**served.h(served.admin), "content-type": "application/json"},
    )
    assert r.status_code < 500, r.text
    if r.status_code >= 400:
        _error(r)
