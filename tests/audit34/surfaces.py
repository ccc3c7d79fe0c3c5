"""One memstrata store reached through each of its ways in, for the tests of session 34's
audit: the library (``Memory`` and ``AsyncMemory``), the HTTP API and MCP (both of one
``create_app``, the app ``memstrata serve`` runs, driven by a real HTTP client: MCP as raw
JSON-RPC bodies POSTed to its ``/mcp``), so one input can be sent through each and the
answers compared. Each surface writes as a user of its own (``USERS``), so what each
stored can be compared record by record."""

from __future__ import annotations

import asyncio
import io
import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi.testclient import TestClient

from memstrata import AsyncMemory, Filters, Memory, Scope
from memstrata.errors import MemstrataError
from memstrata.records import MemoryRecord
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.keys import SQLiteKeyStore

__all__ = ["SURFACES", "TENANT", "Answer", "Surfaces", "record_of"]

TENANT = "acme"
SURFACES = ("lib", "aio", "http", "mcp")
USERS = {s: f"user-{s}" for s in SURFACES}
MCP_HEADERS = {
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}


@dataclass
class Answer:
    """What a surface answered: ``record`` (the stored record's fields) when it accepted,
    else ``error`` (its message) and ``kind`` (the exception's class, the HTTP status or
    "tool error")."""

    surface: str
    record: dict[str, Any] | None = None
    error: str | None = None
    kind: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return self.record is not None


def record_of(r: MemoryRecord) -> dict[str, Any]:
    return {
        "text": r.text,
        "tags": list(r.tags),
        "metadata": json.loads(json.dumps(dict(r.metadata))),
        "observed_at": r.observed_at.isoformat(),
        "importance": r.importance,
        "version": r.version,
        "session": r.session,
        "role": None if r.role is None else r.role.value,
        "type": r.type.value,
        "id": r.id,
    }


