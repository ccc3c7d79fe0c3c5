"""A SQLite store's failure says whether retrying can help, in the library
(``StoreError.retryable``), over HTTP (503 ``unavailable`` with ``Retry-After``, or 500
``store_failed`` without it) and over MCP (the tool error says which).

Before session 26 a read of a damaged file (a search, a context, a get) raised SQLite's own
``sqlite3.DatabaseError`` ("database disk image is malformed"), which ``memstrata serve``
answered 503 with ``Retry-After: 5``, as it answered every store error: a client retried a
damaged file, a read-only file or a trigger's refusal forever.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client

from memstrata import AsyncMemory, Memory, Scope
from memstrata.errors import StoreError
from memstrata.mcp_server.identity import Identity
from memstrata.mcp_server.server import build_mcp_server
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.backend import ThreadedBackend
from memstrata.server.keys import SQLiteKeyStore

ME = Scope("acme", "alice", session="s1")
N = 200


def _filled(path: Path) -> list[str]:
    """A store of alice's N notes, closed (its WAL checkpointed into the file): their ids."""
    with Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem:
        return [
            mem.add(ME, f"fact number {i} about herons and lakes " * 5, dedup=False).id
            for i in range(N)
        ]


def _damage(path: Path, how: str) -> None:
    """A disk that lost the back two thirds of the file: overwritten with garbage, or cut
    off (the first pages, the schema and the store's metadata, still read)."""
    size = path.stat().st_size
    start = size // 3 // 8192 * 8192
    with path.open("r+b") as f:
        if how == "overwritten":
            f.seek(start)
            f.write(b"\xa5" * (size - start))
        else:
            f.truncate(start)


def _damaged(e: BaseException) -> None:
    assert isinstance(e, StoreError), repr(e)
    assert e.retryable is False
    assert isinstance(e.__cause__, sqlite3.DatabaseError)
    assert "damaged" in str(e) and "backup" in str(e), str(e)


@pytest.mark.parametrize("how", ["overwritten", "truncated"])
def test_reads_of_a_damaged_file_are_store_errors_not_to_retry(tmp_path: Path, how: str) -> None:
    path = tmp_path / "m.db"
    ids = _filled(path)
    _damage(path, how)
    calls: list[Callable[[Any], Any]] = [
        lambda m: m.search(ME, "heron"),
        lambda m: m.build_context(ME, "heron", token_budget=300),
        lambda m: m.get(ME, ids[-1]),
        lambda m: m.list(ME),
    ]
    # the file cut off loses pages its opening reads (SQLite checks the page count): the
    # opening is refused the same way, each time (a new Memory per call)
    for call in calls:
        with (
            pytest.raises(StoreError) as caught,
            Memory(f"sqlite:///{path}", embedder="hashing", background=False) as mem,
        ):
            call(mem)
        _damaged(caught.value)

    async def through_async() -> None:
        for call in calls:
            with pytest.raises(StoreError) as caught:
                async with AsyncMemory(
                    f"sqlite:///{path}", embedder="hashing", background=False
                ) as m:
                    await call(m)
            _damaged(caught.value)

    asyncio.run(through_async())


@contextmanager
def served(tmp_path: Path, db: Path) -> Iterator[tuple[TestClient, dict[str, str], AsyncMemory]]:
    """A server (in-process) on the store ``db``; its keys in a file of their own, so a
    damaged store leaves the keys readable."""
    keys = SQLiteKeyStore(str(tmp_path / "keys.db"))
    key = keys.create("acme").secret
    native = AsyncMemory(f"sqlite:///{db}", embedder="hashing", background=False)
    app = create_app(native, keys, limits=Limits(rate=0), on_close=native.aclose)
    with TestClient(app) as client:
        yield client, {"Authorization": f"Bearer {key}"}, native


def _store_failed(r: Any) -> str:
    assert r.status_code == 500, r.text
    assert "retry-after" not in r.headers
    error = r.json()["error"]
    assert error["code"] == "store_failed", error
    assert "will not help" in error["message"], error
    return str(error["message"])


