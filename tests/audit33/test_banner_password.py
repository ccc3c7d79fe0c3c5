"""``memstrata serve`` and ``memstrata worker`` on a PostgreSQL URL holding a password print
it in their first line ("memstrata serving postgresql://app:<password>@db/...", "worker
running on postgresql://app:<password>@..."), to a console or a log collector, before
session 33's start lines (cli/start_line.py, ops33) redacted it as every error message does
(store/url.redact_url). The suite's PostgreSQL trusts local sockets, so a
URL with any password connects (session 33's audit)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from serving import CLI, serve

PASSWORD = "s3cret-pw-a33"


def _with_password(pg_url: str) -> str:
    assert "postgres:@" in pg_url
    return pg_url.replace("postgres:@", f"postgres:{PASSWORD}@", 1)


def test_serve_banner_hides_the_password(pg_url: str, tmp_path: Path) -> None:
    with serve(_with_password(pg_url), tmp_path, "--no-background") as running:
        text = running.log_text()
        assert "memstrata serve starting" in text and "postgresql://" in text  # rich wraps it
    assert PASSWORD not in text


def test_worker_banner_hides_the_password(pg_url: str, tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    args = ["--db", _with_password(pg_url), "--embedder", "hashing", "worker", "--poll", "0.2"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [*CLI, *args], stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 90
        while "memstrata worker starting" not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
    text = log.read_text()
    assert "memstrata worker starting" in text and "postgresql://" in text
    assert PASSWORD not in text
