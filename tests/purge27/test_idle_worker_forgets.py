"""An idle ``memstrata worker`` forgets a purged user's words at its next poll.

A worker process keeps users' words between calls (memstrata.traces) and used to empty
them only at its next search, which an idle worker never makes. The count of purges it
reads at each search is now also read by each poll's claim of jobs, in the statement that
already looks for a due job (no statement more per poll)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata import Scope
from privacy.test_purge_other_process import SECRET, _seed, _wait

SCRIPT = Path(__file__).with_name("worker_process.py")


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("which", ["user", "records"])
def test_an_idle_worker_forgets_the_purged_words(
    url: str, tmp_path: Path, mode: str, which: str
) -> None:
    mem = _seed(url)
    gate, log = tmp_path / "gate", tmp_path / "worker.log"
    gate.mkdir()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, str(SCRIPT), url, str(gate), SECRET[::-1], mode],
            env=dict(os.environ),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait(gate / "ready", proc, log)
        zoe = Scope("acme", "zoe")
        if which == "user":
            mem.purge(zoe)
        else:
            mem.purge(zoe, [r.id for r in mem.list(zoe) if SECRET in str(r.content.text)])
        (gate / "go").write_text("go")
        _wait(gate / "report.json", proc, log)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
        mem.close()
    report = json.loads((gate / "report.json").read_text())
    assert report["before"], "the worker kept none of the sentences: the test shows nothing"
    assert report["after"] == [], report
