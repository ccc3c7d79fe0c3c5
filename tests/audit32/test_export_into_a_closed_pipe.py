"""``memstrata export - | head -c 100``: the reader stops early, and the error says so.

Before: "... (Broken pipe): the file holds those and no end line ...; free disk space on
the file's disk (or fix what the reason names) and export again" — no file, no disk."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_a_reader_that_stops_is_named(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    env = {**os.environ, "PYTHONPATH": SRC}
    cli = [sys.executable, "-m", "memstrata", "--db", f"sqlite:///{db}", "--embedder",
           "hashing", "--tenant", "acme", "--user", "alice"]  # fmt: skip
    notes = tmp_path / "notes.txt"
    notes.write_text("".join(f"note {i} {'x' * 3000}\n" for i in range(40)))
    subprocess.run([*cli, "ingest", str(notes)], env=env, check=True, capture_output=True)
    with subprocess.Popen(
        [*cli, "export", "-", "--embeddings"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    ) as export:  # fmt: skip
        assert export.stdout is not None and export.stderr is not None
        export.stdout.read(100)
        export.stdout.close()  # the reader stops, as `| head -c 100` does
        err = export.stderr.read().decode()
        assert export.wait(timeout=120) != 0
    assert "stopped before its end" in err and "disk" not in err, err
    assert "Traceback" not in err, err
