"""``POST /v1/users/{user}/import`` reads its body as it arrives (into a spooled temporary
file, decoded as UTF-8 on the way) and the import reads that a page at a time: the body is
never held whole, and the body cap still answers 413.

Before: the route read the whole body (``await request.body()``), decoded it into one
string and gave the import a ``StringIO`` of it."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.requests import Request

from memstrata import Memory, Scope
from memstrata.filters import Filters
from memstrata.server.app import Limits

from .conftest import Served, _build

ALICE, CAROL = Scope("acme", "alice"), Scope("acme", "carol")
U = "/v1/users/carol"
N = 60


def _export(memory: Memory) -> bytes:
    for i in range(N):
        memory.add(ALICE, f"memory {i} of alice, été à Lyon", dedup=False)
    buf = io.StringIO()
    memory.export_records(ALICE, buf)
    return buf.getvalue().encode("utf-8")


def _chunks(data: bytes, size: int) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def _post(served: Served, body: object) -> object:
    return served.client.post(
        f"{U}/import",
        content=body,  # type: ignore[arg-type]
        headers={**served.h(served.admin), "content-type": "application/x-ndjson"},
    )


def _carol(served: Served) -> int:
    return served.memory.store.count(CAROL, Filters(include_deleted=True))


def test_the_body_is_read_as_it_arrives_not_whole(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _export(served.memory)

    async def whole(self: Request) -> bytes:
        raise AssertionError("the import read its body whole")

    monkeypatch.setattr(Request, "body", whole)
    spool = "memstrata.server.routes.portability.IMPORT_SPOOL_IN_MEMORY"
    monkeypatch.setattr(spool, 1024, raising=False)  # to disk after 1 kB
    # chunks of 7 bytes: characters (é, à) are cut between chunks
    r = _post(served, _chunks(data, 7))
    assert r.status_code == 200, r.text  # type: ignore[attr-defined]
    assert r.json()["imported"] == N  # type: ignore[attr-defined]
    texts = {x.text for x in served.memory.list(CAROL, limit=100)}
    assert texts == {f"memory {i} of alice, été à Lyon" for i in range(N)}


def test_a_body_that_is_not_utf8_is_refused_naming_its_byte(served: Served) -> None:
    data = _export(served.memory)
    at = len(data) - 50
    bad = data[:at] + b"\xff" + data[at + 1 :]
    r = _post(served, _chunks(bad, 100))
    assert r.status_code == 422  # type: ignore[attr-defined]
    message = r.json()["error"]["message"]  # type: ignore[attr-defined]
    assert f"not UTF-8 (invalid start byte at byte {at})" in message
    cut = data[: data.index("é".encode()) + 1]  # ends inside a character
    r = _post(served, _chunks(cut, 64))
    assert r.status_code == 422  # type: ignore[attr-defined]
    assert "not UTF-8" in r.json()["error"]["message"]  # type: ignore[attr-defined]
    r = _post(served, _chunks(b"  \n\n ", 2))
    assert r.status_code == 422  # type: ignore[attr-defined]
    assert "the import body is empty" in r.json()["error"]["message"]  # type: ignore[attr-defined]
    assert _carol(served) == 0


def test_the_import_body_cap_still_answers_413_when_chunked(tmp_path: Path) -> None:
    memory, keys, _native, app = _build(tmp_path, Limits(rate=0, max_import_body=4096))
    try:
        with TestClient(app, raise_server_exceptions=False) as client:
            admin = keys.create("acme", role="admin").secret
            data = _export(memory)
            assert len(data) > 4096
            r = client.post(
                f"{U}/import",
                content=_chunks(data, 1000),
                headers={"Authorization": f"Bearer {admin}"},
            )
            assert r.status_code == 413, r.text
            assert memory.store.count(CAROL, Filters(include_deleted=True)) == 0
    finally:
        keys.close()
        memory.close()
