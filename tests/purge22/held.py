"""Start :mod:`job_process` (a real second process running the user's jobs) and hold it
inside a job while the test purges."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).with_name("job_process.py")


class HeldJob:
    """The other process, held at its job's first embedding once :meth:`wait_held` returns."""

    def __init__(
        self,
        url: str,
        gate: Path,
        buffer: str | None = None,
        *,
        use_async: bool = False,
        lease_seconds: float | None = None,
    ) -> None:
        gate.mkdir(parents=True, exist_ok=True)
        self.gate = gate
        self._log = gate / "output.txt"
        with self._log.open("w") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    str(SCRIPT),
                    url,
                    str(gate),
                    buffer or "-",
                    "async" if use_async else "sync",
                    "" if lease_seconds is None else str(lease_seconds),
                ],
                env=dict(os.environ),
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def wait_held(self, timeout: float = 60.0) -> str:
        """What the held job was embedding (texts it derived from the turns it read)."""
        deadline = time.monotonic() + timeout
        while not (self.gate / "held").exists():
            if self.proc.poll() is not None:
                raise AssertionError(f"the job process ended first:\n{self.output()}")
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError("the job process never reached its job's embedding")
            time.sleep(0.02)
        return (self.gate / "held").read_text()

    def release(self, timeout: float = 120.0) -> dict[str, Any]:
        """Let the job go on; its process's report once it ended."""
        (self.gate / "go").write_text("go")
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"the job process did not end:\n{self.output()}") from None
        assert self.proc.returncode == 0, self.output()
        report: dict[str, Any] = json.loads((self.gate / "report.json").read_text())
        return report

    def output(self) -> str:
        return self._log.read_text()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
