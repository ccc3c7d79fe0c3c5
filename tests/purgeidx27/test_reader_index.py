"""The index of readers (store/purged_reader.py) is kept by every write path: after each
step of a random sequence of adds (some shared at once, through an import), set_access,
updates, deletes, restores, imports with past versions, record purges and whole-user
purges, the index holds exactly what a full scan of the store finds: every version of
every record naming a reader, and every set_access event naming one. SQLite by
hypothesis; PostgreSQL on a few fixed sequences."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Memory, Scope
from memstrata.errors import MemstrataError

from .scan import pg_scan, sqlite_scan

T = "acme"
OWNERS = ("bob", "erin")
READERS = ("carol", "dave", "erin", "bob", "ü-zoë")

step = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(OWNERS)),
    st.tuples(
        st.just("share"),
        st.integers(0, 7),
        st.lists(st.sampled_from(READERS), max_size=3, unique=True),
    ),
    st.tuples(st.just("update"), st.integers(0, 7)),
    st.tuples(st.just("delete"), st.integers(0, 7)),
    st.tuples(st.just("restore"), st.integers(0, 7)),
    st.tuples(st.just("import"), st.sampled_from(OWNERS)),
    st.tuples(st.just("purge_record"), st.integers(0, 7)),
    st.tuples(st.just("purge_user"), st.sampled_from(READERS)),
)


def run(mem: Memory, steps: list[tuple[Any, ...]], check: Any) -> int:
    """Run ``steps``, comparing the index with a scan after each; the most rows seen."""
    most = 0
    made: list[tuple[str, str]] = []  # (owner, id)
    for n, s in enumerate(steps):
        kind = s[0]
        try:
            if kind == "add":
                made.append((s[1], mem.add(Scope(T, s[1]), f"note {n} of {s[1]}").id))
            elif kind == "import":  # a copy of the owner's records, versions and readers
                buf = io.StringIO()
                mem.export_records(Scope(T, s[1]), buf)
                buf.seek(0)
                mem.import_records(buf, into=Scope(T, f"copy{n}"))
            elif kind == "purge_user":
                mem.purge(Scope(T, s[1]))
            elif made:
                owner, rid = made[s[1] % len(made)]
                scope = Scope(T, owner)
                if kind == "share":
                    mem.set_access(scope, rid, visibility="shared", allowed_users=s[2])
                elif kind == "update":
                    cur = mem.get(scope, rid)
                    mem.update(scope, rid, expected_version=cur.version, content=f"new {n}")
                elif kind == "delete":
                    mem.delete(scope, rid)
                elif kind == "restore":
                    mem.restore(scope, rid)
                elif kind == "purge_record":
                    mem.purge(scope, [rid])
        except MemstrataError:
            pass  # a step on a record deleted or purged before: refused, nothing written
        index, found = check()
        assert index == found, (s, index ^ found)
        most = max(most, len(index))
    return most


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(step, min_size=1, max_size=14))
def test_sqlite_index_is_what_a_scan_finds(tmp_path: Path, steps: list[tuple[Any, ...]]) -> None:
    db = tmp_path / f"p{abs(hash(str(steps)))}.db"
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:

        def check() -> Any:
            conn = sqlite3.connect(db)
            try:
                return sqlite_scan(conn)
            finally:
                conn.close()

        run(mem, steps, check)


FIXED = [
    [
        ("add", "bob"),
        ("share", 0, ["carol", "dave"]),
        ("update", 0),
        ("share", 0, ["dave"]),
        ("add", "erin"),
        ("share", 1, ["carol", "bob"]),
        ("import", "bob"),
        ("delete", 0),
        ("restore", 0),
        ("purge_user", "carol"),
        ("share", 1, ["ü-zoë"]),
        ("purge_record", 1),
        ("purge_user", "ü-zoë"),
        ("purge_user", "bob"),
    ],
    [
        ("add", "erin"),
        ("share", 0, ["carol"]),
        ("import", "erin"),
        ("purge_record", 0),
        ("purge_user", "carol"),
        ("purge_user", "erin"),
    ],
]


@pytest.mark.parametrize("steps", FIXED)
def test_postgresql_index_is_what_a_scan_finds(pg_url: str, steps: list[tuple[Any, ...]]) -> None:
    import psycopg
    from psycopg.rows import dict_row

    with Memory(pg_url, embedder="hashing", background=False) as mem:
        store: Any = mem.store

        def check() -> Any:
            with store._pool.connection() as conn:
                conn.row_factory = dict_row
                return pg_scan(conn)

        assert run(mem, steps, check) >= 2  # the check sees rows
    assert psycopg  # imported for the dict rows' connection


@pytest.mark.parametrize("steps", FIXED)
def test_sqlite_fixed_sequences(tmp_path: Path, steps: list[tuple[Any, ...]]) -> None:
    db = tmp_path / "f.db"
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:

        def check() -> Any:
            conn = sqlite3.connect(db)
            try:
                return sqlite_scan(conn)
            finally:
                conn.close()

        assert run(mem, steps, check) >= 2  # the check sees rows
