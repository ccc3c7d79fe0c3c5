"""``memstrata migrate`` killed (SIGKILL, a real child process) in the middle of a long
history's load: its parts are written in their batch's one transaction, so the target
holds none of that record (no row, no version) and the batches before it whole; run again
with ``--resume``, the copy completes and verifies equal to the source.

The gate is the fifth call of ``sqlite.history.past_deltas`` (both SQL stores' loads make
a part's deltas with it): four parts of the first long record (of seventeen) have been
written in the open transaction. ``HISTORY_PAGE`` is 50 in the child (exphist28's).
Before mig29 the load wrote a record's whole history in its batch's transaction too (and
made no part's deltas: this gate was never reached); this guards the parts' path.
"""

from __future__ import annotations

import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from crash23.kill import run
from memstrata.records import MemoryRecord
from memstrata.store.base import StoreCopy
from memstrata.store.migrate import verify_stores

from .conftest import LONG, USER, Side, fill

CHILD = Path(__file__).parents[1] / "exphist28" / "child.py"
GATE = "call:memstrata.store.sqlite.history.past_deltas@5"
Sides = Callable[[str], Side]


def _history_rows(side: Side) -> int:
    """The rows of ``record_history``, as the file or schema holds them."""
    if side.kind == "sqlite":
        with sqlite3.connect(side.url.removeprefix("sqlite:///")) as conn:
            return int(conn.execute("SELECT count(*) FROM record_history").fetchone()[0])
    base, schema = side.url.rsplit("schema=", 1)
    with psycopg.connect(base.rstrip("?&"), autocommit=True) as conn:
        row = conn.execute(f'SELECT count(*) FROM "{schema}".record_history').fetchone()
    return int(row[0]) if row else 0


def _migrate(source: Side, target: Side, gate: str, tmp: Path, *extra: str) -> int:
    args = ("migrate", "--to", target.url, "--batch-size", "5", *extra)
    return run(source.url, gate, "cli", *args, tmp=tmp, script=CHILD)


@pytest.mark.parametrize(
    ("src", "dst"), [("sqlite", "sqlite"), ("sqlite", "postgresql"), ("postgresql", "sqlite")]
)
def test_a_migration_killed_in_a_long_history_leaves_none_of_it_and_resumes(
    src: str, dst: str, sides: Sides, base: MemoryRecord, tmp_path: Path, part: int
) -> None:
    source, target = sides(src), sides(dst)
    want = fill(source, base, tmp_path)
    spool = tmp_path / "spool"
    spool.mkdir()
    assert _migrate(source, target, GATE, spool) == -signal.SIGKILL
    assert list(spool.iterdir()) == []  # the parts' spools had no name
    store = target.store
    assert isinstance(store, StoreCopy)
    dumps = [d for batch in store.dump_records() for d in batch]
    # two batches of five short records, whole (three of them updated twice); the third
    # batch, with the long record being written, not at all
    assert len(dumps) == 10 and "long0001" not in {d.record.id for d in dumps}
    assert sum(d.past_count for d in dumps) == _history_rows(target) == 6
    assert _migrate(source, target, "-", spool, "--resume") == 0
    report = verify_stores(source.url, target.url)
    assert report.ok, report.mismatches
    assert report.counts["records"].target == want["records"]
    assert report.counts["versions"].target == want["versions"] == _history_rows(target)
    got = target.store.history(USER, "long0001")
    assert [v.version for v in got] == list(range(1, LONG + 2))
    assert got == source.store.history(USER, "long0001")
