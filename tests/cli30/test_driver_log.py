"""The PostgreSQL driver's log in the CLI: not bare lines repeating the CLI's own words.

psycopg and psycopg_pool log through the ``psycopg`` logger; the CLI gave it no handler, so
Python's "last resort" printed every record as a bare line on stderr. A ``memstrata worker``
whose PostgreSQL restarted printed "discarding closed connection: <psycopg.Connection
[BAD] at 0x...>" and one "error connecting in 'memstrata-...': connection is bad: ..." per
reconnection attempt of its pool (audit30: one "error ignored terminating
<psycopg.Pipeline [INERROR]>" per refused write on a full disk), each beside the worker's
own warning, which already carries the driver's message and says what to do. Now it is
hidden by default, shown once per kind with ``-v`` (prefixed with its logger), every one
with ``-vv``."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest

from memstrata import Memory, Scope
from ops21.conftest import OwnPostgres

ME = Scope("t", "u", session="s1")


def _lines(stream: object, into: list[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        into.append(line.rstrip("\n"))


def _wait(check: Callable[[], bool], seconds: float, what: str, err: list[str]) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"no {what} in {seconds} s: {err[-5:]}"
        time.sleep(0.1)


def _worker_through_a_restart(own_pg: OwnPostgres, *flags: str) -> list[str]:
    """The stderr of ``memstrata [flags] worker`` while its PostgreSQL stops for a few
    reconnection attempts and starts again."""
    url = own_pg.url()
    with Memory(url, embedder="hashing", background=False) as mem:
        mem.add_message(ME, "user", "I moved to Lisbon in May")
    args = ["--db", url, "--tenant", "t", "--user", "u", "--embedder", "hashing", *flags]
    proc = subprocess.Popen(
        [sys.executable, "-m", "memstrata", *args, "worker", "--poll", "0.2", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    err: list[str] = []
    reader = threading.Thread(target=_lines, args=(proc.stderr, err), daemon=True)
    reader.start()
    try:
        # its store open (the start line follows it), not a guess: on a loaded machine (the
        # suite on 4 xdist workers beside other jobs) 2 s were not enough to start, and a
        # worker whose store never answered exits instead of waiting for it (session 34)
        _wait(lambda: any("memstrata worker starting" in x for x in err), 120, "start", err)
        time.sleep(2)  # the first run's jobs
        own_pg.stop("fast")
        try:

            def failed() -> int:
                return sum("the store did not answer" in x for x in err)

            _wait(lambda: failed() >= 3 or proc.poll() is not None, 60, "3 warnings", err)
            assert proc.poll() is None, f"the worker exited ({proc.returncode}): {err[-20:]}"
        finally:
            own_pg.start()
        _wait(lambda: any("the store answers again" in x for x in err), 60, "recovery", err)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        reader.join(10)
        if proc.stderr is not None:
            proc.stderr.close()
    assert proc.returncode == 0, err[-20:]
    return err


def _driver_lines(err: list[str]) -> list[str]:
    return [x for x in err if "error connecting in" in x or "discarding closed" in x]


def test_hidden_by_default(own_pg: OwnPostgres) -> None:
    err = _worker_through_a_restart(own_pg)
    assert _driver_lines(err) == [], "\n".join(err)
    # the worker's own warning still says what happened, with the driver's words in it
    assert any(
        x.startswith(
            "WARNING memstrata.worker: the store did not answer while claiming jobs (cannot "
            "reach PostgreSQL"
        )
        for x in err
    ), err
    # every line is the worker's (or a continuation of one of its multi-line messages), its
    # start line first (on stderr since session 33)
    assert err[0].startswith("memstrata worker starting: store postgresql://"), err[0]
    for record in _records(err[1:]):
        assert record[0].startswith("WARNING memstrata."), "\n".join(err)
        if len(record) > 1:  # the driver's words inside the worker's, which end the record
            assert re.search(r"trying again in [\d.]+ s$", record[-1]), "\n".join(err)


def _records(lines: list[str]) -> list[list[str]]:
    """``lines`` as log records: one starts with a level and a logger ("WARNING
    memstrata.worker: ..."); a line that does not continues the record before it. The
    driver's message inside a worker's warning may span lines, and not only with a tab:
    "flush request failed: server closed the connection unexpectedly" / "<tab>This
    probably means ..." / "no connection to the server); ... trying again in 0.4 s"
    (a fresh-clone CI run, session 34)."""
    records: list[list[str]] = []
    for line in lines:
        if re.match(r"[A-Z]+ [\w.]+: ", line) or not records:
            records.append([line])
        else:
            records[-1].append(line)
    return records


@pytest.mark.parametrize("flag", ["-v"])
def test_once_per_kind_with_v(own_pg: OwnPostgres, flag: str) -> None:
    err = _worker_through_a_restart(own_pg, flag)
    connecting = [x for x in err if "error connecting in" in x]
    assert len(connecting) == 1, "\n".join(err)
    assert connecting[0].startswith("WARNING psycopg.pool: error connecting in 'memstrata-")
    assert all(x.startswith("WARNING psycopg") for x in _driver_lines(err)), err
