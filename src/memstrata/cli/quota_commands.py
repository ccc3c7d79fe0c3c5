"""``memstrata quotas``: the store's ``quotas:in_use`` flag, shown and cleared (session 33).

A process opened with quotas (``serve --user-quota``, ``Memory(quotas=...)``) writes the
flag, and every process without quotas on the store then counts its users' embeddings
(:mod:`memstrata.quotas`). ``clear-flag`` is for an operator who no longer runs any
process with quotas there: the others stop counting within ``FLAG_SECONDS``; a process
still running with quotas writes the flag again at its next write."""

from __future__ import annotations

from typing import Annotated

import typer

from .options import Settings, console, emit, open_memory

__all__ = ["quotas_app", "register"]

quotas_app = typer.Typer(
    help="The store's quotas-in-use flag (whether processes without quotas count).",
    no_args_is_help=True,
    rich_markup_mode=None,
)

Json = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


@quotas_app.command()
def status(ctx: typer.Context, as_json: Json = False) -> None:
    """Say whether a process with quotas has marked the store (quotas:in_use): while it
    is set, every process on the store counts its users' embeddings per day."""
    from ..quotas import quotas_in_use

    settings: Settings = ctx.obj
    with open_memory(settings, announce=False) as mem:
        in_use = quotas_in_use(mem.store)
    if not emit({"in_use": in_use}, as_json):
        console.print(
            "quotas:in_use is set: every process counts its users' embeddings per day"
            if in_use
            else "quotas:in_use is not set: processes without quotas count nothing",
            highlight=False,
        )


@quotas_app.command("clear-flag")
def clear_flag(ctx: typer.Context, as_json: Json = False) -> None:
    """Clear quotas:in_use once no process with quotas runs on the store: processes without
    quotas stop counting within 10 s (one still running with quotas sets it again at its
    next write). The day's counters are kept."""
    from ..quotas import FLAG_SECONDS, clear_in_use

    settings: Settings = ctx.obj
    with open_memory(settings, announce=False) as mem:
        cleared = clear_in_use(mem.store)
    if not emit({"cleared": cleared}, as_json):
        console.print(
            f"quotas:in_use cleared: processes without quotas stop counting within "
            f"{FLAG_SECONDS:.0f} s; a process still running with quotas sets it again"
            if cleared
            else "quotas:in_use was not set: nothing to clear",
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    app.add_typer(quotas_app, name="quotas")
