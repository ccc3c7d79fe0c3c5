"""Isolation over HTTP: two tenants' keys, random operations, no cross-tenant read or write."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Filters, Scope

from .conftest import Served

TENANTS = ("acme", "globex")
USERS = ("alice", "bob")
WORDS = ("lisbon", "peanuts", "cello", "nurse", "tea", "bakery", "launch", "budget")

op = st.tuples(
    st.sampled_from(
        [
            "add",
            "message",
            "search",
            "context",
            "get",
            "update",
            "delete",
            "restore",
            "history",
            "list",
            "export",
            "key",
        ]
    ),
    st.sampled_from(TENANTS),
    st.sampled_from(USERS),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
    st.integers(min_value=0, max_value=50),
)


def _records_in(body: Any) -> list[dict[str, Any]]:
    """Every record-shaped object anywhere in a response body."""
    found: list[dict[str, Any]] = []
    if isinstance(body, dict):
        if {"id", "tenant", "user", "content"} <= set(body):
            found.append(body)
        for v in body.values():
            found += _records_in(v)
    elif isinstance(body, list):
        for v in body:
            found += _records_in(v)
    return found


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(op, min_size=5, max_size=30))
def test_random_operations_never_cross_tenants(
    served: Served, ops: list[tuple[str, str, str, str, int]]
) -> None:
    keys = {"acme": served.admin, "globex": served.keys.create("globex", role="admin").secret}
    owned: dict[str, str] = {}  # record id -> tenant that created it
    for kind, tenant, user, text, pick in ops:
        h = served.h(keys[tenant])
        base = f"/v1/users/{user}"
        ids = sorted(owned)
        target = ids[pick % len(ids)] if ids else "0" * 32
        c = served.client
        if kind == "add":
            r = c.post(f"{base}/memories", headers=h, json={"content": text, "dedup": False})
        elif kind == "message":
            r = c.post(
                f"{base}/sessions/s{pick % 2}/messages",
                headers=h,
                json={"role": "user", "content": text},
            )
        elif kind == "key":
            r = c.post(f"{base}/key-memory", headers=h, json={"text": text})
        elif kind == "search":
            r = c.post(f"{base}/search", headers=h, json={"query": text, "top_k": 50})
        elif kind == "context":
            r = c.post(f"{base}/context", headers=h, json={"query": text, "token_budget": 2000})
        elif kind == "get":
            r = c.get(f"{base}/memories/{target}?include_deleted=true", headers=h)
        elif kind == "update":
            cur = c.get(f"{base}/memories/{target}?include_deleted=true", headers=h)
            version = cur.json()["version"] if cur.status_code == 200 else 1
            r = c.patch(
                f"{base}/memories/{target}",
                headers=h,
                json={"expected_version": version, "content": f"{tenant} edit {text}"},
            )
        elif kind == "delete":
            r = c.delete(f"{base}/memories/{target}", headers=h)
        elif kind == "restore":
            r = c.post(f"{base}/memories/{target}/restore", headers=h)
        elif kind == "history":
            r = c.get(f"{base}/memories/{target}/history", headers=h)
        elif kind == "list":
            r = c.get(f"{base}/memories?limit=500&include_deleted=true", headers=h)
        else:
            r = c.get(f"{base}/export", headers=h)
        assert r.status_code < 500, r.text
        if kind == "export":
            body: Any = [json.loads(x) for x in r.text.splitlines()[1:]]
        else:
            body = r.json() if r.content else None
        for rec in _records_in(body):
            assert rec["tenant"] == tenant, (kind, tenant, rec["tenant"])
            assert rec["user"] == user
            others = tuple(f"{t} edit" for t in TENANTS if t != tenant)  # a summary may quote
            assert not any(o in rec["content"]["raw"] for o in others), (  # its own tenant's
                "another tenant's edit reached this record"
            )
        if (
            kind in ("get", "update", "delete", "restore", "history")
            and ids
            and owned[target] != tenant
        ):
            assert r.status_code == 404, (kind, r.status_code)
        if r.status_code == 201 and kind in ("add", "message", "key"):
            owned[r.json()["id"]] = tenant
        if kind == "message" and r.status_code == 201:
            served.memory.flush()
    # Every stored record belongs to the tenant whose key created it; nothing else appeared.
    for tenant in TENANTS:
        for user in USERS:
            recs = served.memory.list(
                Scope(tenant, user),
                filters=Filters(include_deleted=True, include_superseded=True),
                limit=10_000,
            )
            for rec in recs:
                if rec.id in owned:
                    assert owned[rec.id] == tenant
                others = tuple(f"{t} edit" for t in TENANTS if t != tenant)
                for version in served.memory.history(Scope(tenant, user), rec.id):
                    assert not any(o in version.text for o in others), "cross-tenant edit"
