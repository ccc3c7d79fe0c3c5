"""The CLI's lazy console must behave as a rich Console, including as a context manager
(rich's Progress and Live enter it when they stop; `bench locomo` crashed at its end)."""

from __future__ import annotations

import io

from rich.progress import Progress

from memstrata.cli.console import lazy_console


def test_progress_on_a_lazy_console_starts_and_stops() -> None:
    out = io.StringIO()
    console = lazy_console(file=out, force_terminal=False)
    with Progress(console=console) as progress:
        task = progress.add_task("work", total=2)
        progress.advance(task, 2)
    assert "work" in out.getvalue()


def test_with_statement_on_a_lazy_console() -> None:
    out = io.StringIO()
    console = lazy_console(file=out)
    with console:
        console.print("inside")
    assert "inside" in out.getvalue()
