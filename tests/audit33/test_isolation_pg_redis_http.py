"""Another tenant's (and another user's) record ids on every id-taking route of the HTTP
API, on PostgreSQL with Redis in front: each is a 404/403 and the record is unchanged, its
text in no answer (session 33's audit; a guard, it held)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memstrata import AsyncMemory
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.keys import SQLiteKeyStore

SECRET = "alice keeps the spare key under the heron statue"


@pytest.fixture
def app(pg_url: str, redis_buffer_url: str, tmp_path: Path) -> Iterator[tuple[TestClient, Any]]:
    keys = SQLiteKeyStore(str(tmp_path / "keys.db"))
    native = AsyncMemory(pg_url, embedder="hashing", background=False, buffer=redis_buffer_url)
    served = create_app(native, keys, limits=Limits(rate=0), on_close=native.aclose)
    with TestClient(served, raise_server_exceptions=False) as client:
        yield client, keys
    keys.close()


def _auth(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def test_foreign_ids_on_every_id_route(app: tuple[TestClient, Any]) -> None:
    client, keys = app
    acme = _auth(keys.create("acme", role="admin").secret)
    globex = _auth(keys.create("globex", role="admin").secret)
    alice_only = _auth(keys.create("acme", user="alice").secret)
    note = client.post("/v1/users/alice/memories", headers=acme, json={"content": SECRET})
    turn = client.post(
        "/v1/users/alice/sessions/s1/messages",
        headers=acme,
        json={"role": "user", "content": SECRET + " (said)"},
    )
    key = client.post("/v1/users/alice/key-memory", headers=acme, json={"text": SECRET + "!"})
    ids = [r.json()["id"] for r in (note, turn, key)]
    for who, user in ((globex, "alice"), (globex, "bob"), (alice_only, "bob"), (acme, "bob")):
        for rid in ids:
            for method, path, body in (
                ("GET", f"/v1/users/{user}/memories/{rid}", None),
                ("GET", f"/v1/users/{user}/memories/{rid}/history", None),
                (
                    "PATCH",
                    f"/v1/users/{user}/memories/{rid}",
                    {"content": "x", "expected_version": 1},
                ),
                ("DELETE", f"/v1/users/{user}/memories/{rid}", None),
                ("POST", f"/v1/users/{user}/memories/{rid}/restore", None),
                ("PUT", f"/v1/users/{user}/memories/{rid}/access", {"visibility": "public"}),
                (
                    "PATCH",
                    f"/v1/users/{user}/key-memory/{rid}",
                    {"text": "x", "expected_version": 1},
                ),
                ("DELETE", f"/v1/users/{user}/key-memory/{rid}", None),
                ("POST", f"/v1/users/{user}/forget", {"ids": [rid]}),
                ("POST", f"/v1/users/{user}/purge", {"ids": [rid]}),
            ):
                r = client.request(method, path, headers=who, json=body)
                assert r.status_code in (403, 404), (method, path, r.status_code, r.text)
                assert "heron statue" not in r.text
        for path in (f"/v1/users/{user}/memories", f"/v1/users/{user}/export", "/v1/audit"):
            r = client.get(path, headers=who)
            assert "heron statue" not in r.text, path
    for rid in ids:
        r = client.get(f"/v1/users/alice/memories/{rid}", headers=acme)
        assert r.status_code == 200 and r.json()["version"] == 1
        assert r.json()["status"] == "active"
