"""Server fixtures: a real SQLite memory, its key store, an app, and a live uvicorn server."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient

from memstrata import AsyncMemory, FixedClock, Memory
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.keys import SQLiteKeyStore
from serving import free_port


@dataclass
class Served:
    memory: Memory  # a sync memory on the app's store, for the tests to look (and flush)
    keys: SQLiteKeyStore
    app: FastAPI
    client: TestClient
    admin: str  # tenant acme, admin
    member: str  # tenant acme, member
    other: str  # tenant globex, member
    url: str = ""  # base URL of a live server (live_server only)
    native: AsyncMemory | None = None  # the memory the app serves (opened by its lifespan)

    def h(self, secret: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {secret}"}


CLOCK = FixedClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))


def native_memory(db: Path) -> AsyncMemory:
    """What ``memstrata serve`` serves: an AsyncMemory, opened by the app's lifespan."""
    return AsyncMemory(f"sqlite:///{db}", embedder="hashing", background=False, clock=CLOCK)


def _build(tmp_path: Path, limits: Limits) -> tuple[Memory, SQLiteKeyStore, AsyncMemory, FastAPI]:
    db = tmp_path / "server.db"
    memory = Memory(f"sqlite:///{db}", embedder="hashing", background=False, clock=CLOCK)
    keys = SQLiteKeyStore(str(db))
    native = native_memory(db)
    return memory, keys, native, create_app(native, keys, limits=limits, on_close=native.aclose)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    memory, keys, native, app = _build(tmp_path, Limits(rate=0))
    # entered: the lifespan opens the AsyncMemory on the client's event loop
    with TestClient(app, raise_server_exceptions=False) as client:
        yield Served(
            memory,
            keys,
            app,
            client,
            keys.create("acme", role="admin").secret,
            keys.create("acme").secret,
            keys.create("globex").secret,
            native=native,
        )
    keys.close()
    memory.close()


@contextmanager
def uvicorn_on(app: Any) -> Iterator[str]:
    """``app`` served by a real uvicorn on a thread, on a free port of 127.0.0.1; yields its
    base URL once it is up, and stops it after."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def live_server(served: Served, tmp_path: Path) -> Iterator[Served]:
    """The same store and keys served by a real uvicorn on 127.0.0.1 (schemathesis, the
    browser, bench): an app of its own, whose AsyncMemory uvicorn's lifespan opens on the
    server's loop (as ``memstrata serve`` does)."""
    native = native_memory(tmp_path / "server.db")
    app = create_app(native, served.keys, limits=Limits(rate=0), on_close=native.aclose)
    with uvicorn_on(app) as url:
        served.url = url
        yield served
