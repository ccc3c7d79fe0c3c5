"""Run :mod:`child` (a real process) to its gate, and look at what it left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).with_name("child.py")


def run(
    url: str, gate: str, op: str, *args: str, tmp: Path | None = None, script: Path = SCRIPT
) -> int:
    """Run ``op`` in a child (``script``, :mod:`child` unless given) killed at ``gate``; its
    return code (``-SIGKILL`` when the gate was reached, 0 when the operation finished
    first). ``tmp``: the child's ``TMPDIR``."""
    env = dict(os.environ)
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    proc = subprocess.run(
        [sys.executable, str(script), url, gate, op, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(f"the child failed ({proc.returncode}):\n{proc.stderr}")
    return proc.returncode


def file_bytes(path: Path) -> bytes:
    """The database file, its WAL and shared memory, as a byte scan reads them."""
    out = b""
    for suffix in ("", "-wal", "-shm", "-journal"):
        p = Path(str(path) + suffix)
        if p.exists():
            out += p.read_bytes()
    return out
