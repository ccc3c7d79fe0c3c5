"""``memstrata mcp`` over stdio as a real subprocess, for the tests: one set-up (a key in
the store, the command, the environment, the ``initialize`` handshake, a thread reading the
answers) instead of one per test directory (audit29, audit31, audit32, task29 each had
theirs until session 33).

- :func:`stdio_answers`: every message written at once, stdin closed, the process run to
  its end; the answers it wrote and its stderr.
- :class:`StdioServer`: a session to drive message by message (``send``, ``answer``), then
  ``close`` (stdin closed: the server stops) or ``stop`` (the same, asserting a clean exit).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

from memstrata.server.keys import SQLiteKeyStore

__all__ = ["INIT", "READY", "SRC", "StdioServer", "key_for", "stdio_answers", "stdio_command"]

SRC = str(Path(__file__).resolve().parents[1] / "src")
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
READY = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def key_for(db: Path, tenant: str = "acme") -> str:
    """A new API key of ``tenant`` in the SQLite store at ``db`` (made if missing)."""
    keys = SQLiteKeyStore(str(db))
    try:
        return keys.create(tenant).secret
    finally:
        keys.close()


def stdio_command(db: Path, *options: str) -> tuple[list[str], dict[str, str]]:
    """``python -m memstrata ... --user alice mcp OPTIONS`` on ``db`` (hashing embedder)
    with a new key of tenant ``acme`` in ``MEMSTRATA_API_KEY``: the command and its
    environment."""
    key = key_for(db)
    cmd = [sys.executable, "-m", "memstrata", "--db", f"sqlite:///{db}", "--embedder", "hashing"]
    cmd += ["--user", "alice", "mcp", *options]
    return cmd, {**os.environ, "PYTHONPATH": SRC, "MEMSTRATA_API_KEY": key}


def stdio_answers(
    db: Path, messages: list[Any], *, initialize: bool = True, timeout: float = 240
) -> tuple[list[dict[str, Any]], str]:
    """Each message a line on stdin (a str as it is), stdin then closed at once; the
    answers the process wrote before it exited, and its stderr."""
    cmd, env = stdio_command(db)
    lines = [json.dumps(INIT), json.dumps(READY)] if initialize else []
    lines += [m if isinstance(m, str) else json.dumps(m) for m in messages]
    done = subprocess.run(
        cmd, input=("\n".join(lines) + "\n").encode(), capture_output=True, env=env,
        timeout=timeout, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    answers = [json.loads(line) for line in done.stdout.decode().splitlines() if line.strip()]
    return answers, done.stderr.decode()


class StdioServer:
    """``memstrata mcp`` over stdio in a subprocess; its answers and its stderr read by
    threads (a full stderr pipe would stop it). With ``initialize`` (the default) the
    handshake is done: ``init_answer`` is the answer to ``initialize``."""

    def __init__(self, db: Path, *options: str, initialize: bool = True) -> None:
        cmd, env = stdio_command(db, *options)
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.stdin: IO[bytes] = self.proc.stdin
        self.answers: queue.Queue[bytes] = queue.Queue()
        self._err: list[bytes] = []
        out, err = self.proc.stdout, self.proc.stderr
        self._readers = [
            threading.Thread(target=lambda: [self.answers.put(x) for x in out], daemon=True),
            threading.Thread(target=lambda: [self._err.append(x) for x in err], daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        self.init_answer: dict[str, Any] | None = None
        if initialize:
            self.send(json.dumps(INIT).encode() + b"\n")
            self.init_answer = self.answer()
            assert self.init_answer["id"] == 0, self.init_answer
            self.send(json.dumps(READY).encode() + b"\n")

    def send(self, data: bytes) -> None:
        self.stdin.write(data)
        self.stdin.flush()

    def answer(self, timeout: float = 60) -> dict[str, Any]:
        """The next answer (``queue.Empty`` after ``timeout`` s)."""
        parsed: dict[str, Any] = json.loads(self.answers.get(timeout=timeout))
        return parsed

    def rss_kib(self) -> int:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(next(x for x in status.splitlines() if x.startswith("VmRSS:")).split()[1])

    def close(self, timeout: float = 60) -> tuple[int, str]:
        """Close stdin (the server stops), wait for the exit and for the readers to reach
        the end of their streams; the exit status and the stderr."""
        if not self.stdin.closed:
            self.stdin.close()
        try:
            rc = self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for reader in self._readers:
                reader.join(timeout=30)
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()
        return rc, b"".join(self._err).decode(errors="replace")

    def stop(self) -> str:
        """:meth:`close`, asserting exit 0 and no traceback; the stderr."""
        rc, err = self.close()
        assert rc == 0, err[-2000:]
        assert "Traceback" not in err, err[-2000:]
        return err
