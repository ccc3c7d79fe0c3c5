"""A key bound to one user acts as that user's owner on their own memory and as a caller
(reading only what was shared, writing nothing) on any other user's (server/keys.py). With
the admin role it may purge, import and run jobs — on its own memory. Found by audit26: the
tenant routes check the role only, so an admin key bound to alice creates a *service* admin
key (no user: every user of the tenant) and then reads and purges bob's private memory; it
also lists and revokes the tenant's other keys and reads every user's audit events. Fixed
in server/routes/tenant.py: the key routes need a service admin key, and a bound admin key
reads its own user's audit events only (each test fails before the fix)."""

from __future__ import annotations

import pytest

from memstrata import Scope

from .conftest import served  # noqa: F401

BOB = Scope("acme", "bob")


@pytest.fixture
def alice_admin(served):  # noqa: F811
    return served.h(served.keys.create("acme", role="admin", user="alice").secret)


def test_the_bound_admin_key_is_refused_on_bobs_memory(served, alice_admin) -> None:  # noqa: F811
    """What holds: bob's memory is refused to alice's admin key directly."""
    rec = served.memory.add(BOB, "bob's private diary entry")
    c = served.client
    assert c.get(f"/v1/users/bob/memories/{rec.id}", headers=alice_admin).status_code == 404
    purge = c.post("/v1/users/bob/purge", json={"all_of_user": True}, headers=alice_admin)
    assert purge.status_code == 403
    assert served.memory.get(BOB, rec.id).text == rec.text


def test_a_bound_admin_key_cannot_mint_a_tenant_wide_key(served, alice_admin) -> None:  # noqa: F811
    rec = served.memory.add(BOB, "bob's private diary entry")
    c = served.client
    made = c.post("/v1/keys", json={"role": "admin"}, headers=alice_admin)
    if made.status_code == 201:  # the escalation: what the new key then reaches
        wide = served.h(made.json()["key"])
        got = c.get(f"/v1/users/bob/memories/{rec.id}", headers=wide)
        assert got.status_code != 200, "alice's key minted a key that reads bob's private memory"
    assert made.status_code == 403


def test_a_bound_admin_key_reads_only_its_users_audit_events(served, alice_admin) -> None:  # noqa: F811
    rec = served.memory.add(BOB, "bob's private diary entry")
    served.memory.delete(BOB, rec.id, actor="bob-app")
    mine = served.memory.add(Scope("acme", "alice"), "alice's note")
    served.memory.delete(Scope("acme", "alice"), mine.id, actor="alice-app")
    c = served.client
    got = c.get("/v1/audit", headers=alice_admin)
    assert got.status_code == 200
    assert [(e["user"], e["actor"]) for e in got.json()["events"]] == [("alice", "alice-app")]
    assert c.get("/v1/audit?user=bob", headers=alice_admin).status_code == 403
    assert len(c.get("/v1/audit", headers=served.h(served.admin)).json()["events"]) == 2


def test_a_bound_admin_key_cannot_list_the_tenants_keys(served, alice_admin) -> None:  # noqa: F811
    got = served.client.get("/v1/keys", headers=alice_admin)
    assert got.status_code == 403 and "service admin key" in got.json()["error"]["message"]
    assert served.client.get("/v1/keys", headers=served.h(served.admin)).status_code == 200


def test_a_bound_admin_key_cannot_revoke_the_tenants_other_keys(served, alice_admin) -> None:  # noqa: F811
    other = served.keys.create("acme", role="admin")
    got = served.client.delete(f"/v1/keys/{other.key.id}", headers=alice_admin)
    assert got.status_code == 403
