"""``memstrata purge --compact`` and ``memstrata maintain --compact`` rewrite the store's
files after the purge (SQLite: ``VACUUM`` and an emptied WAL) and say what they did;
``Memory.compact`` on ``memory://`` has no file to rewrite."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memstrata import FixedClock, Memory
from memstrata.cli.app import app
from memstrata.store.compaction import CompactReport


def _base(db: Path) -> list[str]:
    return [
        "--db",
        f"sqlite:///{db}",
        "--tenant",
        "acme",
        "--user",
        "alice",
        "--embedder",
        "hashing",
    ]


def _file_bytes(db: Path) -> bytes:
    return b"".join(
        Path(f"{db}{s}").read_bytes() for s in ("", "-wal") if Path(f"{db}{s}").exists()
    )


def test_purge_compact_rewrites_the_file(tmp_path: Path) -> None:
    runner = CliRunner()
    db = tmp_path / "c.db"
    base = _base(db)
    ids = []
    for text in ("the quokka password is vrumblestick", "filler " * 400, "tea at nine"):
        out = runner.invoke(app, [*base, "add", text, "--json"])
        assert out.exit_code == 0, out.output
        ids.append(json.loads(out.stdout)["id"])
    out = runner.invoke(app, [*base, "purge", ids[0], ids[1], "--compact", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["records"] == 2 and data["remaining"] == 0
    compaction = data["compaction"]
    assert compaction["rewritten"] == [str(db)] and compaction["checkpoint"]
    assert compaction["bytes_after"] < compaction["bytes_before"]
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0
    assert b"vrumblestick" not in _file_bytes(db)
    # without --compact: no compaction in the report
    out = runner.invoke(app, [*base, "purge", ids[2], "--json"])
    assert "compaction" not in json.loads(out.stdout)


def test_purge_compact_prints_what_it_did(tmp_path: Path) -> None:
    runner = CliRunner()
    base = _base(tmp_path / "c.db")
    assert runner.invoke(app, [*base, "add", "a note about tea"]).exit_code == 0
    out = runner.invoke(app, [*base, "purge", "--yes", "--compact"])
    assert out.exit_code == 0, out.output
    assert "compacted 1 table(s)" in out.output
    assert "remaining" in out.output


def test_maintain_compact(tmp_path: Path) -> None:
    runner = CliRunner()
    base = _base(tmp_path / "c.db")
    assert runner.invoke(app, [*base, "add", "a note about tea"]).exit_code == 0
    out = runner.invoke(app, [*base, "maintain", "--compact", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["compaction"]["checkpoint"] is True
    out = runner.invoke(app, [*base, "maintain", "--compact", "--dry-run", "--json"])
    assert "compaction" not in json.loads(out.stdout)  # a dry run changes nothing


def test_memory_store_has_nothing_to_compact(clock: FixedClock) -> None:
    with Memory("memory://", embedder="hashing", clock=clock, background=False) as mem:
        assert mem.compact() == CompactReport()
