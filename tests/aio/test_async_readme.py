"""The README's Async example runs as written and prints what it says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import threads

README = Path(__file__).resolve().parents[2] / "README.md"


def _async_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### Async (`AsyncMemory`)") :]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "no python block in the Async section"
    return match.group(1)


@pytest.mark.slow
def test_the_async_example_runs_and_finds_the_allergy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # it writes memory.db in the working directory
    before = threads()
    out = io.StringIO()
    ns: dict[str, Any] = {}
    with contextlib.redirect_stdout(out):
        exec(compile(_async_example(), "README.md Async", "exec"), ns)  # noqa: S102
    first_hit, *context = out.getvalue().splitlines()
    assert "allergic to peanuts" in first_hit
    assert "Never suggest recipes with nuts" in "\n".join(context)
    assert (tmp_path / "memory.db").exists()
    assert threads() == before  # async with closed everything it opened
