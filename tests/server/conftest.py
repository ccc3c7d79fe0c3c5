"""Server fixtures: a real SQLite memory, its key store, an app, and a live uvicorn server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient

from memstrata import AsyncMemory, FixedClock, Memory
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.keys import SQLiteKeyStore


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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


CLI = [sys.executable, "-c", "from memstrata.cli.app import main; main()"]


@contextmanager
def serve_processes(db: str, tmp_path: Path, *extra: str, workers: int = 2) -> Iterator[str]:
    """``memstrata serve --workers N`` as a real subprocess on ``db`` (no MCP, no background
    jobs); yields its base URL once /readyz answers, and stops the whole process group."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    log = open(tmp_path / f"serve-{port}.log", "w+b")  # noqa: SIM115 - closed below
    cmd = [*CLI, "--db", db, "--embedder", "hashing", "serve", "--workers", str(workers),
           "--port", str(port), "--no-mcp", "--no-background", "--log-level", "warning",
           *extra]  # fmt: skip
    proc = subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 180  # N processes importing on a loaded machine
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"serve exited with {proc.returncode}: {log.read()[-3000:]!r}")
            try:
                if httpx2.get(f"{url}/readyz", timeout=5).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"serve --workers {workers} did not become ready in 180 s")
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log.close()


@contextmanager
def mcp_http_process(db: Path, tmp_path: Path, *options: str) -> Iterator[str]:
    """``memstrata mcp --transport http`` on ``db`` with ``options``, until the block ends;
    yields the endpoint's URL once it answers (401 without a key)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    log = open(tmp_path / "mcp.log", "w+b")  # noqa: SIM115 - closed below
    cmd = [sys.executable, "-c", "from memstrata.cli.app import main; main()",
           "--db", f"sqlite:///{db}", "--embedder", "hashing", "mcp", "--transport", "http",
           "--port", str(port), *options]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise AssertionError(log.read()[-3000:])
            try:
                with httpx2.Client() as plain:  # unauthenticated: 401, takes no token
                    if plain.post(url, json={}).status_code == 401:
                        break
            except httpx2.HTTPError:
                pass
            assert time.monotonic() < deadline, "memstrata mcp --transport http did not start"
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
