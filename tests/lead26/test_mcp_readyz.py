"""``memstrata mcp --transport http`` answers ``/healthz`` and ``/readyz`` as
``memstrata serve`` does, without a key (a load balancer has none), while ``/mcp`` still
needs one; ``/readyz`` is 503 ``not_ready`` without ``Retry-After`` once another process
re-embedded the store. Before session 26 both paths were 401 (behind the key check) and
no model check reached a load balancer."""

from __future__ import annotations

from pathlib import Path

import httpx2

from memstrata import Memory
from serving import mcp_http
from store.test_one_model import Rotated


def test_mcp_http_answers_health_and_readiness(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    with mcp_http(db, tmp_path) as m:
        base = m.url.removesuffix("/mcp")
        with httpx2.Client(timeout=30) as plain:
            r = plain.get(f"{base}/healthz")
            assert (r.status_code, r.json()) == (200, {"status": "ok"}), r.text
            r = plain.get(f"{base}/readyz")
            assert (r.status_code, r.json()) == (200, {"status": "ready"}), r.text
            assert plain.post(m.url, json={}).status_code == 401  # the endpoint keeps its key
            # another process re-embeds the store with a model of the same dims
            Memory(db, embedder=Rotated(), reembed=True, background=False).close()
            r = plain.get(f"{base}/readyz")
            assert r.status_code == 503, r.text
            assert "retry-after" not in r.headers
            error = r.json()["error"]
            assert error["code"] == "not_ready", error
            assert "memstrata mcp --embedder" in error["message"], error
            assert plain.get(f"{base}/healthz").status_code == 200
