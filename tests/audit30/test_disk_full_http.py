"""``memstrata serve``'s routes on a SQLite store whose disk fills up (in-process app):
every write is 500 ``store_failed`` saying the disk is full (no ``Retry-After``), reads go
on, and once the disk has room the same app writes again with nothing of the refused
requests stored. Regression cover (held before session 30)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from memstrata import AsyncMemory, Memory, Scope
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.keys import SQLiteKeyStore

from .conftest import TinyDisk, filled


def test_writes_on_a_full_disk_are_500_and_the_server_goes_on(
    tmp_path: Path, tiny_disk: TinyDisk
) -> None:
    db = tiny_disk.path / "m.db"
    ids = filled(f"sqlite:///{db}")
    keys = SQLiteKeyStore(str(tmp_path / "keys.db"))
    admin = {"Authorization": f"Bearer {keys.create('acme', role='admin').secret}"}
    native = AsyncMemory(f"sqlite:///{db}", embedder="hashing", background=False)
    app = create_app(native, keys, limits=Limits(rate=0), on_close=native.aclose)
    base = "/v1/users/alice"
    with TestClient(app) as client:
        export = client.get(f"{base}/export", headers=admin).text
        tiny_disk.fill()
        for path, body in [
            ("/memories", {"content": "a full disk note " * 60}),
            ("/sessions/s1/messages", {"role": "user", "content": "a full disk turn " * 60}),
            ("/sessions/s1/messages/batch", {"messages": [{"role": "user", "content": "b"}] * 5}),
            ("/maintain", {}),
        ]:
            r = client.post(f"{base}{path}", headers=admin, json=body)
            assert r.status_code == 500, (path, r.text)
            assert "retry-after" not in r.headers
            error = r.json()["error"]
            assert error["code"] == "store_failed" and "full" in error["message"], error
        r = client.post("/v1/users/bob/import", headers=admin, content=export.encode())
        assert r.status_code == 500 and "full" in r.json()["error"]["message"], r.text
        r = client.post(f"{base}/search", headers=admin, json={"query": "heron"})
        assert r.status_code == 200 and r.json()["hits"]
        tiny_disk.free()
        r = client.post(f"{base}/memories", headers=admin, json={"content": "room again"})
        assert r.status_code == 201, r.text
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        alice = {r.content.raw for r in mem.list(Scope("acme", "alice"), limit=1000)}
        assert len(alice) == len(ids) + 1 and "room again" in alice
        assert mem.list(Scope("acme", "bob")) == []
