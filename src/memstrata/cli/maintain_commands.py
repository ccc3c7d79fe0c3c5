"""``memstrata maintain``: one maintenance pass (forgetting, decay, retention, consolidation)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..policies.forgetting import DEFAULT_POLICY, POLICY_NAMES
from .options import Settings, console, emit, open_memory

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
        console.print(data)


def register(app: typer.Typer) -> None:
    app.command("maintain")(maintain)
