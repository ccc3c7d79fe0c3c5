"""``memstrata migrate --to URL``: copy the ``--db`` store into another backend and verify it.

A thin shell over :func:`memstrata.store.migrate.copy_store`: the library is imported when
the command runs, the summary is a table (or ``--json``), and the exit code says whether the
target was proven equal to the source (0), differs (1), or could not be used (2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from .options import Settings, console, emit, fail, note
from .store_check import check_store

if TYPE_CHECKING:
    from ..store.migrate import MigrationReport

__all__ = ["register"]


def migrate(
    ctx: typer.Context,
    to: Annotated[
        str,
        typer.Option(
            "--to",
            help="Target store URL: postgresql://user@host/db[?schema=NAME], sqlite:///path.db",
        ),
    ],
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Complete an interrupted migration: the target may hold data; copy "
            "only what it lacks (nothing is duplicated), then verify.",
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Open and check both stores, count what would be copied, write nothing.",
        ),
    ] = False,
    verify_only: Annotated[
        bool, typer.Option("--verify-only", help="Copy nothing: compare the two stores.")
    ] = False,
    no_verify: Annotated[
        bool,
        typer.Option("--no-verify", help="Skip the comparison after copying (not recommended)."),
    ] = False,
    batch_size: Annotated[
        int,
        typer.Option(
            "--batch-size",
            min=1,
            max=100_000,
            help="Records per transaction (memory use grows with it; a batch also ends "
            "at 5,000 earlier versions, and a longer history is read a part at a time).",
        ),
    ] = 500,
    replace_nul: Annotated[
        bool,
        typer.Option(
            "--replace-nul",
            help="Store each NUL character of old records' text as U+FFFD (PostgreSQL "
            "cannot hold NUL in text); the report counts the texts changed.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Copy the --db store (every tenant, record version, vector, cache entry, job, audit
    event, API key and setting) into --to, then prove the copy equal by counts and content
    hashes."""
    from ..errors import MemstrataError
    from ..store.migrate import copy_store, redact_url, verify_stores

    settings: Settings = ctx.obj
    problem, _ = check_store(settings.url, create=False)
    new_file = None
    if problem is None:
        problem, new_file = check_store(to, create=not verify_only)
    if problem is not None:
        fail(problem)
    if verify_only and (resume or dry_run or no_verify):
        fail("--verify-only copies nothing: leave out --resume, --dry-run and --no-verify")
    if not as_json:
        verb = "comparing" if verify_only else "dry run:" if dry_run else "migrating"
        note(f"{verb} {redact_url(settings.url)} -> {redact_url(to)}")
    try:
        if verify_only:
            report = verify_stores(settings.url, to, batch_size=batch_size, replace_nul=replace_nul)
        else:
            # A dry run into a SQLite file not created yet counts against an empty store
            # standing in for it, so that no file is created.
            target = "memory://" if dry_run and new_file is not None else to
            report = copy_store(
                settings.url,
                target,
                batch_size=batch_size,
                resume=resume,
                dry_run=dry_run,
                verify=not no_verify,
                replace_nul=replace_nul,
            )
            report.target = redact_url(to)
    except MemstrataError as exc:
        fail(str(exc))
    if not emit(report.as_dict(), as_json):
        _print(report, copying=not verify_only)
    if report.mismatch_total:
        raise typer.Exit(1)


def _print(report: MigrationReport, *, copying: bool) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=None, show_edge=False)
    table.add_column("kind")
    table.add_column("source", justify="right")
    table.add_column("target", justify="right")
    if copying:
        table.add_column("copied now", justify="right")
    table.add_column("differences", justify="right")
    for kind, c in report.counts.items():
        target = "-" if report.dry_run else f"{c.target:,}"
        row = [kind, f"{c.source:,}", target]
        if copying:
            row.append(f"{c.copied:,}")
        row.append(f"{c.mismatched:,}")
        table.add_row(*row)
    console.print(table)
    timing = f"verify {report.verify_seconds:.1f} s"
    if report.dry_run:
        timing = f"counted in {report.copy_seconds:.1f} s"
    elif copying:
        timing = (
            f"copy {report.copy_seconds:.1f} s ({report.records_per_second:,.0f} "
            f"records/s), " + timing
        )
    console.print(Text(timing, style="dim"))
    _print_nul(report)
    for m in report.mismatches:
        console.print(Text("differs: ", style="red") + Text(str(m)))
    if report.mismatch_total > len(report.mismatches):
        console.print(
            Text(f"... and {report.mismatch_total - len(report.mismatches)} more", style="red")
        )
    if report.dry_run:
        console.print(Text("dry run: nothing was written", style="yellow"))
    elif report.ok:
        console.print(
            Text("verified: the target holds exactly what the source holds", style="green")
        )
    elif not report.verified:
        console.print(
            Text("not verified (--no-verify): run again with --verify-only", style="yellow")
        )
    else:
        console.print(Text(f"{report.mismatch_total} differences", style="red"))


def register(app: typer.Typer) -> None:
    app.command("migrate")(migrate)


def _print_nul(report: MigrationReport) -> None:
    from rich.text import Text

    n = report.nul_texts
    if not n:
        return
    texts = f"{n:,} text{'s' if n != 1 else ''} of old records hold a NUL character"
    if report.replace_nul:
        done = "will be stored" if report.dry_run else "was stored"
        console.print(Text(f"{texts}: each NUL {done} as U+FFFD", style="yellow"))
    elif not report.target_stores_nul:
        console.print(
            Text(
                f"{texts}, which the target cannot store: add --replace-nul to store each "
                "as U+FFFD",
                style="yellow",
            )
        )
