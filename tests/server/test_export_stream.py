"""``GET /v1/users/{user}/export`` streams as the memory walks the user's records: its first
bytes leave while the walk is still going, over both backends (an ``AsyncMemory`` awaited,
a sync ``Memory`` on worker threads), and a failure in the middle of the stream cannot pass
for a complete export.

Before: the route wrote the whole export into a spooled temporary file, then sent it, so
nothing arrived until the walk had ended (and it was held whole, in RAM or on disk)."""

from __future__ import annotations

import io
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest

from memstrata import AsyncMemory, Memory, Scope
from memstrata.errors import ImportFormatError, StoreError
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.keys import SQLiteKeyStore

from .conftest import uvicorn_on

N, PAGE = 25, 10  # three pages: 10, 10, 5
ALICE = Scope("acme", "alice")


@dataclass
class Live:
    url: str
    headers: dict[str, str]
    admin: dict[str, str]
    store: Any  # the sync store under the served memory (its list_pages is patched)
    memory: Memory  # to look at the store


@pytest.fixture(params=["native", "threaded"])
def live(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Live]:
    monkeypatch.setattr("memstrata.portability.EXPORT_PAGE", PAGE)
    db = tmp_path / "s.db"
    mem = Memory(f"sqlite:///{db}", embedder="hashing", background=False)
    for i in range(N):
        mem.add(ALICE, f"memory number {i} of alice", dedup=False)
    keys = SQLiteKeyStore(str(db))
    member, admin = keys.create("acme").secret, keys.create("acme", role="admin").secret
    native = None
    if request.param == "native":
        native = AsyncMemory(f"sqlite:///{db}", embedder="hashing", background=False)
        app = create_app(native, keys, limits=Limits(rate=0), on_close=native.aclose, mcp=False)
    else:
        app = create_app(mem, keys, limits=Limits(rate=0), mcp=False)
    with uvicorn_on(app) as base:  # (the lifespan opens the AsyncMemory's store)
        store = native.store.sync if native is not None else mem.store  # type: ignore[attr-defined]
        yield Live(
            f"{base}/v1/users/alice",
            {"Authorization": f"Bearer {member}"},
            {"Authorization": f"Bearer {admin}"},
            store,
            mem,
        )
    keys.close()
    mem.close()


def _after_first_page(
    store: Any, monkeypatch: pytest.MonkeyPatch, then: Callable[[], None]
) -> threading.Event:
    """Run ``then`` in the walk right after its first page was taken; the event is set
    when the walk gets there."""
    reached = threading.Event()
    pages = store.list_pages

    def walk(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for i, page in enumerate(pages(*args, **kwargs)):
            yield page
            if i == 0:
                reached.set()
                then()

    monkeypatch.setattr(store, "list_pages", walk)
    return reached


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(x) for x in data.decode("utf-8").splitlines() if x.strip()]


