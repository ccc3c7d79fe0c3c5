"""The same hostile inputs through the CLI (a real ``python -m memstrata`` process) as
through the library: what the library refuses, the CLI refuses with exit 2 and one line on
stderr (``error: ...``: the library's message, or the CLI's own naming its option), no
traceback, the store unchanged; what it accepts, the CLI stores alike (session 34's
audit)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memstrata import Filters, Memory, Scope
from memstrata.errors import MemstrataError

SRC = str(Path(__file__).resolve().parents[2] / "src")

# (CLI arguments after the global options, stdin bytes, the library call it stands for)
CASES = [
    (["add", ""], None, lambda m, s: m.add(s, "")),
    (["add", " \t "], None, lambda m, s: m.add(s, " \t ")),
    (["add", "x" * 100_001], None, lambda m, s: m.add(s, "x" * 100_001)),
    (["add", "-"], b"a\x00b", lambda m, s: m.add(s, "a\x00b")),
    (["add", "-"], b"caf\xe9", lambda m, s: m.add(s, "caf\udce9")),
    (["add", "a note", "--importance", "nan"], None,
     lambda m, s: m.add(s, "a note", importance=float("nan"))),
    (["add", "a note", "--importance", "1.5"], None,
     lambda m, s: m.add(s, "a note", importance=1.5)),
    (["add", "a note", "--tag", ""], None, lambda m, s: m.add(s, "a note", tags=[""])),
    (["add", "a note", "--role", "admin"], None, lambda m, s: m.add_message(s, "admin", "a note")),
    (["search", "note", "--top-k", "0"], None, lambda m, s: m.search(s, "note", top_k=0)),
    (["search", "note", "--top-k", "1001"], None, lambda m, s: m.search(s, "note", top_k=1001)),
    (["context", "note", "--budget", "0"], None, lambda m, s: m.build_context(s, "note", 0)),
    (["add", "\u202eevil\u202c \u200b"], None, lambda m, s: m.add(s, "\u202eevil\u202c \u200b")),
]  # fmt: skip


def _cli(db: Path, args: list[str], stdin: bytes | None) -> subprocess.CompletedProcess[bytes]:
    cmd = [sys.executable, "-m", "memstrata", "--db", f"sqlite:///{db}", "--embedder", "hashing"]
    cmd += ["--tenant", "acme", "--user", "alice", *args]
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(cmd, input=stdin or b"", capture_output=True, env=env, timeout=120)


@pytest.mark.parametrize(("args", "stdin", "call"), CASES, ids=[str(i) for i in range(len(CASES))])
def test_the_cli_answers_as_the_library_does(
    tmp_path: Path, args: list[str], stdin: bytes | None, call: object
) -> None:
    scope = Scope("acme", "alice")
    lib_db, cli_db = tmp_path / "lib.db", tmp_path / "cli.db"
    with Memory(f"sqlite:///{lib_db}", embedder="hashing", background=False) as m:
        m.add(scope, "a first note")
        try:
            stored = call(m, scope)  # type: ignore[operator]
            refused = None
        except MemstrataError as exc:
            refused = str(exc)
    assert _cli(cli_db, ["add", "a first note"], None).returncode == 0
    done = _cli(cli_db, args, stdin)
    err = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    with Memory(f"sqlite:///{cli_db}", embedder="hashing", background=False) as m:
        count = m.store.count(scope, Filters(include_deleted=True))
        texts = sorted(r.text for r in m.list(scope, limit=10))
    if refused is not None:
        assert done.returncode == 2, (done.returncode, err)
        lines = [x for x in err.splitlines() if x.strip() and "created a new memstrata" not in x]
        # one line; in the CLI's own terms where it has them (--role, memstrata ingest)
        assert len(lines) == 1 and lines[0].startswith("error: "), (lines, refused)
        assert count == 1
        return
    assert done.returncode == 0, err
    if args[0] == "add":
        assert count == 2 and stored.text in texts
        shown = _cli(cli_db, ["search", stored.text, "--json"], None)
        assert shown.returncode == 0 and json.loads(shown.stdout)
