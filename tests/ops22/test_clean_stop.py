"""The exit status of ``memstrata serve`` and ``memstrata mcp --transport http`` (see
server/run.py): 0 after a stop on SIGTERM or SIGINT — also when ``--shutdown-timeout``
cancelled a request — and 3 when the server could not start.

Before session 22 uvicorn raised the stopping signal again once it had stopped: a process
stopped as asked exited "killed by SIGTERM" (-15; 143 in a shell), like a crash.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from memstrata.server.keys import SQLiteKeyStore
from serving import CLI, free_port, mcp_http, serve


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_exits_0_after_a_stop(tmp_path: Path, sig: int) -> None:
    with serve(f"sqlite:///{tmp_path / 's.db'}", tmp_path, "--no-mcp") as s:
        assert s.stop(sig) == 0, s.log_text()[-2000:]


def test_serve_exits_0_when_the_shutdown_timeout_cancels_a_request(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme").secret
    keys.close()
    with serve(f"sqlite:///{db}", tmp_path, "--no-mcp", "--shutdown-timeout", "1",
               "--body-timeout", "30") as s:  # fmt: skip
        with socket.create_connection(s.address, timeout=10) as stalled:
            stalled.sendall(
                b"POST /v1/users/alice/memories HTTP/1.1\r\nHost: x\r\n"
                + f"Authorization: Bearer {key}\r\n".encode()
                + b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"content"'
            )
            time.sleep(0.3)
            t0 = time.monotonic()
            assert s.stop(timeout=15) == 0, s.log_text()[-2000:]
            assert time.monotonic() - t0 < 8
        log = s.log_text()
        assert "Cancel 1 running task(s), timeout graceful shutdown exceeded" in log
        # that line says it; uvicorn's traceback of each cancelled request said nothing more
        assert "Traceback" not in log, log[-3000:]


def test_serve_with_two_processes_exits_0_after_a_stop(tmp_path: Path) -> None:
    with serve(f"sqlite:///{tmp_path / 'w.db'}", tmp_path, "--no-mcp", "--no-background",
               workers=2) as s:  # fmt: skip
        assert s.stop() == 0, s.log_text()[-2000:]


def test_mcp_over_http_exits_0_after_a_stop(tmp_path: Path) -> None:
    with mcp_http(f"sqlite:///{tmp_path / 'm.db'}", tmp_path) as m:
        assert m.stop() == 0, m.log_text()[-2000:]


def test_a_server_that_cannot_start_exits_3(tmp_path: Path) -> None:
    with socket.socket() as taken:
        port = free_port()
        taken.bind(("127.0.0.1", port))
        taken.listen()
        done = subprocess.run(
            [*CLI, "--db", f"sqlite:///{tmp_path / 'p.db'}", "--embedder", "hashing", "serve",
             "--port", str(port), "--no-mcp", "--log-level", "warning"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