def _jsonable(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


class Surfaces:
    """The four ways in on the store at ``url`` (SQLite or PostgreSQL)."""

    def __init__(self, url: str, tmp: Path) -> None:
        self.url = url
        self.mem = Memory(url, embedder="hashing", background=False)
        self.loop = asyncio.new_event_loop()
        self.amem = AsyncMemory(url, embedder="hashing", background=False)
        self.loop.run_until_complete(self.amem.open())  # its services need it open
        self.keys = SQLiteKeyStore(str(tmp / "keys.db"))
        self.native = AsyncMemory(url, embedder="hashing", background=False)
        app = create_app(self.native, self.keys, limits=Limits(rate=0), on_close=self.native.aclose)
        # the MCP endpoint checks the Host header (DNS rebinding): a local address with a port
        self.client = TestClient(
            app, raise_server_exceptions=False, base_url="http://127.0.0.1:8080"
        )
        self.client.__enter__()
        self.secret = self.keys.create(TENANT).secret
        self.other_secret = self.keys.create("globex").secret
        self._rid = 0

    def close(self) -> None:
        self.client.__exit__(None, None, None)
        self.loop.run_until_complete(self.amem.aclose())
        self.loop.close()
        self.mem.close()
        self.keys.close()

    # --- what is stored --------------------------------------------------------------------
    def scope(self, surface: str) -> Scope:
        return Scope(TENANT, USERS[surface])

    def snapshot(self, surface: str) -> tuple[int, str]:
        """The user's record count (deleted ones too) and export, versions included."""
        scope = self.scope(surface)
        count = self.mem.store.count(scope, Filters(include_deleted=True))
        out = io.StringIO()
        self.mem.export_records(scope, out)
        lines = out.getvalue().splitlines()
        return count, "\n".join(x for x in lines if '"exported_at"' not in x)

    # --- the ways in ------------------------------------------------------------------------
    def auth(self, secret: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {secret or self.secret}"}

    def http(self, method: str, path: str, body: Any = None, secret: str | None = None) -> Any:
        raw = None if body is None else json.dumps(body, allow_nan=True)
        headers = {**self.auth(secret), "content-type": "application/json"}
        return self.client.request(method, path, headers=headers, content=raw)

    def mcp(
        self,
        tool: str,
        arguments: dict[str, Any],
        user: str | None = None,
        secret: str | None = None,
    ) -> dict[str, Any]:
        """A ``tools/call`` POSTed to ``/mcp`` as the JSON text a client writes (NaN as the
        ``NaN`` token Python's writers emit); the JSON-RPC answer."""
        self._rid += 1
        body = {
            "jsonrpc": "2.0",
            "id": self._rid,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        headers: dict[str, Any] = {**self.auth(secret), **MCP_HEADERS}
        headers["content-type"] = "application/json"
        if user is not None:
            headers["x-memstrata-user"] = user.encode("utf-8", "surrogatepass")
        r = self.client.post("/mcp", headers=headers, content=json.dumps(body, allow_nan=True))
        assert r.status_code < 500, (r.status_code, r.text[:500])
        answer: dict[str, Any] = r.json() if r.content else {"status": r.status_code}
        answer["status"] = r.status_code
        return answer

    # --- one write through each -------------------------------------------------------------
    def add(self, surface: str, content: Any, **fields: Any) -> Answer:
        scope = self.scope(surface)
        if surface == "lib":
            try:
                return Answer(surface, record_of(self.mem.add(scope, content, **fields)))
            except MemstrataError as exc:
                return Answer(surface, error=str(exc), kind=type(exc).__name__)
        if surface == "aio":
            try:
                rec = self.loop.run_until_complete(self.amem.add(scope, content, **fields))
                return Answer(surface, record_of(rec))
            except MemstrataError as exc:
                return Answer(surface, error=str(exc), kind=type(exc).__name__)
        body = {"content": content, **{k: _jsonable(v) for k, v in fields.items()}}
        if surface == "http":
            r = self.http("POST", f"/v1/users/{quote(USERS['http'], safe='')}/memories", body)
            assert r.status_code in (201, 400, 413, 422), (r.status_code, r.text[:500])
            if r.status_code == 201:
                return Answer(surface, self._stored("http", r.json()["id"]))
            return Answer(surface, error=r.json()["error"]["message"], kind=str(r.status_code))
        answer = self.mcp("memory_add", body, user=USERS["mcp"])
        if "error" in answer:  # a JSON-RPC error (the body itself refused)
            return Answer(surface, error=answer["error"]["message"], kind="rpc error")
        result = answer["result"]
        text = result["content"][0]["text"]
        if result.get("isError"):
            return Answer(surface, error=text, kind="tool error")
        return Answer(surface, self._stored("mcp", json.loads(text)["id"]))

    def _lib_call(self, surface: str, call: Any) -> Answer:
        """``call(memory)`` on the sync memory (``lib``) or awaited on the async one."""
        try:
            if surface == "lib":
                return Answer(surface, record_of(call(self.mem)))
            rec = self.loop.run_until_complete(call(self.amem))
            return Answer(surface, record_of(rec))
        except MemstrataError as exc:
            return Answer(surface, error=str(exc), kind=type(exc).__name__)

    def _http_answer(self, surface: str, r: Any, scope: Scope | None = None) -> Answer:
        assert r.status_code in (200, 201, 400, 404, 409, 413, 422), (r.status_code, r.text[:500])
        if r.status_code in (200, 201):
            rid = r.json()["id"]
            rec = self.mem.get(scope or self.scope(surface), rid)
            return Answer(surface, record_of(rec))
        return Answer(surface, error=r.json()["error"]["message"], kind=str(r.status_code))

    def _mcp_answer(
        self, surface: str, answer: dict[str, Any], scope: Scope | None = None
    ) -> Answer:
        if "error" in answer:
            return Answer(surface, error=answer["error"]["message"], kind="rpc error")
        result = answer["result"]
        text = result["content"][0]["text"]
        if result.get("isError"):
            return Answer(surface, error=text, kind="tool error")
        rec = self.mem.get(scope or self.scope(surface), json.loads(text)["id"])
        return Answer(surface, record_of(rec))

    def pin(self, surface: str, text: Any, priority: Any = 0) -> Answer:
        """A key memory (``key.set`` / POST key-memory / ``key_memory_set``)."""
        scope = self.scope(surface)
        if surface == "lib":
            return self._lib_call(surface, lambda m: m.key.set(scope, text, priority))
        if surface == "aio":
            return self._lib_call(surface, lambda m: m.key.set(scope, text, priority))
        body = {"text": text, "priority": priority}
        if surface == "http":
            user = quote(USERS["http"], safe="")
            r = self.http("POST", f"/v1/users/{user}/key-memory", body)
            return self._http_answer(surface, r)
        return self._mcp_answer(surface, self.mcp("key_memory_set", body, user=USERS["mcp"]))

    def edit(self, surface: str, record_id: str, content: Any) -> Answer:
        """A new version of the text (``update`` / PATCH / ``memory_update``), at the version
        read just before."""
        scope = self.scope(surface)
        version = self.mem.get(scope, record_id).version
        if surface in ("lib", "aio"):
            return self._lib_call(
                surface,
                lambda m: m.update(scope, record_id, expected_version=version, content=content),
            )
        if surface == "http":
            path = f"/v1/users/{quote(USERS['http'], safe='')}/memories/{record_id}"
            body = {"expected_version": version, "content": content}
            return self._http_answer(surface, self.http("PATCH", path, body))
        args = {"id": record_id, "content": content, "expected_version": version}
        return self._mcp_answer(surface, self.mcp("memory_update", args, user=USERS["mcp"]))

    def patch(self, surface: str, record_id: str, **fields: Any) -> Answer:
        """``update`` / PATCH with any of its fields, at the version read just before."""
        scope = self.scope(surface)
        version = self.mem.get(scope, record_id).version
        if surface in ("lib", "aio"):
            return self._lib_call(
                surface,
                lambda m: m.update(scope, record_id, expected_version=version, **fields),
            )
        path = f"/v1/users/{quote(USERS['http'], safe='')}/memories/{record_id}"
        return self._http_answer(
            surface, self.http("PATCH", path, {"expected_version": version, **fields})
        )

    def say(self, surface: str, session: Any, role: Any, content: Any, **fields: Any) -> Answer:
        """A turn (``add_message`` / POST .../sessions/S/messages); MCP has no such tool."""
        if surface in ("lib", "aio"):
            try:
                scope = Scope(TENANT, USERS[surface], session=session)
            except MemstrataError as exc:
                return Answer(surface, error=str(exc), kind=type(exc).__name__)
            return self._lib_call(surface, lambda m: m.add_message(scope, role, content, **fields))
        user = quote(USERS["http"], safe="")
        path = f"/v1/users/{user}/sessions/{_path_id(session)}/messages"
        body = {"role": role, "content": content, **{k: _jsonable(v) for k, v in fields.items()}}
        return self._http_answer(surface, self.http("POST", path, body))

    def _stored(self, surface: str, rid: str) -> dict[str, Any]:
        return record_of(self.mem.get(self.scope(surface), rid))


def _path_id(value: str) -> str:
    """An id as a path segment: its UTF-8 bytes percent-encoded (a lone surrogate as the
    bytes a careless encoder writes, which the server must refuse)."""
    return quote(value.encode("utf-8", "surrogatepass"), safe="")


def finite(value: Any) -> bool:
    return not (isinstance(value, float) and not math.isfinite(value))
