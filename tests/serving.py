"""``memstrata serve`` and ``memstrata mcp --transport http`` as real processes, for the tests:
one launcher (a free port, a log file, ready when the server answers, stopped with its whole
process group afterwards) instead of one per test directory."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import pytest

__all__ = ["CLI", "Running", "free_port", "launch", "mcp_http", "refused", "serve"]

CLI = [sys.executable, "-c", "from memstrata.cli.app import main; main()"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Running:
    """A server process: its base URL, the process (leader of its own process group) and
    its log (stdout and stderr)."""

    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def address(self) -> tuple[str, int]:
        parts = urlsplit(self.url)
        return str(parts.hostname), int(parts.port or 80)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        """Send ``sig`` to the process group, wait for the exit and return its status
        (SIGKILL after ``timeout`` s; then the status is the kill's)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        return self.proc.returncode


@contextmanager
def launch(
    args: list[str],
    tmp_path: Path,
    ready: Callable[[str], bool],
    url: str,
    wait: float = 120,
) -> Iterator[Running]:
    """``memstrata ARGS`` in a process group of its own; yields once ``ready(url)`` holds
    (each HTTP error is a not yet), and stops the group afterwards if the test did not."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    log_path = tmp_path / f"memstrata-{urlsplit(url).port}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [*CLI, *args], stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    running = Running(url, proc, log_path)
    try:
        deadline = time.monotonic() + wait
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"memstrata {' '.join(args)} exited with {proc.returncode}: "
                    + running.log_text()[-3000:]
                )
            try:
                if ready(url):
                    break
            except httpx2.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"memstrata {' '.join(args)} was not ready in {wait:g} s")
            time.sleep(0.2)
        yield running
    finally:
        running.stop()


def _readyz(url: str) -> bool:
    return httpx2.get(f"{url}/readyz", timeout=5).status_code == 200


@contextmanager
def serve(db: str, tmp_path: Path, *extra: str, workers: int = 1) -> Iterator[Running]:
    """``memstrata serve`` on ``db`` (hashing embedder, log level warning, ``extra``
    options); yields once /readyz answers 200."""
    port = free_port()
    args = ["--db", db, "--embedder", "hashing", "serve", "--port", str(port),
            "--log-level", "warning"]  # fmt: skip
    if workers > 1:
        args += ["--workers", str(workers)]
    # N processes importing on a loaded machine take longer
    with launch([*args, *extra], tmp_path, _readyz, f"http://127.0.0.1:{port}",
                wait=120 if workers == 1 else 180) as running:  # fmt: skip
        yield running


def _mcp_answers(url: str) -> bool:
    with httpx2.Client() as plain:  # unauthenticated: 401, takes no token
        return plain.post(url, json={}).status_code == 401


@contextmanager
def mcp_http(db: str, tmp_path: Path, *extra: str) -> Iterator[Running]:
    """``memstrata mcp --transport http`` on ``db`` with ``extra`` options; ``url`` is the
    endpoint (``/mcp``), yielded once it answers (401 without a key)."""
    port = free_port()
    args = ["--db", db, "--embedder", "hashing", "mcp", "--transport", "http",
            "--port", str(port), *extra]  # fmt: skip
    with launch(args, tmp_path, _mcp_answers, f"http://127.0.0.1:{port}/mcp") as running:
        yield running


SRC = str(Path(__file__).resolve().parents[1] / "src")


def refused(tmp_path: Path, args: list[str], *, timeout: float) -> subprocess.CompletedProcess[str]:
    """``python -m memstrata --db <a SQLite file holding one note> --embedder hashing ARGS``
    run to its end, for an option that must stop the command before it serves: the test
    fails if the command still runs after ``timeout`` s (it served)."""
    db = tmp_path / "s.db"
    from memstrata import Memory, Scope

    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        mem.add(Scope("t", "u"), "I keep bees")
    cmd = [sys.executable, "-m", "memstrata", "--db", f"sqlite:///{db}", "--embedder", "hashing"]
    env = {**os.environ, "PYTHONPATH": SRC}
    try:
        return subprocess.run(
            [*cmd, *args], capture_output=True, text=True, timeout=timeout, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"memstrata {' '.join(args)} served")
