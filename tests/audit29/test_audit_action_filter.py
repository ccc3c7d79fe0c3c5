"""``GET /v1/audit?action=bogus`` was an empty page, as if nothing of the kind had happened
(a typo, ``action=delet``, read as "nothing was deleted"). Session 29's audit: a 422 listing
the actions memstrata writes, when the action is none of them and no event of the tenant (of
the key's user, for a key bound to one) has it; an action a library caller recorded itself
(``mem.audit.record``) is still found."""

from __future__ import annotations

import ast
from pathlib import Path

from memstrata.server.routes.tenant import AUDIT_ACTIONS
from server.conftest import Served

SRC = Path(__file__).resolve().parents[2] / "src" / "memstrata"


def test_an_action_no_event_has_is_a_422_listing_the_actions(served: Served) -> None:
    h = served.h(served.admin)
    rec = served.client.post("/v1/users/alice/memories", json={"content": "x"}, headers=h)
    served.client.delete(f"/v1/users/alice/memories/{rec.json()['id']}", headers=h)
    for bogus in ("bogus", "delet", "DELETE", "delete "):
        r = served.client.get("/v1/audit", params={"action": bogus}, headers=h)
        assert r.status_code == 422, (bogus, r.text)
        message = r.json()["error"]["message"]
        assert repr(bogus) in message and "delete, downgrade, forget" in message
    r = served.client.get("/v1/audit", params={"action": "delete"}, headers=h)
    assert r.status_code == 200 and [e["action"] for e in r.json()["events"]] == ["delete"]
    # a known action with no event yet: an empty page, as before
    r = served.client.get("/v1/audit", params={"action": "set_access"}, headers=h)
    assert r.status_code == 200 and r.json()["events"] == []


def test_an_action_a_library_caller_recorded_is_found(served: Served) -> None:
    served.memory.audit.record("acme", "library", "note", user="alice")
    h = served.h(served.admin)
    r = served.client.get("/v1/audit", params={"action": "note"}, headers=h)
    assert r.status_code == 200 and [e["action"] for e in r.json()["events"]] == ["note"]
    # out of the window asked: an empty page, the action is known to the log
    r = served.client.get(
        "/v1/audit", params={"action": "note", "until": "2000-01-01T00:00:00Z"}, headers=h
    )
    assert r.status_code == 200 and r.json()["events"] == []
    # another user's event of it makes it known to a service admin key asking for one user
    r = served.client.get("/v1/audit", params={"action": "note", "user": "nobody"}, headers=h)
    assert r.status_code == 200 and r.json()["events"] == [], r.text
    # another tenant's action does not make it known here
    served.memory.audit.record("globex", "library", "globex-only")
    r = served.client.get("/v1/audit", params={"action": "globex-only"}, headers=h)
    assert r.status_code == 422


def test_a_user_bound_admin_key_learns_nothing_of_other_users_actions(served: Served) -> None:
    served.memory.audit.record("acme", "library", "bob-only", user="bob")
    bound = served.keys.create("acme", role="admin", user="alice").secret
    r = served.client.get("/v1/audit", params={"action": "bob-only"}, headers=served.h(bound))
    assert r.status_code == 422


def _written_actions() -> set[str]:
    """Every action the code writes: ``LogEntry(id, ACTION, ...)``, ``audit.event`` /
    ``audit.record(tenant, actor, ACTION, ...)`` and ``action="..."`` keywords (rederive's
    and consolidation's actions, variables, reach the log through ``LogEntry``'s and are
    among these: refresh, forget, purge)."""
    found: set[str] = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            pos = {"LogEntry": 1, "event": 2, "record": 2}.get(name)
            if pos is not None and len(node.args) > pos:
                arg = node.args[pos]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.add(arg.value)
            for kw in node.keywords:
                if kw.arg == "action" and isinstance(kw.value, ast.Constant):
                    found.add(kw.value.value)
    return found


def test_the_list_names_every_action_the_code_writes() -> None:
    written = _written_actions()
    assert written <= set(AUDIT_ACTIONS), written - set(AUDIT_ACTIONS)
    assert {"delete", "downgrade", "forget", "merge", "purge", "restore"} <= written
    assert list(AUDIT_ACTIONS) == sorted(AUDIT_ACTIONS)
