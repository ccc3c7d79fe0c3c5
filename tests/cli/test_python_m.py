"""``python -m memstrata`` runs the CLI (for environments without the console script on PATH)."""

from __future__ import annotations

import subprocess
import sys


def test_python_m_memstrata_runs_the_cli() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "memstrata", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "Usage" in out.stdout and "search" in out.stdout