def test_the_first_page_arrives_while_the_walk_is_still_going(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()
    reached = _after_first_page(live.store, monkeypatch, lambda: gate.wait(30))
    try:
        with (
            httpx2.Client(timeout=httpx2.Timeout(10, read=5)) as client,
            client.stream("GET", f"{live.url}/export", headers=live.headers) as r,
        ):
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("application/x-ndjson")
            assert "x-record-count" not in r.headers  # only the end line knows the count
            received = b""
            chunks = r.iter_raw()
            while received.count(b"\n") < 1 + PAGE:  # the header and the first page
                received += next(chunks)
            assert reached.wait(10)  # the walk went on to page 2, and waits there
            gate.set()
            for chunk in chunks:
                received += chunk
    finally:
        gate.set()
    lines = _lines(received)
    assert lines[0]["format"] == "memstrata.export" and lines[0]["version"] == 3
    assert lines[-1] == {"end": "complete", "count": N, "past_versions": 0}
    assert len(lines) == N + 2
    assert sorted(x["record"]["content"]["raw"] for x in lines[1:-1]) == sorted(
        f"memory number {i} of alice" for i in range(N)
    )


def test_a_failure_after_the_first_page_is_not_a_complete_export(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail() -> None:
        raise StoreError("the disk went away", retryable=True)

    _after_first_page(live.store, monkeypatch, fail)
    received = b""
    with (
        httpx2.Client(timeout=10) as client,
        client.stream("GET", f"{live.url}/export", headers=live.headers) as r,
    ):
        assert r.status_code == 200  # the first page was on its way
        with pytest.raises(httpx2.RemoteProtocolError):  # the chunked body is never ended
            for chunk in r.iter_raw():
                received += chunk
    lines = _lines(received)
    assert len(lines) == 1 + PAGE + 1
    assert lines[-1]["end"] == "failed"
    assert lines[-1]["error"] == {"code": "unavailable", "message": "the disk went away"}
    assert all(x.get("end") != "complete" for x in lines)
    # What arrived is refused by an import, by the library and over HTTP.
    with pytest.raises(ImportFormatError, match="export failed while it was written"):
        live.memory.import_records(io.StringIO(received.decode()), into=Scope("acme", "carol"))
    imp = httpx2.post(
        "http://" + live.url.split("//")[1].split("/")[0] + "/v1/users/carol/import",
        content=received,
        headers={**live.admin, "content-type": "application/x-ndjson"},
        timeout=10,
    )
    assert imp.status_code == 422 and "export failed" in imp.json()["error"]["message"]
    assert live.memory.list(Scope("acme", "carol")) == []


def _cut_export(live: Live) -> bytes:
    received = b""
    with (
        httpx2.Client(timeout=10) as client,
        client.stream("GET", f"{live.url}/export", headers=live.headers) as r,
    ):
        assert r.status_code == 200
        with pytest.raises(httpx2.RemoteProtocolError):
            for chunk in r.iter_raw():
                received += chunk
    return received


def _logged(caplog: pytest.LogCaptureFixture, path: str) -> list[logging.LogRecord]:
    """The records logged once the server has written the access line of ``path``."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if any(
            getattr(r, "path", None) == path and r.name.endswith("access") for r in caplog.records
        ):
            break
        time.sleep(0.02)
    time.sleep(0.2)  # uvicorn's own line follows the app's return
    return list(caplog.records)


@pytest.mark.parametrize(
    ("error", "code", "traceback"),
    [
        (StoreError("the disk went away", retryable=True), "unavailable", False),
        (RuntimeError("a bug"), "internal_error", True),
    ],
    ids=["store-error", "internal-error"],
)
def test_a_failure_after_the_first_page_is_logged_once_with_its_context(
    live: Live,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    error: Exception,
    code: str,
    traceback: bool,
) -> None:
    def fail() -> None:
        raise error

    _after_first_page(live.store, monkeypatch, fail)
    caplog.set_level(logging.INFO)
    received = _cut_export(live)
    assert _lines(received)[-1]["end"] == "failed"
    records = _logged(caplog, "/v1/users/alice/export")
    errors = [r for r in records if r.levelno >= logging.ERROR]
    ours = [r for r in errors if r.name.startswith("memstrata")]
    # Before: "unavailable on GET ..." and "unexpected error" with a traceback, then
    # uvicorn's "Exception in ASGI application" with two more.
    assert len(ours) == 1, [r.getMessage() for r in ours]
    line = ours[0]
    assert "export of user alice failed" in line.getMessage()
    assert (line.tenant, line.user, line.code, line.method) == ("acme", "alice", code, "GET")  # type: ignore[attr-defined]
    assert line.path == "/v1/users/alice/export" and line.key_id  # type: ignore[attr-defined]
    assert line.lines_sent == 1 + PAGE  # type: ignore[attr-defined]
    assert bool(line.exc_info) is traceback  # an internal error's traceback, once
    others = [r for r in errors if r is not line]
    assert not any(r.exc_info for r in others)
    assert [r.getMessage() for r in others] == [
        "ASGI callable returned without completing response."
    ]
    # an operator sees it in the metrics too (the 200 in the access log cannot say it)
    root = live.url.split("/v1/", 1)[0]
    metrics = httpx2.get(f"{root}/metrics", headers=live.admin, timeout=10).text
    assert f'memstrata_export_streams_cut_total{{code="{code}"}} 1.0' in metrics


def test_a_failure_before_the_first_page_is_an_error_answer(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    def down(*args: Any, **kwargs: Any) -> Iterator[Any]:
        raise StoreError("the disk went away", retryable=True)
        yield  # a generator, as list_pages is

    monkeypatch.setattr(live.store, "list_pages", down)
    r = httpx2.get(f"{live.url}/export", headers=live.headers, timeout=10)
    assert r.status_code == 503, r.text
    assert r.json()["error"]["code"] == "unavailable"  # as any store error is answered
