"""What only the SQLite store promises: schema versions, persistence, multi-process files."""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memstrata.errors import SchemaVersionError, ValidationError
from memstrata.filters import Filters
from memstrata.records import RecordStatus
from memstrata.scope import Scope
from memstrata.store import RecordWrite, open_store
from memstrata.store.memory import InMemoryStore
from memstrata.store.sqlite import SQLiteStore
from memstrata.store.sqlite.migrations import SCHEMA_VERSION

from .conftest import T0, Maker

ME = Scope("t1", "u1")


def test_newer_schema_is_refused_and_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE x (y)")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(SchemaVersionError, match="upgrade memstrata"):
        SQLiteStore(str(path))
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["future.db"]


def test_reopen_is_idempotent_and_persists(tmp_path: Path, maker: Maker) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    store = open_store(url)
    w = maker.write(text="persist me")
    store.insert([w])
    store.set_meta("embedding_model", "m1")
    store.close()
    again = open_store(url)
    assert again.get(ME, w.record.id) == w.record
    assert again.get_meta("embedding_model") == "m1"
    assert again.lexical_search(ME, ["persist"], 1, Filters())[0].id == w.record.id
    again.close()
    conn = sqlite3.connect(tmp_path / "m.db")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_second_connection_writes_reach_the_vector_cache(tmp_path: Path, maker: Maker) -> None:
    path = str(tmp_path / "shared.db")
    reader, writer = SQLiteStore(path), SQLiteStore(path)
    first = maker.write()
    writer.insert([first])
    assert [c.id for c in reader.vector_search(ME, first.vector, 5, Filters())] == [first.record.id]  # type: ignore[arg-type]
    second = maker.write()
    writer.insert([second])  # an append
    assert reader.vector_search(ME, second.vector, 1, Filters())[0].id == second.record.id  # type: ignore[arg-type]
    writer.set_status(ME, [second.record.id], RecordStatus.DELETED, T0)  # a change
    assert [c.id for c in reader.vector_search(ME, second.vector, 5, Filters())] == [
        first.record.id
    ]  # type: ignore[arg-type]
    writer.replace(
        ME,
        RecordWrite(replace(first.record, version=2), second.vector, first.terms),
        expected_version=1,
    )
    top = reader.vector_search(ME, second.vector, 1, Filters())  # type: ignore[arg-type]
    assert top[0].id == first.record.id and top[0].score == pytest.approx(1.0, abs=1e-5)
    writer.purge_user("t1", "u1")
    assert reader.vector_search(ME, second.vector, 5, Filters()) == []  # type: ignore[arg-type]
    reader.close()
    writer.close()


def test_failed_write_leaves_nothing(tmp_path: Path, maker: Maker) -> None:
    store = SQLiteStore(str(tmp_path / "a.db"))
    good = maker.write()
    bad = maker.write(maker.record(metadata={"x": object()}))
    with pytest.raises(ValidationError, match="JSON"):
        store.insert([good, bad])
    assert store.count(ME, Filters(include_deleted=True)) == 0
    store.close()


@pytest.mark.parametrize("url", ["redis://z", "nourl", "sqlite://rel.db"])
def test_bad_urls_say_what_to_use(url: str) -> None:
    with pytest.raises(ValidationError, match="sqlite:///"):
        open_store(url)


def test_url_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    rel = open_store("sqlite:///rel.db")
    assert isinstance(rel, SQLiteStore) and (tmp_path / "rel.db").exists()
    rel.close()
    absolute = open_store(f"sqlite:///{tmp_path / 'abs.db'}")
    assert (tmp_path / "abs.db").exists()
    absolute.close()
    assert isinstance(open_store("memory://"), InMemoryStore)


