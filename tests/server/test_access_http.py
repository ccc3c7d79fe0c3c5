"""The key's identity reaches access control: admin-only operations, user-bound keys."""

from __future__ import annotations

import pytest

from memstrata import Filters, Scope

from .conftest import Served

A = "/v1/users/alice"


def _add(s: Served, secret: str, content: str, **extra: object) -> str:
    r = s.client.post(f"{A}/memories", headers=s.h(secret), json={"content": content, **extra})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


ADMIN_ONLY = [
    ("POST", f"{A}/purge", {"all_of_user": True}),
    ("POST", f"{A}/jobs/run", None),
    ("GET", "/v1/audit", None),
    ("GET", "/v1/keys", None),
    ("POST", "/v1/keys", {"role": "admin"}),
    ("DELETE", "/v1/keys/000000000000", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_ONLY)
def test_a_member_key_gets_403_naming_the_fix_and_nothing_changes(
    served: Served, method: str, path: str, body: object
) -> None:
    rid = _add(served, served.member, "Alice keeps bees")
    keys_before = served.keys.list()
    r = served.client.request(method, path, headers=served.h(served.member), json=body)
    assert r.status_code == 403, r.text
    message = r.json()["error"]["message"]
    assert "needs an admin key" in message and "--role admin" in message
    assert served.memory.get(Scope("acme", "alice"), rid).text == "Alice keeps bees"
    assert served.keys.list() == keys_before


def test_a_member_key_cannot_import(served: Served) -> None:
    r = served.client.post(
        f"{A}/import",
        headers={**served.h(served.member), "content-type": "application/x-ndjson"},
        content=b'{"id": "x"}\n',
    )
    assert r.status_code == 403 and "admin" in r.json()["error"]["message"]


def test_admin_keys_audit_and_key_management_stay_in_the_tenant(served: Served) -> None:
    h = served.h(served.admin)
    rid = _add(served, served.member, "Alice keeps bees")
    assert served.client.delete(f"{A}/memories/{rid}", headers=served.h(served.member)).is_success
    events = served.client.get("/v1/audit", headers=h, params={"action": "delete"}).json()
    [event] = events["events"]
    member_id = served.member.split("_")[1]
    assert event["actor"] == f"key:{member_id}" and event["record_ids"] == [rid]
    # globex's audit log is its own
    other_admin = served.keys.create("globex", role="admin").secret
    assert served.client.get("/v1/audit", headers=served.h(other_admin)).json()["events"] == []
    # keys: create, list (own tenant only), revoke; another tenant's key id is a 404
    made = served.client.post("/v1/keys", headers=h, json={"user": "bob", "roles": ["editor"]})
    assert made.status_code == 201, made.text
    new = made.json()
    assert new["key"].startswith("ms_") and new["tenant"] == "acme" and new["user"] == "bob"
    listed = served.client.get("/v1/keys", headers=h).json()["keys"]
    assert {k["tenant"] for k in listed} == {"acme"} and new["id"] in {k["id"] for k in listed}
    globex_key = served.other.split("_")[1]
    r = served.client.delete(f"/v1/keys/{globex_key}", headers=h)
    assert r.status_code == 404
    assert served.client.get("/v1/whoami", headers=served.h(served.other)).status_code == 200
    assert served.client.delete(f"/v1/keys/{new['id']}", headers=h).json()["revoked_at"]
    assert served.client.get("/v1/whoami", headers=served.h(new["key"])).status_code == 401


def test_a_user_bound_key_reads_only_what_was_shared_and_writes_nothing(
    served: Served,
) -> None:
    bob = served.keys.create("acme", user="bob", roles=["editor"]).secret
    private = _add(served, served.member, "Alice's diary entry")
    public = _add(served, served.member, "Alice's public bio", visibility="public")
    for_bob = _add(served, served.member, "Alice's note for bob")
    for_editors = _add(served, served.member, "Alice's draft for editors")
    h = served.h(served.member)
    r = served.client.put(
        f"{A}/memories/{for_bob}/access",
        headers=h,
        json={"visibility": "shared", "allowed_users": ["bob"]},
    )
    assert r.status_code == 200, r.text
    r = served.client.put(
        f"{A}/memories/{for_editors}/access", headers=h, json={"allowed_roles": ["editor"]}
    )
    assert r.status_code == 200, r.text

    hb = served.h(bob)
    assert served.client.get("/v1/whoami", headers=hb).json()["user"] == "bob"
    seen = {m["id"] for m in served.client.get(f"{A}/memories", headers=hb).json()["items"]}
    assert seen == {public, for_bob, for_editors}
    assert served.client.get(f"{A}/memories/{private}", headers=hb).status_code == 404
    hits = served.client.post(f"{A}/search", headers=hb, json={"query": "Alice diary"}).json()
    found = {hit["record"]["id"] for hit in hits["hits"]}
    assert private not in found and public in found

    writes = [
        ("POST", f"{A}/memories", {"content": "bob was here"}),
        ("PATCH", f"{A}/memories/{public}", {"expected_version": 1, "content": "changed"}),
        ("DELETE", f"{A}/memories/{public}", None),
        ("PUT", f"{A}/memories/{public}/access", {"visibility": "private"}),
        ("POST", f"{A}/sessions/s1/messages", {"role": "user", "content": "hi"}),
        ("POST", f"{A}/key-memory", {"text": "bob's goal"}),
    ]
    for method, path, body in writes:
        r = served.client.request(method, path, headers=hb, json=body)
        assert r.status_code == 403, (path, r.text)
        assert "belongs to user 'bob'" in r.json()["error"]["message"]
    alice = Scope("acme", "alice")
    assert served.memory.store.count(alice, Filters()) == 4
    assert served.memory.get(alice, public).version == 1

    # bob's own memory: his key owns it
    r = served.client.post("/v1/users/bob/memories", headers=hb, json={"content": "bob's own"})
    assert r.status_code == 201 and r.json()["tenant"] == "acme"


def test_audit_times_must_be_iso_8601(served: Served) -> None:
    h = served.h(served.admin)
    ok = served.client.get("/v1/audit", headers=h, params={"since": "2026-01-01T00:00:00Z"})
    assert ok.status_code == 200
    for bad in ("0.5", "2026-13-45", "yesterday"):
        r = served.client.get("/v1/audit", headers=h, params={"until": bad})
        assert r.status_code == 422 and "until" in r.json()["error"]["message"], bad


def test_audit_pages_by_after(served: Served) -> None:
    """Keyset pages over HTTP: ``next_after`` chains every event once; an unknown or another
    tenant's event id is a 404; ``after`` with ``offset`` is a 422 naming both."""
    h = served.h(served.admin)
    for i in range(5):
        rid = _add(served, served.member, f"note {i}")
        assert served.client.delete(f"{A}/memories/{rid}", headers=served.h(served.member))
    every = served.client.get("/v1/audit", headers=h, params={"limit": 1000}).json()["events"]
    walked, after = [], None
    while True:
        params = {"limit": 2} | ({"after": after} if after else {})
        page = served.client.get("/v1/audit", headers=h, params=params).json()
        walked += [e["id"] for e in page["events"]]
        after = page["next_after"]
        if after is None:
            break
    assert walked == [e["id"] for e in every] and len(walked) >= 5
    assert served.client.get("/v1/audit", headers=h, params={"after": "nope"}).status_code == 404
    other_admin = served.keys.create("globex", role="admin").secret
    r = served.client.get("/v1/audit", headers=served.h(other_admin), params={"after": walked[0]})
    assert r.status_code == 404
    r = served.client.get("/v1/audit", headers=h, params={"after": walked[0], "offset": 1})
    assert r.status_code == 422 and "after" in r.json()["error"]["message"]
