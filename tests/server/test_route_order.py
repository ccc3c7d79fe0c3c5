"""Requests are matched against the hot routes first; the docs keep their own order."""

from __future__ import annotations

from memstrata.server.app import DOCUMENTED, MATCHED

from .conftest import Served


def test_every_turns_routes_are_matched_first_and_the_docs_keep_their_order(
    served: Served,
) -> None:
    assert sorted(map(id, MATCHED)) == sorted(map(id, DOCUMENTED))
    paths = list(served.app.openapi()["paths"])
    documented = [getattr(r, "path", "") for router in DOCUMENTED for r in router.routes]
    assert paths[: len(set(documented))] == list(dict.fromkeys(documented))
    assert paths[0] == "/v1/users/{user}/sessions/{session}/messages"
    assert paths[-3:] == ["/healthz", "/readyz", "/metrics"]
    matched = [getattr(r, "path", "") for router in MATCHED for r in router.routes]
    assert matched[:2] == ["/v1/users/{user}/search", "/v1/users/{user}/context"]
    # a path matched with another method is still a 405, a path of no route a 404
    h = served.h(served.member)
    assert served.client.get("/v1/users/alice/search", headers=h).status_code == 405
    assert served.client.get("/v1/users/alice/nowhere", headers=h).status_code == 404
