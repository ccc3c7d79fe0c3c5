"""A back-fill killed, then the store written by an older memstrata, then upgraded: the
upgrade leaves ``record_past_links`` exactly what a back-fill of every history makes (pg34).

backfill.py says a migration killed in the pre-fill leaves rows "nothing reads" and that
"the next upgrade empties it first". Checked here as session 33 left it: kill -9 after two
parts of the pre-fill (tests/pg33's child), then writes as a memstrata of schema 29 makes
them (no trigger: the table is there, nothing writes it) — versions archived that the
partial table lacks, and a row an older purge leaves stale (its record's versions no
longer name the id) — then an open of this memstrata. The claim holds: the pre-fill
truncates the table first (passes before and after; without that `TRUNCATE` the stale row
stays and the test fails)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from memstrata.store import open_store
from memstrata.store.postgres.schema import SCHEMA_VERSION
from pg33.test_upgrade_online import (
    KILLED,
    SRC,
    _as_29,
    _cite,
    _links,
    _refilled,
    _store,
    _valid,
)
from store.reterm_files import _pg, pg_version


def _kill_in_the_back_fill(url: str, tmp_path: Path) -> None:
    marker = tmp_path / "in-the-back-fill"
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED.format(src=SRC, marker=str(marker), url=url)],
        env={**os.environ, "PYTHONPATH": SRC},
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert child.poll() is None, "the upgrading process ended on its own"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()


def test_old_writes_after_a_killed_back_fill_are_cleared_by_the_upgrade(
    pg_url: str, tmp_path: Path
) -> None:
    mem, owner, ids = _store(pg_url, summaries=8)
    turns, summaries = ids[:30], ids[30:]
    try:
        _as_29(pg_url)
        _kill_in_the_back_fill(pg_url, tmp_path)
        assert pg_version(pg_url) == 29
        partial = _links(pg_url)
        assert 0 < len(partial) < len(_refilled(pg_url))
        # As a memstrata of schema 29 writes (this process opened the store before; it
        # writes on while the schema is older than its own): versions archived with no
        # trigger, into a table that process does not know.
        for rid in (summaries[0], summaries[-1]):
            _cite(mem, owner, rid, [turns[29]])
            _cite(mem, owner, rid, [turns[27]])  # the version citing turn 29 archived
        with _pg(pg_url) as conn:
            row = conn.execute("SELECT seq FROM records WHERE id = %s", (summaries[1],))
            (seq,) = row.fetchone() or (None,)
            # an older purge of turn 26 rewrote the versions naming it; a row kept naming it
            conn.execute(
                "INSERT INTO record_past_links (id, seq) VALUES (%s, %s)", (turns[26], seq)
            )
    finally:
        mem.close()
    stale = _links(pg_url)
    truth = _refilled(pg_url)
    assert (turns[26], seq) in stale - truth  # stale
    assert truth - stale  # and missing
    open_store(pg_url).close()
    assert pg_version(pg_url) == SCHEMA_VERSION
    assert _valid(pg_url) == [True]
    assert _links(pg_url) == _refilled(pg_url)
