"""``memstrata`` long-running commands as real processes for ops33's tests: run one until a
text is in its stderr, then stop it; the JSON start lines of its stderr."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from serving import SRC

__all__ = ["run_until_started", "start_lines"]


def run_until_started(
    args: list[str],
    tmp_path: Path,
    started: str,
    *,
    times: int = 1,
    env: dict[str, str] | None = None,
) -> tuple[str, str]:
    """``python -m memstrata ARGS`` until ``started`` is ``times`` in its stderr (or 120 s),
    then SIGTERM to its process group; its stdout and stderr."""
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    full_env = {**os.environ, "PYTHONPATH": SRC, "COLUMNS": "80"}
    full_env.pop("MEMSTRATA_DONE_JOBS_DAYS", None)
    full_env.update(env or {})
    with open(out, "wb") as o, open(err, "wb") as e:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memstrata", *args], stdout=o, stderr=e, env=full_env,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while err.read_text(errors="replace").count(started) < times:
            assert proc.poll() is None, err.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, err.read_text(errors="replace")[-3000:]
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return out.read_text(errors="replace"), err.read_text(errors="replace")


def start_lines(err: str) -> list[dict[str, Any]]:
    """The JSON start lines of a server's stderr (every line of which is JSON)."""
    lines = [json.loads(x) for x in err.splitlines() if x.strip()]
    return [x for x in lines if x.get("logger") == "memstrata.start"]
