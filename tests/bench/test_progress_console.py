"""The CLI's lazily built console works where rich needs a real one (``with console:``)."""

from __future__ import annotations

import io

from memstrata.cli.console import lazy_console


def test_a_progress_bar_runs_on_the_lazy_console() -> None:
    from rich.progress import Progress

    out = io.StringIO()
    console = lazy_console(file=out, force_terminal=False, width=60)
    with Progress(console=console, transient=False) as bar:  # Live enters the console
        task = bar.add_task("ingest", total=3)
        bar.update(task, advance=3)
    with console:
        console.print("done")
    assert "ingest" in out.getvalue() and "done" in out.getvalue()
