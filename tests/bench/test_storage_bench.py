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
    assert data["compacted_bytes_per_message"] > 0
    assert "records" in data["compacted_tables"] or data["compacted_tables"] == {}


def test_storage_command_refuses_a_bad_size(tmp_path: Path) -> None:
    result = CliRunner().invoke(bench_app, ["storage", "--messages", "0", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert not (tmp_path / "storage.json").exists()


def test_storage_command_measures_a_postgresql_schema(tmp_path: Path, pg_url: str) -> None:
    """With ``--store postgresql://...`` the sizes are the relations of a fresh schema of
    that database, which is dropped afterwards."""
    from memstrata.bench.storage import relation_bytes

    result = CliRunner().invoke(
        bench_app,
        ["storage", "--messages", "40", "--embedder", "hashing", "--builds", "3"]
        + ["--store", pg_url, "--out", str(tmp_path)],
    )
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "storage.json").read_text())
    assert data["config"]["store"] == pg_url
    assert data["bytes_per_message"] > 0 and data["sizes"][-1]["messages"] == 40
    assert {"records", "vectors", "embedding_cache"} <= set(data["tables"])
    assert data["history"] == {} and data["context_builds"] == 3
    assert data["compacted_bytes_per_message"] > 0 and "vectors" in data["compacted_tables"]
    # only the schema the URL names (its own, empty here) is left in the database
    assert relation_bytes(pg_url) == {}
    assert "store postgresql://" in (tmp_path / "storage.md").read_text()


def test_storage_command_refuses_another_store(tmp_path: Path) -> None:
    result = CliRunner().invoke(bench_app, ["storage", "--store", "memory", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert not (tmp_path / "storage.json").exists()
