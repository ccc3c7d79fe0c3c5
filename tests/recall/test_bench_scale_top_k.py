"""`memstrata bench scale --top-k` times searches of that size (issue 13 §3: top-50 Chinese)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memstrata.bench import scale as scale_mod
from memstrata.bench.cli import bench_app


def test_top_k_reaches_the_timed_searches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []
    original = scale_mod.run_scale

    def spy(cfg: Any, progress: Any = None) -> Any:
        from memstrata import Memory

        real = Memory.search

        def search(self: Any, scope: Any, query: str, **kw: Any) -> Any:
            asked.append(kw.get("top_k", -1))
            return real(self, scope, query, **kw)

        with monkeypatch.context() as m:
            m.setattr(Memory, "search", search)
            return original(cfg, progress)

    monkeypatch.setattr(scale_mod, "run_scale", spy)
    result = CliRunner().invoke(
        bench_app,
        [
            "scale",
            "--out",
            str(tmp_path),
            "--sizes",
            "120",
            "--zh-sizes",
            "120",
            "--store",
            "memory",
            "--queries",
            "3",
            "--top-k",
            "50",
            "--worker-messages",
            "0",
            "--session-turns",
            "",
        ],
    )
    assert result.exit_code == 0, result.output
    assert asked and set(asked) == {50}
    assert "top_k=50" in (tmp_path / "scale.md").read_text(encoding="utf-8")


def test_top_k_must_be_positive(tmp_path: Path) -> None:
    result = CliRunner().invoke(bench_app, ["scale", "--out", str(tmp_path), "--top-k", "0"])
    assert result.exit_code != 0
