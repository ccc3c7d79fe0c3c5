"""A purge reaches what *another* process keeps of the user's words between calls.

A server or worker process that built a context for a user keeps some of their sentences
(``build_context``'s trimmed replies), terms, names and texts' vectors in bounded caches
(memstrata.traces). Before, only the purging process emptied its own: another process
kept the purged sentences until they aged out. Now every process empties them at its next
search of any user it holds, which reads the purge from the store (the user's removal
generation and the purge epoch, vectors.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memstrata import Memory, Scope

SCRIPT = Path(__file__).with_name("reader_process.py")
SECRET = "Halvorsenkeyholder"
REPLY = " ".join(
    [f"Your neighbour Ingrid {SECRET} keeps the spare key under the blue flowerpot."]
    + [f"General advice sentence number {i} about gardens and the weather." for i in range(30)]
)


def _seed(url: str) -> Memory:
    mem = Memory(url, embedder="hashing", background=False)
    mem.add_messages(
        Scope("acme", "zoe", session="s1"),
        [
            {"role": "user", "content": "Where do I keep my spare key?"},
            {"role": "assistant", "content": REPLY},
        ],
    )
    mem.add(Scope("acme", "amy"), "I keep my garden tools in the shed.")
    return mem


def _wait(path: Path, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the reader process stopped:\n{log.read_text()}")
        time.sleep(0.02)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("which", ["user", "records"])
def test_another_process_forgets_the_purged_words(
    url: str, tmp_path: Path, mode: str, which: str
) -> None:
    mem = _seed(url)
    gate, log = tmp_path / "gate", tmp_path / "reader.log"
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
            ids = [r.id for r in mem.list(zoe) if SECRET in str(r.content.text)]
            assert ids
            mem.purge(zoe, ids)
        (gate / "go").write_text("go")
        _wait(gate / "report.json", proc, log)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
        mem.close()
    report = json.loads((gate / "report.json").read_text())
    assert report["before"], "the reader kept none of the sentences: the test shows nothing"
    assert report["after"] == [], report
