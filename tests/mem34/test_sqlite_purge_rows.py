"""After a purge on SQLite, no row of any table names a purged record (mem34).

A record's archived versions make link rows in ``rr`` (``(tenant, "lnk:" + id, "src:" +
user, record id)``, store/sqlite/cites.py): every id a version named. A purge by ids
removed the rows of the purged record's current version only (``cites.drop``); the rows
its archived versions made stayed, naming the purged record's id, until the user was
purged. They now go in the purge's transaction (``cites.drop_past``, from the deltas
before the history is deleted).

Every table's every column is read: TEXT for the id, BLOB for its bytes, and each
``record_history`` delta inflated (what other records' versions say). A purge by ids keeps
its own audit event naming the ids (the log keeps what was purged, not what it said:
README, "Audit log, purge, access control"), so there ``audit_log`` is left out; a
whole-user purge redacts the user's events, and every table is read. Left out of a purge
by ids too: ``jobs`` (the user's pending ingest job lists the turns it will read; a run
skips a purged one; left as it is, reported to the lead), and the other records' rows
(``records``, ``record_history``): a link the purge rewrites says ``[purged]``
(tests/purge31b holds it to the scan it replaced), and a field of the user's own data (a
note's ``members``) is theirs to keep."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.purge31b.test_links_equal_scan import _build, stores

from memstrata import Memory
from memstrata.store.sqlite.history import delta_text


def _naming(path: Path, rid: str, *, skip: tuple[str, ...] = ()) -> list[tuple[str, str, Any]]:
    """The (table, column, row) of every row of the file naming ``rid``."""
    found = []
    with sqlite3.connect(path) as c:
        tables = [
            t
            for (t,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if t not in skip
        ]
        for t in tables:
            cols = [r[1] for r in c.execute(f"PRAGMA table_info('{t}')")]
            for row in c.execute(f"SELECT * FROM '{t}'"):
                for col, v in zip(cols, row, strict=True):
                    if isinstance(v, bytes):
                        text = delta_text(v) if (t, col) == ("record_history", "delta") else v
                        hit = rid.encode() in text
                    else:
                        hit = isinstance(v, str) and rid in v
                    if hit:
                        found.append((t, col, row))
    return found


def test_a_purged_records_archived_links_leave_rr() -> None:
    # A note whose first version named two records (a source, a replaced note, a related
    # one) and whose second names none: before, three ``lnk:`` rows of it stayed after
    # its purge (rr.i = its id).
    empty: dict[str, Any] = {
        "sources": [],
        "superseded_by": None,
        "links": {},
        "members": [],
        "cluster_id": None,
        "dropped": None,
        "related": [],
    }
    first = {**empty, "sources": [0, 4], "links": {"replaces": 4}, "related": [5]}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.db"
        mem = Memory(f"sqlite:///{path}")
        try:
            owner, ids = _build(
                mem,
                [
                    {"type": "note", "versions": [first, empty]},
                    {"type": "fact", "versions": []},
                    {"type": "note", "versions": []},
                ],
                "ann",
            )
            mem.purge(owner, [ids[3]])
            assert _naming(path, ids[3], skip=("audit_log",)) == []
        finally:
            mem.close()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(stores, st.sets(st.integers(0, 11), min_size=1, max_size=3), st.booleans())
def test_no_row_names_a_purged_record(specs: list[Any], picked: set[int], whole: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.db"
        mem = Memory(f"sqlite:///{path}")
        try:
            owner, ids = _build(mem, specs, "ann")
            other, _ = _build(mem, specs[:2], "bob")  # another user's rows stay theirs
            gone = sorted({ids[i % len(ids)] for i in picked})
            if whole:
                mem.purge(owner)
                gone = ids
            else:
                mem.purge(owner, gone)
            for rid in gone:
                if whole:
                    assert _naming(path, rid) == [], rid
                    continue
                found = _naming(path, rid, skip=("audit_log", "jobs"))
                # what other records still say of it (their own data), and their index rows
                # saying so: a row of ``rr`` naming the id is a record's that names it
                saying = {_owner(path, t, row) for t, _, row in found if t != "rr"}
                left = [x for x in found if x[0] == "rr" and x[2][3] not in saying]
                assert left == [], rid
            assert mem.store.count(other, _all()) > 0
        finally:
            mem.close()


def _owner(path: Path, table: str, row: Any) -> Any:
    """The record id of a row of ``records`` or ``record_history`` (by its ``seq``)."""
    if table == "records":
        return row[1]
    with sqlite3.connect(path) as c:
        found = c.execute("SELECT id FROM records WHERE seq = ?", (row[0],)).fetchone()
    return None if found is None else found[0]


def _all() -> Any:
    from memstrata.filters import Filters

    return Filters(include_deleted=True, include_superseded=True)
