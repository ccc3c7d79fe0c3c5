"""kill -9 of a running ``memstrata migrate``: running it again completes the copy, with
nothing duplicated, and the target verifies equal to the source."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg

from memstrata.store.migrate import verify_stores
from servers import PgServer

from .conftest import bulk

RECORDS = 3000
_CLI = "import sys; from memstrata.cli.app import main; sys.argv[0] = 'memstrata'; main()"


def _migrate(src: str, dst: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            _CLI,
            "--db",
            src,
            "migrate",
            "--to",
            dst,
            "--batch-size",
            "50",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )


def _records(admin_url: str, schema: str) -> int:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass(%s)", (f'"{schema}".records',)).fetchone() == (None,):
            return 0
        row = conn.execute(f'SELECT count(*) FROM "{schema}".records').fetchone()
    return int(row[0]) if row else 0


def test_a_migration_killed_mid_copy_completes_when_resumed(
    tmp_path: Path, pg_url: str, pg_server: PgServer
) -> None:
    src = f"sqlite:///{tmp_path / 'src.db'}"
    bulk(src, RECORDS)
    schema = pg_url.rsplit("schema=", 1)[1]
    proc = _migrate(src, pg_url)
    deadline = time.monotonic() + 120
    copied = 0
    while time.monotonic() < deadline and proc.poll() is None:
        copied = _records(pg_server.admin_url, schema)
        if copied >= 300:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    killed_at = _records(pg_server.admin_url, schema)
    assert 0 < killed_at < RECORDS, "the kill did not land mid-copy"
    assert killed_at % 50 == 0  # whole batches only: each is one transaction

    again = _migrate(src, pg_url)  # an occupied target needs --resume
    _, err = again.communicate(timeout=300)
    assert again.returncode == 2 and "--resume" in err
    assert _records(pg_server.admin_url, schema) == killed_at

    resumed = _migrate(src, pg_url, "--resume", "--json")
    out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err
    assert '"ok": true' in out
    assert _records(pg_server.admin_url, schema) == RECORDS
    report = verify_stores(src, pg_url)
    assert report.ok, report.mismatches
    assert report.counts["records"].target == RECORDS
    assert report.counts["versions"].target == report.counts["versions"].source > 0
