"""``wait_for_jobs`` (what ``memstrata worker`` waits in on PostgreSQL) opens its LISTEN
connection with the store's ``connect_timeout``: a server that accepts the TCP connection
and never answers (a hung server, a proxy whose backend is gone) is reported as a
``StoreError`` naming it, within the timeout. Before session 22 the connection had no
timeout and the worker hung in it for good."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import memstrata.store.postgres.store as pg_store
from memstrata.errors import StoreError
from memstrata.store.postgres import PostgresStore


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port whose listener takes connections (the kernel's backlog) and never speaks."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    yield sock.getsockname()[1]
    sock.close()


def test_wait_for_jobs_gives_up_on_a_server_that_never_answers(
    pg_url: str, silent_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_store, "CONNECT_TIMEOUT_S", 1, raising=False)  # (a shorter wait)
    store = PostgresStore(pg_url)
    try:
        store.options = dataclasses.replace(
            store.options, conninfo=f"postgresql://memstrata@127.0.0.1:{silent_server}/memstrata"
        )
        out: dict[str, Any] = {}

        def wait() -> None:
            started = time.monotonic()
            try:
                store.wait_for_jobs(0.1)
            except StoreError as exc:
                out["error"] = exc
            out["seconds"] = time.monotonic() - started

        thread = threading.Thread(target=wait, daemon=True)
        thread.start()
        thread.join(15)
        assert not thread.is_alive(), "wait_for_jobs hung on a server that never answers"
        assert isinstance(out.get("error"), StoreError), out
        assert out["seconds"] < 10
        assert "127.0.0.1" in str(out["error"]) or "timeout" in str(out["error"]).lower()
    finally:
        store.close()
