"""``memstrata bench quota`` (quota34): Memory.add with quotas off and on, on SQLite and
PostgreSQL (a fresh schema of the suite's server); a small run, its report checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.cli.app import app


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_the_bench_reports_every_case(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store = "sqlite" if kind == "sqlite" else request.getfixturevalue("pg_url")
    done = CliRunner().invoke(
        app,
        ["bench", "quota", "--store", store, "--adds", "3", "--rounds", "2", "--json"]
        + ["--out", str(tmp_path)],
    )
    assert done.exit_code == 0, done.output
    res = json.loads((tmp_path / "quota.json").read_text())
    assert list(res["cases"]) == ["off", "counted", "records", "daily", "both"]
    assert res["config"]["store"] == kind
    for case in res["cases"].values():
        assert len(case["rounds_median_ms"]) == 2
        assert case["median_ms"] > 0 and case["adds_per_s"] > 0
    assert res["cases"]["off"]["vs_off"] == 1.0
    assert "| counted |" in (tmp_path / "quota.md").read_text()


def test_an_unknown_case_is_refused(tmp_path: Path) -> None:
    done = CliRunner().invoke(
        app, ["bench", "quota", "--case", "monthly", "--out", str(tmp_path), "--adds", "1"]
    )
    assert done.exit_code == 2
    assert "monthly" in done.output and "counted" in done.output