def test_http_answers_a_damaged_file_500_without_retry_after(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ids = _filled(db)
    _damage(db, "overwritten")
    with served(tmp_path, db) as (client, auth, _):
        for method, path, body in [
            ("POST", "/v1/users/alice/search", {"query": "heron"}),
            ("POST", "/v1/users/alice/context", {"query": "heron", "token_budget": 300}),
            ("GET", f"/v1/users/alice/memories/{ids[-1]}", None),
        ]:
            r = client.request(method, path, headers=auth, json=body)
            assert "damaged" in _store_failed(r), path


def test_mcp_says_a_damaged_store_is_not_worth_retrying(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    _filled(path)
    _damage(path, "overwritten")
    memory = Memory(f"sqlite:///{path}", embedder="hashing", background=False)
    server = build_mcp_server(ThreadedBackend(memory), Identity("acme", "alice", "s1"))

    async def main() -> str:
        async with Client(server) as client:
            r = await client.call_tool("memory_search", {"query": "heron"})
            assert r.is_error
            return "".join(getattr(c, "text", "") for c in r.content)

    try:
        text = asyncio.run(main())
    finally:
        memory.close()
    assert "damaged" in text and "Retrying will not help" in text, text


@contextmanager
def _read_only(path: Path) -> Iterator[None]:
    """The file read-only for this process: ``chattr +i`` as root (whom permissions do not
    stop), ``chmod 444`` otherwise."""
    root = os.geteuid() == 0
    if root:
        if shutil.which("chattr") is None:
            pytest.fail("running as root without chattr: cannot make a file read-only")
        subprocess.run(["chattr", "+i", str(path)], check=True)
    else:
        path.chmod(0o444)
    try:
        yield
    finally:
        if root:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        else:
            path.chmod(0o644)


def test_a_read_only_file_is_not_worth_retrying(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    _filled(db)
    with _read_only(db):
        mem = Memory(f"sqlite:///{db}", embedder="hashing", background=False)
        with pytest.raises(StoreError, match="cannot be written") as caught:
            mem.add(ME, "an egret", dedup=False)
        assert caught.value.retryable is False
        # the egret's embedding, buffered for the cache, cannot be written by close() either
        with pytest.raises(StoreError, match="cannot be written") as caught:
            mem.close()
        assert caught.value.retryable is False
        # the server's shutdown (its close) cannot write the buffered embedding either
        with (
            pytest.raises(StoreError, match="cannot be written"),
            served(tmp_path, db) as (client, auth, _),
        ):
            r = client.post("/v1/users/alice/memories", headers=auth, json={"content": "egret"})
            assert "writable" in _store_failed(r)


def test_a_trigger_refusal_is_not_worth_retrying(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    _filled(db)
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TRIGGER e26_refuse BEFORE INSERT ON records "
        "BEGIN SELECT RAISE(ABORT, 'refused by e26'); END"
    )
    conn.commit()
    conn.close()
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        with pytest.raises(StoreError, match="refused by e26") as caught:
            mem.add(ME, "an egret", dedup=False)
        assert caught.value.retryable is False
    with served(tmp_path, db) as (client, auth, _):
        r = client.post("/v1/users/alice/memories", headers=auth, json={"content": "egret"})
        assert "refused by e26" in _store_failed(r)


def test_a_lock_held_past_the_busy_timeout_is_still_503_with_retry_after(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.db"
    _filled(db)
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        mem.store._conn.execute("PRAGMA busy_timeout = 200")  # type: ignore[attr-defined]
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process writing, for longer than that
        try:
            with pytest.raises(StoreError, match="locked") as caught:
                mem.add(ME, "an egret", dedup=False)
            assert caught.value.retryable is True
        finally:
            other.execute("ROLLBACK")
        assert mem.add(ME, "an egret", dedup=False).text == "an egret"  # free: it writes
    with served(tmp_path, db) as (client, auth, native):
        assert client.get("/v1/users/alice/memories", headers=auth).status_code == 200
        native.store.sync._conn.execute("PRAGMA busy_timeout = 200")  # type: ignore[attr-defined]
        other.execute("BEGIN IMMEDIATE")
        try:
            r = client.post("/v1/users/alice/memories", headers=auth, json={"content": "heron"})
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert r.status_code == 503, r.text
        assert int(r.headers["retry-after"]) > 0
        assert r.json()["error"]["code"] == "unavailable"
        assert "locked" in r.json()["error"]["message"]
        r = client.post("/v1/users/alice/memories", headers=auth, json={"content": "heron"})
        assert r.status_code == 201, r.text


def test_a_compaction_the_lock_holds_up_is_a_store_error_worth_retrying(tmp_path: Path) -> None:
    """``compact()`` (and a purge's own VACUUM) ran outside a transaction, and SQLite's
    "database is locked" came out raw."""
    db = tmp_path / "m.db"
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        mem.add(ME, "a heron by the lake")
        mem.store._conn.execute("PRAGMA busy_timeout = 200")  # type: ignore[attr-defined]
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StoreError, match="locked") as caught:
                mem.store.compact()  # type: ignore[attr-defined]
            assert caught.value.retryable is True
            assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert mem.store.compact().checkpoint  # type: ignore[attr-defined]


def test_memstrata_worker_ends_on_a_store_waiting_does_not_mend(tmp_path: Path) -> None:
    """``memstrata worker`` retries a store that does not answer (a retryable
    ``StoreError``), and ends, saying why, on one it cannot write at all: until session 26
    it retried any ``StoreError`` but a newer schema or another model, so a read-only file
    kept it warning every 30 s forever."""
    db = tmp_path / "m.db"
    with Memory(f"sqlite:///{db}", embedder="hashing") as mem:  # background jobs queued
        mem.add_message(ME, "user", "I moved to Lisbon in May")
    args = ["--db", f"sqlite:///{db}", "--tenant", "acme", "--user", "alice"]
    with _read_only(db):
        try:
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "memstrata",
                    *args,
                    "--embedder",
                    "hashing",
                    "worker",
                    "--poll",
                    "0.1",
                ],  # fmt: skip
                capture_output=True,
                text=True,
                timeout=60,
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"the worker kept retrying a read-only store: {exc.stderr!r}")
    assert done.returncode != 0, done.stdout
    assert "cannot be written" in done.stderr, done.stderr
