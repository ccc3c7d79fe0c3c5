"""The request metric's label values are bounded whatever clients send (session 29).

Prometheus keeps a series per label combination for the process's life. The route label
is the route's template (or one bucket for unmatched paths) and the status is the app's;
the method was the request's own: behind h11 (the app mounted in another server, any token
is a method) each made-up method added series for good.
"""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from memstrata import Memory
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.keys import InMemoryKeyStore


def test_made_up_methods_share_one_label(tmp_path: object) -> None:
    with Memory("memory://", embedder="hashing", background=False) as mem:
        keys = InMemoryKeyStore()
        secret = keys.create("acme").secret
        app = create_app(mem, keys, limits=Limits(rate=0), mcp=False)
        with TestClient(app) as client:
            h = {"Authorization": f"Bearer {secret}"}
            assert client.get("/v1/whoami", headers=h).status_code == 200
            for i in range(300):
                r = client.request(f"M{i}", "/v1/whoami", headers=h)
                assert r.status_code == 405
            text = client.get("/metrics", headers=h).text
        methods = set(
            re.findall(
                r'^memstrata_http_request_duration_seconds_count\{method="([^"]*)"', text, re.M
            )
        )
        assert methods == {"GET", "other"}
