"""``/readyz`` of a server whose store another process re-embedded: 503 ``not_ready``
(without ``Retry-After``: it stays so until a restart), saying what to restart with, so a
load balancer takes the server out; and polling it leaves the server's searches refused.
Before session 25 it answered 200 (it only read the store's model), and that read re-pinned
the server to the new model: its searches then ran with the old model's questions."""

from __future__ import annotations

from pathlib import Path

from memstrata import Memory
from ops25.test_embedding_mismatch import served
from store.test_one_model import Rotated


def test_readyz_takes_a_server_left_behind_by_a_reembed_out(tmp_path: Path) -> None:
    with served(tmp_path) as (client, auth, url):
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
