"""``memstrata maintain``: one maintenance pass (forgetting, decay, retention, consolidation)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..policies.forgetting import DEFAULT_POLICY, POLICY_NAMES
from .options import DoneJobsDays, Settings, command_done_jobs_days, console, emit, open_memory

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

    from ..maintenance import MaintenanceReport
    from ..store.compaction import CompactReport

__all__ = ["COMPACT_HELP", "compaction_data", "register", "show_compaction"]

COMPACT_HELP = (
    "Then rewrite the database's files so deleted rows leave no bytes (PostgreSQL: VACUUM "
    "FULL of every table, locking each against reads and writes while it is copied, then a "
    "WAL switch and CHECKPOINT; SQLite: VACUUM)."
)


def compaction_data(report: CompactReport) -> dict[str, Any]:
    from dataclasses import asdict

    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(report).items()}


def show_compaction(report: CompactReport) -> None:
    """One line of what was rewritten, then every residual as a warning."""
    console.print(
        f"compacted {len(report.rewritten)} table(s) in {report.seconds:.1f} s: "
        f"{report.bytes_before:,} -> {report.bytes_after:,} bytes"
        + ("" if not report.skipped else f"; not rewritten: {', '.join(report.skipped)}"),
        highlight=False,
    )
    for residual in report.residuals:
        console.print(f"[yellow]still on the server:[/yellow] {residual}", highlight=False)


def maintain(
    ctx: typer.Context,
    policy: Annotated[
        str, typer.Option(help=f"Forgetting policy: {', '.join(POLICY_NAMES)}.")
    ] = DEFAULT_POLICY,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Decide and report; change nothing.")
    ] = False,
    log: Annotated[bool, typer.Option("--log", help="Also list every action taken.")] = False,
    compact: Annotated[bool, typer.Option("--compact", help=COMPACT_HELP)] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
    done_jobs: DoneJobsDays = None,
) -> None:
    """Run maintenance for --tenant/--user: forget (soft, restorable), downgrade, refresh decay
    scores, purge by retention, merge near-duplicates."""
    settings: Settings = command_done_jobs_days(ctx.obj, done_jobs)
    with open_memory(settings) as mem:
        report = mem.maintain(settings.scope(), policy=policy, dry_run=dry_run)
        compacted = mem.compact() if compact and not dry_run else None
    data: dict[str, object] = report.as_dict()
    if compacted is not None:
        data["compaction"] = compaction_data(compacted)
    if log:
        data["log"] = [
            {
                "id": e.record_id,
                "action": e.action,
                "policy": e.policy,
                "reason": e.reason,
                "score": round(e.score, 4),
                "at": e.at.isoformat(),
            }
            for e in report.log
        ]
    if not emit(data, as_json):
        console.print(report_table(report))
        if log:
            console.print(log_table(report))
        if compacted is not None:
            show_compaction(compacted)


COUNTS = (
    ("scanned", "current records looked at"),
    ("forgotten", "soft-deleted by the policy (restorable)"),
    ("downgraded", "importance halved (cold)"),
    ("preserved", "kept as they are"),
    ("purged", "destroyed by retention"),
    ("merged", "near-duplicates merged into an older record"),
    ("refreshed", "stale summaries written again"),
    ("rederived", "clusters, episodes, facts... re-derived (or forgotten: no source left)"),
    ("decay_updated", "decay score brought up to date"),
    ("skipped", "changed meanwhile: next run"),
    ("counters_swept", "counter rows of past days and windows deleted (every user's)"),
    ("jobs_swept", "finished jobs past their retention deleted (every user's)"),
)


def report_table(report: MaintenanceReport) -> Table:
    """The counts, one per row (readable at any terminal width), titled with the scope,
    the policy and whether it was a dry run."""
    from rich.table import Table
    from rich.text import Text

    mode = "dry run: nothing changed" if report.dry_run else "applied"
    table = Table(
        title=Text(f"maintenance of {report.scope} (policy {report.policy}, {mode})"),
        title_justify="left",
    )
    table.add_column(Text(""))
    table.add_column(Text("records"), justify="right")
    table.add_column(Text(""), style="dim")
    for name, meaning in COUNTS:
        table.add_row(
            Text(name.replace("_", " "), style="bold"),
            Text(str(getattr(report, name))),
            Text(meaning),
        )
    return table


def log_table(report: MaintenanceReport) -> Table | Text:
    from rich.table import Table
    from rich.text import Text

    from .output import SHORT_ID

    if not report.log:
        return Text("no actions")
    table = Table(title=Text(f"{len(report.log)} actions"), title_justify="left")
    for col in ("id", "action", "policy", "score", "reason"):
        table.add_column(Text(col), overflow="fold")
    for e in report.log:
        table.add_row(
            Text(e.record_id[:SHORT_ID]),
            Text(e.action),
            Text(e.policy),
            Text(f"{e.score:.3f}"),
            Text(e.reason),
        )
    return table


def register(app: typer.Typer) -> None:
    app.command("maintain")(maintain)
