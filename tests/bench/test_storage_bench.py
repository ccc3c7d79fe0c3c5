"""`memstrata bench storage`: file size per message and growth per 1,000 context builds."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memstrata.bench.cli import bench_app


def test_storage_command_writes_sizes_and_context_growth(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        bench_app,
        [
            "storage",
            "--messages",
            "60",
            "--embedder",
            "hashing",
            "--builds",
            "5",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "storage.json").read_text())
    assert data["sizes"][-1]["messages"] == 60
    assert data["bytes_per_message"] > 0
    assert data["context_builds"] == 5
    assert "records" in data["tables"] or data["tables"] == {}
    # where history's bytes go: per record type and per field
    assert data["history"]["types"]["summary"]["versions"] > 0
    assert all(size > 0 for size in data["history"]["columns"].values())
    assert "bytes/message" in (tmp_path / "storage.md").read_text()


def test_storage_command_refuses_a_bad_size(tmp_path: Path) -> None:
    result = CliRunner().invoke(bench_app, ["storage", "--messages", "0", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert not (tmp_path / "storage.json").exists()
