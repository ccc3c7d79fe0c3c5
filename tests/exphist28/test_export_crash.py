"""An export of a long history killed (SIGKILL) or failing between its parts leaves what
``memstrata export FILE`` promises (crash23, durable24): nothing by the name asked for
until the export is whole, an earlier file there as it was, a ``FILE.partial`` without an
end line (which an import refuses) after a kill and none after a failure; no temporary
file of the parts is left behind (it has no name). Run again, the export is whole."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from crash23.child import VICTIM
from crash23.kill import run
from memstrata import Memory, Scope
from memstrata.cli.app import app
from memstrata.errors import MemstrataError, StoreError
from memstrata.records import MemoryRecord
from memstrata.store.postgres.store import PostgresStore
from memstrata.store.sqlite.store import SQLiteStore

from .conftest import PART, write_long_history

CHILD = Path(__file__).with_name("child.py")
N = 4 * PART + 3  # five parts: 3, then 50 at a time


def _fill(url: str, base: MemoryRecord, tmp_path: Path) -> None:
    path = write_long_history(tmp_path / "long.jsonl", base, N)
    with Memory(url, embedder="hashing", background=False) as mem, path.open() as fp:
        assert mem.import_records(fp, into=VICTIM.user_scope).versions == N


def _records(url: str) -> int:
    with Memory(url, embedder="hashing", background=False) as mem:
        return mem.store.stats(VICTIM.user_scope).records


@pytest.mark.parametrize("gate", ["call:past_lines@3", "after:past_lines@5"])
def test_a_long_history_export_killed_between_parts_leaves_nothing_that_looks_complete(
    url: str, base: MemoryRecord, tmp_path: Path, gate: str
) -> None:
    _fill(url, base, tmp_path)
    out = tmp_path / "backup.jsonl"
    out.write_text("an earlier export\n")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    assert run(url, gate, "cli", "export", str(out), tmp=tmp, script=CHILD) == -signal.SIGKILL
    assert out.read_text() == "an earlier export\n"  # untouched until the new one is whole
    partial = Path(str(out) + ".partial")
    assert all('"end"' not in line for line in partial.read_text().splitlines())
    assert list(tmp.iterdir()) == []  # the parts' spool had no name
    with Memory(url, embedder="hashing", background=False) as mem:
        with partial.open(encoding="utf-8") as fp, pytest.raises(MemstrataError):
            mem.import_records(fp, into=Scope("acme", "elsewhere"))
        assert mem.store.stats(Scope("acme", "elsewhere")).records == 0
    assert _records(url) == 1
    assert run(url, "-", "cli", "export", str(out), tmp=tmp, script=CHILD) == 0
    assert not partial.exists()
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert got[-1] == {"end": "complete", "count": 1, "past_versions": N}
    assert [g["past_version"]["version"] for g in got[2:-1]] == list(range(1, N + 1))


@pytest.fixture
def failing_parts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Each store's ``history_parts`` gives its first part, then fails as a store does
    (a dropped connection, a damaged file)."""
    given: list[int] = []
    for cls in (SQLiteStore, PostgresStore):
        plain = cls.history_parts

        def failing(self: Any, *args: Any, plain: Any = plain, **kw: Any) -> Iterator[Any]:
            for part in plain(self, *args, **kw):
                given.append(len(part))
                yield part
                raise StoreError("the store went away in the middle of a history")

        monkeypatch.setattr(cls, "history_parts", failing)
    yield given


def test_a_long_history_export_that_fails_between_parts_leaves_no_file(
    url: str,
    base: MemoryRecord,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    failing_parts: list[int],
) -> None:
    _fill(url, base, tmp_path)
    monkeypatch.setattr("memstrata.portability.HISTORY_PAGE", PART)
    out = tmp_path / "backup.jsonl"
    out.write_text("an earlier export\n")
    args = ["--db", url, "--tenant", VICTIM.tenant, "--user", VICTIM.user]
    res = CliRunner().invoke(app, [*args, "--embedder", "hashing", "export", str(out)])
    assert res.exit_code != 0
    assert failing_parts == [3]  # it failed after the first part
    assert out.read_text() == "an earlier export\n"
    assert not Path(str(out) + ".partial").exists()
    assert [p for p in os.listdir(tmp_path) if p.startswith("backup")] == ["backup.jsonl"]
