"""``memstrata maintain``: one maintenance pass (forgetting, decay, retention, consolidation)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..policies.forgetting import DEFAULT_POLICY, POLICY_NAMES
from .options import Settings, console, emit, open_memory

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

    from ..maintenance import MaintenanceReport

__all__ = ["register"]


def maintain(
    ctx: typer.Context,
    policy: Annotated[
        str, typer.Option(help=f"Forgetting policy: {', '.join(POLICY_NAMES)}.")
    ] = DEFAULT_POLICY,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Decide and report; change nothing.")
    ] = False,
    log: Annotated[bool, typer.Option("--log", help="Also list every action taken.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")] = False,
) -> None:
    """Run maintenance for --tenant/--user: forget (soft, restorable), downgrade, refresh decay
    scores, purge by retention, merge near-duplicates."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        report = mem.maintain(settings.scope(), policy=policy, dry_run=dry_run)
    data: dict[str, object] = report.as_dict()
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
