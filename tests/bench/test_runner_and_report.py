"""The whole LoCoMo pipeline on the tiny fixture: façade, report, plots, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata.bench.cli import bench_app
from memstrata.bench.locomo.dataset import load_locomo
from memstrata.bench.locomo.runner import LocomoConfig, run_locomo
from memstrata.bench.plots import plot_locomo
from memstrata.bench.report import locomo_markdown


def _run(locomo_file: Path) -> dict:
    cfg = LocomoConfig(embedder="hashing", store="memory", mem0=False, pool=10)
    return run_locomo(load_locomo(locomo_file), cfg)


def test_run_locomo_measures_every_method(locomo_file: Path) -> None:
    res = _run(locomo_file)
    m = res["methods"]
    assert res["ingest"]["messages"] == 6
    hybrid = m["memstrata hybrid"]
    # 4 questions have evidence (the one with none is skipped); 6 turns all fit in top 10.
    assert hybrid["evidence_recall"]["50"]["all"] == {"mean": 1.0, "n": 4}
    assert hybrid["latency"]["n"] == 5
    # Answer recall covers categories 1-4 only: 4 questions, and the full history has it all.
    assert m["full history"]["answer_recall"]["full"]["all"]["n"] == 4
    assert "5" not in m["full history"]["answer_recall"]["full"]
    assert m["full history"]["answer_recall"]["full"]["4"]["mean"] == 1.0
    for name in ("BM25 only", "dense only", "sliding window", "random sampling"):
        assert set(m[name]["answer_recall"]) == {"1000", "2000", "4000"}
    bc = m["memstrata build_context"]
    assert "missing" in bc or bc["answer_recall"]["4000"]["all"]["n"] == 4
    json.dumps(res)


def test_report_and_plots(locomo_file: Path, tmp_path: Path) -> None:
    res = _run(locomo_file)
    md = locomo_markdown(res)
    assert "## Turn evidence recall @k" in md
    assert "sliding window" in md and "full history (no budget)" in md
    paths = plot_locomo(res, tmp_path)
    assert [p.name for p in paths] == ["locomo_recall_vs_k.png", "locomo_recall_vs_budget.png"]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in paths)


def test_cli_locomo_writes_outputs(locomo_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        bench_app,
        [
            "locomo",
            "--data",
            str(locomo_file),
            "--out",
            str(out),
            "--embedder",
            "hashing",
            "--store",
            "memory",
            "--no-mem0",
            "--limit",
            "2",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["dataset"]["questions"] == 2
    for name in (
        "locomo.json",
        "locomo.md",
        "locomo_recall_vs_k.png",
        "locomo_recall_vs_budget.png",
    ):
        assert (out / name).is_file()


def test_cli_locomo_missing_data_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(bench_app, ["locomo", "--data", str(tmp_path / "x.json")])
    assert result.exit_code == 2
    assert "snap-research/locomo" in result.output


def test_library_does_not_import_bench() -> None:
    src = Path(__file__).resolve().parents[2] / "src" / "memstrata"
    offenders = [
        p
        for p in src.rglob("*.py")
        if "bench" not in p.relative_to(src).parts[:1]
        and "memstrata.bench" in p.read_text(encoding="utf-8")
        and p.relative_to(src).parts[0] != "cli"
    ]
    assert offenders == []


def test_context_text_drops_the_question_echo() -> None:
    from types import SimpleNamespace

    from memstrata.bench.locomo.dataset import Question
    from memstrata.bench.locomo.runner import _context_text

    q = Question("Where did Ben move?", "Lisbon", 1, ("D2:1",))
    ctx = SimpleNamespace(
        messages=[
            {"role": "system", "content": "[27 June 2023] Ben: I moved to Lisbon."},
            {"role": "user", "content": "Where did Ben move?"},
        ]
    )
    text = _context_text(ctx, q)
    assert "Lisbon" in text and "Where did Ben move?" not in text


def test_evidence_in_context_counts_turns_shown(locomo_file: Path) -> None:
    """Every turn of the tiny fixture fits in 1,000 tokens: build_context shows every
    evidence turn; BM25 misses the one that shares no word with its question ("Where did
    Ben move?" - "Lisbon is lovely"); a summary retelling a turn does not count as showing
    it."""
    from types import SimpleNamespace

    from memstrata.bench.locomo.runner import _turns_shown

    m = _run(locomo_file)["methods"]
    for name, expected in (("memstrata build_context", 1.0), ("BM25 only", (1 + 0.5 + 1) / 3)):
        ev = m[name]["evidence_in_context"]
        assert set(ev) == {"1000", "2000", "4000"}
        assert ev["1000"]["all"] == {"mean": pytest.approx(expected), "n": 3}
    assert "### Evidence turns shown in the context" in locomo_markdown(_run(locomo_file))
    ctx = SimpleNamespace(
        items=[
            SimpleNamespace(record_id="t1", source_ids=("t1",)),
            SimpleNamespace(record_id="s1", source_ids=("t2", "t3")),  # a summary
        ],
        history=[SimpleNamespace(record_id="t4")],
    )
    dia = {"t1": "D1:1", "t2": "D1:2", "t3": "D1:3", "t4": "D1:4"}
    assert _turns_shown(ctx, dia) == {"D1:1", "D1:4"}
