"""Ids holding "/" or "%" are addressable over HTTP when the client percent-encodes them.

Starlette routes on the decoded path, so ``/memories/conv-1%2Fturn-3`` was two segments
and no route (404 "no such path"): a record imported with such an id, a user ``org/alice``
or a fact key ``likes_ac/dc`` could not be read, changed or deleted over HTTP.
"""

from __future__ import annotations

import io
import json
from urllib.parse import quote

from hypothesis import given
from hypothesis import strategies as st

from memstrata import Memory, Scope
from memstrata.server.paths import _decoded, routed_path

from .conftest import Served

USER = "org/alice"
IDS = ["conv-1/turn-3", "50%off", "a%2Fb", "ü/ß ?#&"]


def _enc(value: str) -> str:
    return quote(value, safe="")


def _import(memory: Memory, scope: Scope, ids: list[str]) -> None:
    """Records with these ids, through an export line each (ids come in by import)."""
    with Memory("memory://", embedder="hashing", background=False) as src:
        rec = src.add(Scope(scope.tenant, "tmp"), "template")
        buf = io.StringIO()
        src.export_records(Scope(scope.tenant, "tmp"), buf)
    header, template = buf.getvalue().splitlines()[:2]
    line = json.loads(template)
    lines = [header]
    for rid in ids:
        line["record"] = {**line["record"], "id": rid, "user": scope.user}
        lines.append(json.dumps(line))
    lines.append(json.dumps({"end": "complete", "count": len(ids)}))
    assert rec.id
    memory.import_records(io.StringIO("\n".join(lines) + "\n"))


def test_records_users_and_fact_keys_holding_slashes_are_addressable(served: Served) -> None:
    _import(served.memory, Scope("acme", USER), IDS)
    h = served.h(served.admin)
    base = f"/v1/users/{_enc(USER)}"
    for rid in IDS:
        one = f"{base}/memories/{_enc(rid)}"
        got = served.client.get(one, headers=h)
        assert got.status_code == 200, (rid, got.text)
        assert got.json()["id"] == rid
        assert (
            served.client.patch(
                one, json={"expected_version": 1, "content": f"{rid} edited"}, headers=h
            ).status_code
            == 200
        ), rid
        history = served.client.get(f"{one}/history", headers=h).json()
        assert [v["version"] for v in history["records"]] == [1, 2]
        assert served.client.delete(one, headers=h).status_code == 200
        assert served.client.post(f"{one}/restore", headers=h).status_code == 200
    listed = served.client.get(f"{base}/memories", headers=h).json()
    assert sorted(r["id"] for r in listed["items"]) == sorted(IDS)

    fact = {"category": "preference", "key": "likes_ac/dc", "value": "AC/DC", "confidence": 0.9}
    assert served.client.post(f"{base}/facts", json=fact, headers=h).status_code == 200
    got = served.client.get(f"{base}/facts/{_enc('likes_ac/dc')}", headers=h)
    assert got.status_code == 200 and "AC/DC" in got.text
    versions = served.client.get(f"{base}/facts/{_enc('likes_ac/dc')}/history", headers=h)
    assert versions.status_code == 200 and len(versions.json()["records"]) == 1


def test_an_unencoded_slash_still_separates_segments(served: Served) -> None:
    """``/memories/a/b`` is not the record ``a/b``: a client must encode what it means."""
    _import(served.memory, Scope("acme", "bob"), ["a/b"])
    got = served.client.get("/v1/users/bob/memories/a/b", headers=served.h(served.admin))
    assert got.status_code == 404


segments = st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=4)


@given(segments)
def test_each_encoded_segment_routes_as_one_and_decodes_to_itself(parts: list[str]) -> None:
    raw = ("/" + "/".join(_enc(p) for p in parts)).encode("ascii")
    routed = routed_path(raw).split("/")[1:]
    assert len(routed) == len(parts)
    assert [_decoded(r) for r in routed] == parts
