"""``/readyz`` of a server whose store another process re-embedded: 503 ``not_ready``
(without ``Retry-After``: it stays so until a restart), saying what to restart with, so a
load balancer takes the server out; and polling it leaves the server's searches refused.
Before session 25 it answered 200 (it only read the store's model), and that read re-pinned
the server to the new model: its searches then ran with the old model's questions."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from memstrata import AsyncMemory, Memory
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.keys import SQLiteKeyStore
from store.test_one_model import Rotated


def test_readyz_takes_a_server_left_behind_by_a_reembed_out(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    url = f"sqlite:///{db}"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme").secret
    native = AsyncMemory(url, embedder="hashing", background=False)
    app = create_app(native, keys, limits=Limits(rate=0), on_close=native.aclose)
    auth = {"Authorization": f"Bearer {key}"}
    with TestClient(app) as client:
        said = {"role": "user", "content": "the heron stood by the lake"}
        r = client.post("/v1/users/alice/sessions/s1/messages", headers=auth, json=said)
        assert r.status_code in (200, 201), r.text
        assert client.get("/readyz").status_code == 200
        # another process re-embeds with a model of the same dims
        Memory(url, embedder=Rotated(), reembed=True, background=False).close()
        for _ in range(3):  # a load balancer polls
            r = client.get("/readyz")
            assert r.status_code == 503, r.text
            assert "retry-after" not in r.headers
            error = r.json()["error"]
            assert error["code"] == "not_ready", error
            assert "will not help" in error["message"], error
            assert "memstrata serve --embedder" in error["message"], error
        r = client.post("/v1/users/alice/search", headers=auth, json={"query": "heron"})
        assert r.status_code == 500, r.text
        assert r.json()["error"]["code"] == "embedding_mismatch"
