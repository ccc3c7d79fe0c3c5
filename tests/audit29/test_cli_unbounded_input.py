"""Input the CLI read without bound, or read as another thing (session 29's audit):

- ``memstrata add - < /dev/zero`` (or ``--file /dev/zero``) read until memory ran out
  before the 100,000-character limit was checked; now it reads one character past the
  limit and refuses ("more than 100,000 characters"), nothing written.
- ``memstrata search q --filters '{"tags": ["a"], "tags": ["b"]}'`` searched tag b only,
  dropping a without a word (the HTTP API refuses a body naming a key twice); and
  ``--filters`` nested 100,000 deep was a ``RecursionError`` traceback."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata import Memory, Scope
from memstrata.cli.app import app

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _two_gigabytes() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def _base(tmp_path: Path) -> list[str]:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with Memory(db, embedder="hashing", background=False) as mem:
        mem.add(Scope("t", "u"), "I keep bees", tags=["a"])
    return ["--db", db, "--tenant", "t", "--user", "u", "--embedder", "hashing"]


@pytest.mark.parametrize("how", [["add", "-"], ["add", "--file", "/dev/zero"]])
def test_add_from_an_endless_source_stops_at_the_limit(tmp_path: Path, how: list[str]) -> None:
    cmd = [sys.executable, "-m", "memstrata", *_base(tmp_path), "--max-chars", "1000", *how]
    env = {**os.environ, "PYTHONPATH": SRC}
    with open("/dev/zero", "rb") as zero:
        try:  # before: read /dev/zero until killed (here: the timeout)
            done = subprocess.run(
                cmd,
                stdin=zero,
                capture_output=True,
                text=True,
                timeout=60,
                env=env,
                check=False,
                preexec_fn=_two_gigabytes,  # before: a MemoryError, not the machine's memory
            )
        except subprocess.TimeoutExpired:
            pytest.fail("add read its endless input")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "more than 1,000 characters, over the limit of 1,000" in done.stderr, done.stderr
    with Memory(f"sqlite:///{tmp_path / 'c.db'}", embedder="hashing") as mem:
        assert [r.text for r in mem.list(Scope("t", "u"))] == ["I keep bees"]


def test_add_under_the_limit_reads_it_all(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        app, [*_base(tmp_path), "--max-chars", "1000", "add", "-"], input="x" * 1000
    )
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(
        app, [*_base(tmp_path), "--max-chars", "1000", "add", "-"], input="y" * 1001
    )
    assert res.exit_code == 2 and "more than 1,000 characters" in res.stderr, res.stderr


@pytest.mark.parametrize(
    ("filters", "says"),
    [
        ('{"tags": ["a"], "tags": ["b"]}', "the key 'tags' twice"),
        ('{"metadata": {"k": 1, "k": 2}}', "the key 'k' twice"),
        ("[" * 100_000 + "]" * 100_000, "not valid JSON"),
    ],
)
def test_filters_are_read_as_the_http_api_reads_a_body(
    tmp_path: Path, filters: str, says: str
) -> None:
    res = CliRunner().invoke(app, [*_base(tmp_path), "search", "bees", "--filters", filters])
    assert res.exit_code == 2, (res.output, res.exception)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert says in res.stderr, res.stderr[:500]


@pytest.mark.parametrize("source", ["-", "/dev/stdin"])
def test_ingest_from_an_endless_source_stops_past_the_documents_limit(
    tmp_path: Path, source: str
) -> None:
    cmd = [sys.executable, "-m", "memstrata", *_base(tmp_path), "ingest", source]
    env = {**os.environ, "PYTHONPATH": SRC}
    with subprocess.Popen(["yes", "bees"], stdout=subprocess.PIPE) as endless:
        try:
            done = subprocess.run(
                cmd,
                stdin=endless.stdout,
                capture_output=True,
                text=True,
                timeout=120,
                env=env,
                check=False,
                preexec_fn=_two_gigabytes,
            )
        finally:
            endless.kill()
    assert done.returncode == 2, done.stderr[-2000:]
    assert "10,000,000" in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