def test_content_only_replace_keeps_the_vector_cache(tmp_path: Path) -> None:
    """A search that records cluster hits must not make the next search reload the matrix."""
    import sqlite3
    from dataclasses import replace as dc_replace

    from memstrata import Content, MemoryRecord, Scope
    from memstrata.store import RecordWrite, open_store

    now = datetime(2026, 1, 1, tzinfo=UTC)
    path = tmp_path / "gen.db"
    store = open_store(f"sqlite:///{path}")
    rec = MemoryRecord(
        id="a",
        tenant="t",
        user="u",
        type="note",
        content=Content("x"),
        created_at=now,
        updated_at=now,
        observed_at=now,
    )
    store.insert([RecordWrite(rec, np.ones(4, np.float32) / 2, ("x",))])
    scope = Scope("t", "u")

    def generation() -> tuple[int, int]:
        with sqlite3.connect(path) as c:
            row = c.execute(
                "SELECT (SELECT max(generation) FROM scope_generation), "
                "(SELECT max(rev) FROM vectors)"
            ).fetchone()
        return int(row[0] or 0), int(row[1] or 0)

    before, rev = generation()
    v2 = dc_replace(rec, version=2, content=Content("x", structured={"hits": 1}))
    store.replace(scope, RecordWrite(v2, None, ("x",)), expected_version=1)
    assert generation() == (before, rev)
    # A masked column changed: that row is loaded again (a new change number), and the
    # user's matrix is not (the generation is bumped only by removals).
    v3 = dc_replace(v2, version=3, importance=0.9)
    store.replace(scope, RecordWrite(v3, None, ("x",)), expected_version=2)
    assert generation() == (before, rev + 1)
    store.close()


def test_the_vector_cache_drops_the_least_recently_searched_users(
    tmp_path: Path, maker: Maker
) -> None:
    """A process serving many users holds at most ``vector_cache_rows`` rows (plus one user
    larger than that): before, every matrix it ever loaded stayed in memory. A user's rows
    are their storage's (64 allocated at least) and one for the entry (session 29)."""
    store = SQLiteStore(str(tmp_path / "many.db"), vector_cache_rows=140)
    users = [f"u{i}" for i in range(6)]
    writes = {u: [maker.write(user=u) for _ in range(10)] for u in users}
    for u in users:
        store.insert(writes[u])

    def nearest(user: str, i: int) -> str:
        scope = Scope("t1", user)
        return store.vector_search(scope, writes[user][i].vector, 1, Filters())[0].id  # type: ignore[arg-type]

    for u in users:
        assert nearest(u, 3) == writes[u][3].record.id
        assert store._vectors.rows_held <= 140
    assert store._vectors.rows_held == 2 * 65  # the two most recent users
    loaded = store._vectors.rows_loaded
    assert nearest(users[-1], 0) == writes[users[-1]][0].record.id  # held: nothing read
    assert store._vectors.rows_loaded == loaded
    assert nearest(users[0], 9) == writes[users[0]][9].record.id  # dropped: read again
    assert store._vectors.rows_loaded == loaded + 10
    # one user alone larger than the bound is held (alone), and stays correct
    big = [maker.write(user="big") for _ in range(40)]
    store.insert(big)
    top = store.vector_search(Scope("t1", "big"), big[7].vector, 1, Filters())  # type: ignore[arg-type]
    assert top[0].id == big[7].record.id and store._vectors.rows_held == 81  # 2 * 40 + 1
    store.close()


_READ_WHILE_CLOSING = """
import sys, threading, time
from memstrata.store.sqlite import SQLiteStore

store = SQLiteStore(sys.argv[1])
started, out = threading.Event(), {}

def read():
    with store._read() as c:  # a read under way on another thread, as a search's lexical leg
        started.set()
        out["n"] = c.execute(
            "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 2000000) "
            "SELECT count(*) FROM r"
        ).fetchone()[0]

t = threading.Thread(target=read)
t.start()
started.wait()
time.sleep(0.05)
store.close()  # the caller closes the memory meanwhile
t.join()
print(out["n"])
"""


def test_close_waits_for_a_read_under_way_on_another_thread(tmp_path: Path) -> None:
    """Closing a connection a thread is reading from crashed the process (SIGSEGV, seen in
    CI when a search failed on its embedding while its lexical read still ran)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _READ_WHILE_CLOSING, str(tmp_path / "c.db")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.strip() == "2000000"
