"""Bad storage URLs and unusable databases (issue 8 "Bad input"): each is a MemstrataError
naming the problem and the fix, raised before anything is written.

Roles and databases are made on the test server for the test and dropped after it: a
database without the pgvector extension and a role that may not create it, a role that may
not create memstrata's schema.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from memstrata.errors import SchemaVersionError, StoreError, ValidationError
from memstrata.store import open_store
from memstrata.store.migrate import copy_store
from servers import PgServer

_CLI = "import sys; from memstrata.cli.app import main; sys.argv[0] = 'memstrata'; main()"


def _as(
    admin_url: str, *, user: str | None = None, password: str = "", database: str | None = None
) -> str:
    """The admin URL with another user and/or database."""
    parts = urlsplit(admin_url)
    netloc = parts.netloc
    if user is not None:
        host = netloc.rsplit("@", 1)[1] if "@" in netloc else netloc
        netloc = f"{user}:{password}@{host}"
    path = f"/{database}" if database is not None else parts.path
    return urlunsplit((parts.scheme, netloc, path, parts.query, ""))


@pytest.fixture
def sandbox(pg_server: PgServer) -> Iterator[tuple[str, str]]:
    """A fresh database (no pgvector enabled in it) and a plain login role; dropped after."""
    tag = uuid.uuid4().hex[:10]
    db, role = f"db_{tag}", f"role_{tag}"
    with psycopg.connect(pg_server.admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{db}"')
        conn.execute(f"CREATE ROLE \"{role}\" LOGIN PASSWORD 'pw-{tag}'")
    yield db, role
    with psycopg.connect(pg_server.admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        conn.execute(f'DROP ROLE IF EXISTS "{role}"')


def _schemas(admin_url: str, db: str) -> set[str]:
    with psycopg.connect(_as(admin_url, database=db), autocommit=True) as conn:
        return {
            r[0]
            for r in conn.execute(
                "SELECT nspname FROM pg_namespace WHERE nspname "
                "NOT LIKE 'pg\\_%' AND nspname != "
                "'information_schema'"
            ).fetchall()
        }


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://app@[not-an-ipv6/db",
        "postgresql://app@db.internal:99999/memdb",
        "postgresql://app@db.internal:port/memdb",
    ],
)
def test_a_malformed_postgres_url_is_a_validation_error(url: str) -> None:
    with pytest.raises(ValidationError, match="malformed.*postgresql://user:password@host"):
        open_store(url)


def test_a_socket_url_without_a_host_opens(pg_url: str) -> None:
    """``postgresql:///db?host=/socket/dir`` is libpq's own form for a local socket."""
    parts = urlsplit(pg_url)
    if parts.hostname:  # a server of your own, over TCP: the form does not apply
        pytest.skip("MEMSTRATA_TEST_POSTGRES_URL names a TCP host")
    user = parts.username or "postgres"
    url = f"postgresql://{parts.path}?{parts.query}&user={user}"
    store = open_store(url)
    store.close()


def test_a_database_without_pgvector_and_no_right_to_enable_it(
    pg_server: PgServer, sandbox: tuple[str, str]
) -> None:
    db, role = sandbox
    url = _as(pg_server.admin_url, user=role, password=f"pw-{role[5:]}", database=db)
    with pytest.raises(StoreError, match="pgvector.*CREATE EXTENSION vector.*nothing was written"):
        open_store(url)
    assert "memstrata" not in _schemas(pg_server.admin_url, db)


def test_a_role_that_may_not_create_the_schema(
    pg_server: PgServer, sandbox: tuple[str, str]
) -> None:
    db, role = sandbox
    with psycopg.connect(_as(pg_server.admin_url, database=db), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    url = _as(pg_server.admin_url, user=role, password=f"pw-{role[5:]}", database=db)
    with pytest.raises(StoreError, match="permission denied.*GRANT CREATE ON DATABASE.*nothing"):
        open_store(url)
    assert "memstrata" not in _schemas(pg_server.admin_url, db)


def test_a_sqlite_file_that_is_not_a_database(tmp_path: Path) -> None:
    junk = tmp_path / "notes.db"
    junk.write_text("these are my notes, not a database\n" * 200)
    before = junk.read_bytes()
    with pytest.raises(StoreError, match="not a database; point the URL at a memstrata store"):
        open_store(f"sqlite:///{junk}")
    assert junk.read_bytes() == before


def test_migrating_from_a_newer_sqlite_store_writes_nothing_to_the_target(
    tmp_path: Path, pg_url: str, pg_server: PgServer
) -> None:
    newer = tmp_path / "newer.db"
    open_store(f"sqlite:///{newer}").close()
    conn = sqlite3.connect(newer)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(SchemaVersionError, match="upgrade memstrata"):
        copy_store(f"sqlite:///{newer}", pg_url)
    schema = pg_url.rsplit("schema=", 1)[1]
    with psycopg.connect(pg_server.admin_url, autocommit=True) as c:
        assert c.execute("SELECT to_regnamespace(%s)", (schema,)).fetchone() == (None,)


def test_migrating_into_a_newer_postgres_schema_is_refused(
    tmp_path: Path, pg_url: str, pg_server: PgServer
) -> None:
    src = f"sqlite:///{tmp_path / 'src.db'}"
    open_store(src).close()
    open_store(pg_url).close()
    schema = pg_url.rsplit("schema=", 1)[1]
    with psycopg.connect(pg_server.admin_url, autocommit=True) as c:
        c.execute(f'INSERT INTO "{schema}".schema_migrations (version) VALUES (99)')
    with pytest.raises(SchemaVersionError, match="upgrade memstrata"):
        copy_store(src, pg_url)


@pytest.mark.parametrize(
    "target",
    [
        "postgresql://nobody@127.0.0.1:1/memdb",
        "postgresql://app:secret@[::1/memdb",
        "mysql://app@db/memdb",
    ],
)
def test_migrate_to_a_bad_url_exits_2_and_names_it(tmp_path: Path, target: str) -> None:
    src = tmp_path / "src.db"
    open_store(f"sqlite:///{src}").close()
    before = src.read_bytes()
    done = subprocess.run(
        [sys.executable, "-c", _CLI, "--db", f"sqlite:///{src}", "migrate", "--to", target],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert any(word in done.stderr for word in ("cannot connect", "malformed", "unknown store"))
    assert "secret" not in done.stderr
    assert src.read_bytes() == before
