"""What history costs an export and an import: one ``Store.histories`` read a page, of the
records that can have history, in runs of at most ``HISTORY_PAGE`` versions; an import's
pages end at ``HISTORY_PAGE`` past versions too. And the CLI's ``--no-history``."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memstrata import Memory
from memstrata.cli.app import app
from memstrata.portability import Continued, history_runs, read_pages

from .conftest import ALICE, USER, lines_of


def _user(mem: Memory, n: int, edits: dict[int, int]) -> list[str]:
    """``n`` notes; note ``i`` updated ``edits[i]`` times."""
    ids = []
    for i in range(n):
        rec = mem.add(ALICE, f"note number {i} about hives", dedup=False)
        for k in range(edits.get(i, 0)):
            rec = mem.update(USER, rec.id, expected_version=rec.version, content=f"edit {k} {i}")
        ids.append(rec.id)
    return ids


def test_an_export_reads_history_once_a_page_for_the_records_that_have_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memstrata.portability.EXPORT_PAGE", 4)
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", background=False) as mem:
        ids = _user(mem, 10, {0: 2, 1: 1, 5: 3})
        calls: list[list[str]] = []
        read = mem.store.histories

        def counted(scope: Any, wanted: Sequence[str]) -> Any:
            calls.append(list(wanted))
            return read(scope, wanted)

        monkeypatch.setattr(mem.store, "histories", counted)
        buf = io.StringIO()
        assert mem.export_records(USER, buf) == 10
    # pages: notes 0-3 (two with history), 4-7 (one), 8-9 (none: no read)
    assert calls == [[ids[0], ids[1]], [ids[5]]]
    assert lines_of(buf.getvalue())[-1]["past_versions"] == 6


def test_history_reads_are_runs_of_at_most_history_page_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memstrata.portability.HISTORY_PAGE", 3)
    with Memory("memory://", embedder="hashing", background=False) as mem:
        _user(mem, 5, {0: 2, 1: 1, 2: 5, 3: 1, 4: 1})
        page = mem.list(USER, limit=10, newest_first=False)
    runs = [([r.version - 1 for r in run], long) for run, long in history_runs(page)]
    # a record with more than 3 on its own, read in parts (exphist28)
    assert runs == [([2, 1], False), ([5], True), ([1, 1], False)]


def test_an_import_page_ends_at_history_page_past_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Memory("memory://", embedder="hashing", background=False) as mem:
        _user(mem, 6, {0: 2, 1: 2, 2: 1, 4: 4})
        buf = io.StringIO()
        mem.export_records(USER, buf)
    monkeypatch.setattr("memstrata.portability.HISTORY_PAGE", 3)
    pages = read_pages(io.StringIO(buf.getvalue()), model_id="hashing-256", dims=256)
    sizes = [
        [f"part of {len(e.past)}" if isinstance(e, Continued) else len(e[2]) for e in page]
        for page in pages
    ]
    # a record with more than 3 comes with none, its versions in parts, a page each (before
    # session 27 it came with all 4: imphist27)
    assert sizes == [[2, 2], [1, 0, 0, "part of 3"], ["part of 1", 0]]


def test_the_cli_exports_history_unless_told_not_to(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        _user(mem, 2, {0: 1})

    def base(user: str = "alice") -> list[str]:
        return ["--db", f"sqlite:///{db}", "--tenant", "acme", "--user", user,
                "--embedder", "hashing"]  # fmt: skip

    runner = CliRunner()
    res = runner.invoke(app, [*base(), "export", str(tmp_path / "h.jsonl")])
    assert res.exit_code == 0, res.output
    lines = lines_of((tmp_path / "h.jsonl").read_text())
    assert lines[0]["version"] == 3 and lines[-1]["past_versions"] == 1
    res = runner.invoke(app, [*base(), "export", str(tmp_path / "p.jsonl"), "--no-history"])
    assert res.exit_code == 0, res.output
    lines = lines_of((tmp_path / "p.jsonl").read_text())
    assert lines[0]["version"] == 2 and lines[-1] == {"end": "complete", "count": 2}
    res = runner.invoke(
        app, [*base("bob"), "import", str(tmp_path / "h.jsonl"), "--remap", "--json"]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["versions"] == 1
