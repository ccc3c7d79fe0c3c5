"""Another tenant's ids through every way in, and one record edited through two ways in
at once (session 34's audit), on SQLite and PostgreSQL.

- globex's note, by its id, from acme: the library (``Scope("acme", "bob")``), the HTTP API
  with acme's key on bob's paths, MCP with acme's key and ``X-Memstrata-User: bob``: every
  read, edit and delete is "not found" (a ``NotFoundError``, a 404, a tool error), the note
  unchanged and its text in no answer.
- one note edited at version 1 through the library, the HTTP API and MCP at once: exactly
  one edit is written (version 2), each other one a conflict (a ``ConflictError``, a 409,
  a tool error saying so) that wrote nothing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata import Scope
from memstrata.errors import ConflictError, NotFoundError

from .surfaces import Surfaces

GLOBEX_BOB = Scope("globex", "bob")
SECRET_TEXT = "globex's launch date is the 9th of March"


@pytest.fixture
def surfaces(url: str, tmp_path: Path) -> Iterator[Surfaces]:
    s = Surfaces(url, tmp_path)
    yield s
    s.close()


def _export(s: Surfaces, scope: Scope) -> str:
    import io

    out = io.StringIO()
    s.mem.export_records(scope, out)
    return "\n".join(x for x in out.getvalue().splitlines() if '"exported_at"' not in x)


def test_another_tenants_id_is_not_found_through_every_surface(surfaces: Surfaces) -> None:
    s = surfaces
    r = s.http("POST", "/v1/users/bob/memories", {"content": SECRET_TEXT}, secret=s.other_secret)
    assert r.status_code == 201, r.text
    rid = r.json()["id"]
    before = _export(s, GLOBEX_BOB)
    acme_bob = Scope("acme", "bob")

    for call in (
        lambda: s.mem.get(acme_bob, rid),
        lambda: s.mem.history(acme_bob, rid),
        lambda: s.mem.update(acme_bob, rid, expected_version=1, content="taken over"),
        lambda: s.mem.delete(acme_bob, rid),
        lambda: s.loop.run_until_complete(s.amem.get(acme_bob, rid)),
        lambda: s.loop.run_until_complete(s.amem.delete(acme_bob, rid)),
    ):
        with pytest.raises(NotFoundError):
            call()

    path = f"/v1/users/bob/memories/{rid}"
    for method, p, body in (
        ("GET", path, None),
        ("GET", f"{path}/history", None),
        ("PATCH", path, {"expected_version": 1, "content": "taken over"}),
        ("DELETE", path, None),
        ("POST", f"{path}/restore", None),
        ("POST", "/v1/users/bob/purge", {"ids": [rid]}),
    ):
        r = s.http(method, p, body)
        assert r.status_code in (403, 404), (method, p, r.status_code, r.text)
        assert SECRET_TEXT not in r.text

    for tool, args in (
        ("memory_get", {"id": rid}),
        ("memory_update", {"id": rid, "content": "taken over"}),
        ("memory_update", {"id": rid, "content": "taken over", "expected_version": 1}),
        ("memory_delete", {"id": rid}),
    ):
        answer = s.mcp(tool, args, user="bob")
        result = answer["result"]
        assert result["isError"], (tool, result)
        assert "no record" in result["content"][0]["text"], result
        assert SECRET_TEXT not in str(answer)

    # nor through a listing or a search of acme's bob
    answer = s.mcp("memory_search", {"query": "launch date March"}, user="bob")
    assert SECRET_TEXT not in str(answer)
    r = s.http("POST", "/v1/users/bob/search", {"query": "launch date March"})
    assert r.status_code == 200 and SECRET_TEXT not in r.text
    assert _export(s, GLOBEX_BOB) == before


def _race(s: Surfaces, rid: str, user: str) -> dict[str, Any]:
    scope = Scope("acme", user)
    barrier = threading.Barrier(3)
    out: dict[str, Any] = {}

    def lib() -> None:
        barrier.wait()
        try:
            out["lib"] = s.mem.update(scope, rid, expected_version=1, content="edited by lib")
        except ConflictError as exc:
            out["lib"] = exc

    def http() -> None:
        barrier.wait()
        body = {"expected_version": 1, "content": "edited by http"}
        out["http"] = s.http("PATCH", f"/v1/users/{user}/memories/{rid}", body)

    def mcp() -> None:
        barrier.wait()
        args = {"id": rid, "content": "edited by mcp", "expected_version": 1}
        out["mcp"] = s.mcp("memory_update", args, user=user)

    threads = [threading.Thread(target=f) for f in (lib, http, mcp)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return out


def test_one_record_edited_through_three_surfaces_at_once(surfaces: Surfaces) -> None:
    s, user = surfaces, "carol"
    for round_ in range(6):
        rid = s.mem.add(Scope("acme", user), f"the note of round {round_}", dedup=False).id
        out = _race(s, rid, user)
        won = []
        if not isinstance(out["lib"], ConflictError):
            won.append("lib")
        if out["http"].status_code == 200:
            won.append("http")
        else:
            assert out["http"].status_code == 409, out["http"].text
        result = out["mcp"]["result"]
        if not result["isError"]:
            won.append("mcp")
        else:
            assert "version" in result["content"][0]["text"], result
        assert len(won) == 1, (won, out)
        rec = s.mem.get(Scope("acme", user), rid)
        assert rec.version == 2 and rec.text == f"edited by {won[0]}", (won, rec)
        history = s.mem.history(Scope("acme", user), rid)
        assert [h.version for h in history] == [1, 2]
