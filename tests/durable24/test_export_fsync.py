"""``memstrata export FILE`` writes ``FILE.partial`` and renames it ``FILE`` once whole
(crash23). The rename alone is not durable: after a power cut the file system may hold the
new name pointing at a file whose pages never reached the disk (empty or short), or the old
name. So the file is fsynced before the rename and its folder after it.

A power cut cannot be made in a test; what is checked is the order of the real calls of a
real export: ``os.fsync`` of the file's descriptor (the file that becomes ``FILE``) before
``os.replace``, and ``os.fsync`` of the folder after it (``os.fsync`` and ``os.replace``
wrapped to record their arguments, then called as usual)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memstrata import Memory, Scope
from memstrata.cli.app import app

ME = Scope("t", "u")


def _export(tmp_path: Path, out: Path) -> Any:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    with Memory(db, embedder="hashing", background=False) as mem:
        mem.add_messages(
            ME, [{"role": "user", "content": f"turn {i} of a walk"} for i in range(30)]
        )
    args = ["--db", db, "--tenant", "t", "--user", "u", "--embedder", "hashing"]
    return CliRunner().invoke(app, [*args, "export", str(out), "--json"])


@pytest.mark.skipif(os.name != "posix", reason="a folder is synced on POSIX only")
def test_the_export_is_on_disk_before_its_rename_and_the_rename_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[str, Any]] = []
    fsync, replace = os.fsync, os.replace

    def synced(fd: int) -> None:
        st = os.fstat(fd)
        events.append(("fsync", ("dir" if stat.S_ISDIR(st.st_mode) else "file", st.st_ino)))
        fsync(fd)

    def replaced(src: Any, dst: Any, **kw: Any) -> None:
        events.append(("replace", (os.stat(src).st_ino, str(dst))))
        replace(src, dst, **kw)

    monkeypatch.setattr(os, "fsync", synced)
    monkeypatch.setattr(os, "replace", replaced)
    out = tmp_path / "exports" / "backup.jsonl"
    out.parent.mkdir()
    res = _export(tmp_path, out)
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["exported"] == 30
    assert json.loads(out.read_text().splitlines()[-1])["end"] == "complete"
    exported = out.stat().st_ino
    moves = [i for i, (kind, arg) in enumerate(events) if kind == "replace" and arg[1] == str(out)]
    assert len(moves) == 1 and events[moves[0]][1][0] == exported
    before, after = events[: moves[0]], events[moves[0] + 1 :]
    assert ("fsync", ("file", exported)) in before  # its bytes, then its name
    assert ("fsync", ("dir", out.parent.stat().st_ino)) in after  # the rename itself
    assert not Path(str(out) + ".partial").exists()


def test_a_folder_that_cannot_be_synced_is_said_but_the_export_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Some file systems (network ones) refuse to sync a folder: the export is whole and
    renamed by then, so it succeeds, and says so on stderr."""
    fsync = os.fsync

    def refused(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(22, "Invalid argument")
        fsync(fd)

    monkeypatch.setattr(os, "fsync", refused)
    out = tmp_path / "backup.jsonl"
    res = _export(tmp_path, out)
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == {"exported": 30, "path": str(out)}
    assert "could not be synced" in res.stderr and "Invalid argument" in res.stderr
    assert json.loads(out.read_text().splitlines()[-1])["end"] == "complete"
