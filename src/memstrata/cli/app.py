"""``memstrata``: the command line over the same API as the library."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import Progress
from rich.table import Table

from ..codec import record_to_dict
from ..errors import MemstrataError
from ..records import MemoryRecord
from ..search.hit import SearchHit
from .layer_commands import register as register_layer_commands
from .options import Settings, console, emit, fail, open_memory

__all__ = ["app", "main"]

app = typer.Typer(help="memstrata: layered long-term memory for LLM agents.",
                  no_args_is_help=True, add_completion=False)

Json = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


@app.callback()
def _settings(
    ctx: typer.Context,
    db: Annotated[str, typer.Option(envvar="MEMSTRATA_URL", help="Store URL: sqlite:///path.db "
                                    "or memory://")] = "sqlite:///memstrata.db",
    tenant: Annotated[str | None, typer.Option(envvar="MEMSTRATA_TENANT",
                                               help="Tenant id.")] = None,
    user: Annotated[str | None, typer.Option(envvar="MEMSTRATA_USER", help="User id.")] = None,
    agent: Annotated[str | None, typer.Option(envvar="MEMSTRATA_AGENT", help="Agent id.")] = None,
    session: Annotated[str | None, typer.Option(envvar="MEMSTRATA_SESSION",
                                                help="Session id.")] = None,
    embedder: Annotated[str | None, typer.Option(envvar="MEMSTRATA_EMBEDDER", help="default, "
                                                 "hashing[:dims], openai:MODEL, st:NAME")] = None,
    llm: Annotated[str | None, typer.Option(envvar="MEMSTRATA_LLM",
                                            help="heuristic or openai:MODEL")] = None,
    openai_base_url: Annotated[str | None, typer.Option(envvar="OPENAI_BASE_URL",
                                                        help="OpenAI-compatible endpoint.")] = None,
    openai_api_key: Annotated[str | None, typer.Option(envvar="OPENAI_API_KEY",
                                                       help="Key for that endpoint.")] = None,
) -> None:
    ctx.obj = Settings(db, tenant, user, agent, session, embedder, llm, openai_base_url,
                       openai_api_key)


def _row(r: MemoryRecord) -> dict[str, Any]:
    return record_to_dict(r)


def _records_table(records: list[MemoryRecord], title: str) -> Table:
    table = Table(title=title)
    for col in ("id", "type", "observed", "v", "status", "text"):
        table.add_column(col, overflow="fold")
    for r in records:
        table.add_row(r.id[:12], r.type.value, r.observed_at.strftime("%Y-%m-%d %H:%M"),
                      str(r.version), r.status.value, r.text[:120])
    return table


def _hits_table(hits: list[SearchHit], title: str) -> Table:
    table = Table(title=title)
    for col in ("#", "score", "layer", "observed", "text"):
        table.add_column(col, overflow="fold")
    for i, h in enumerate(hits, 1):
        table.add_row(str(i), f"{h.score:.3f}", h.layer,
                      h.record.observed_at.strftime("%Y-%m-%d"), h.text[:160])
    return table


@app.command()
def add(ctx: typer.Context, content: Annotated[str, typer.Argument(help="Text; - reads stdin.")],
        role: Annotated[str | None, typer.Option(help="Store as a message with this role "
                                                 "(user/assistant/system/tool).")] = None,
        type: Annotated[str, typer.Option(help="Record type when not a message.")] = "note",
        importance: Annotated[float | None, typer.Option(help="0..1; estimated if omitted.")]
        = None,
        tag: Annotated[list[str] | None, typer.Option(help="Tag (repeatable).")] = None,
        as_json: Json = False) -> None:
    """Store a message (--role) or a memory record."""
    if content == "-":
        content = sys.stdin.read()
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        scope = settings.scope()
        if role:
            rec = mem.add_message(scope, role, content)
        else:
            rec = mem.add(scope, content, type=type, importance=importance, tags=tag or ())
        if not emit(_row(rec), as_json):
            console.print(f"stored {rec.type.value} [bold]{rec.id}[/bold]")


@app.command()
def search(ctx: typer.Context, query: str,
           top_k: Annotated[int, typer.Option("--top-k", "-k", help="Hits to return.")] = 10,
           mode: Annotated[str, typer.Option(help="hybrid, lexical or dense.")] = "hybrid",
           layer: Annotated[list[str] | None, typer.Option(help="Restrict to a layer.")] = None,
           filters: Annotated[str | None, typer.Option(help="Filters as JSON, e.g. "
                                                       "'{\"tags\": [\"work\"]}'.")] = None,
           explain: Annotated[bool, typer.Option(help="Show every score term.")] = False,
           as_json: Json = False) -> None:
    """Hybrid search in the scope."""
    settings: Settings = ctx.obj
    try:
        flt = json.loads(filters) if filters else None
    except json.JSONDecodeError as exc:
        fail(f"--filters is not valid JSON: {exc}")
    with open_memory(settings) as mem:
        hits = mem.search(settings.scope(), query, top_k, layers=layer, filters=flt, mode=mode,
                          explain=explain)
        data = [{"score": h.score, "layer": h.layer, "source_ids": list(h.source_ids),
                 "explanation": dict(h.explanation) if h.explanation else None,
                 "record": _row(h.record)} for h in hits]
        if not emit(data, as_json):
            console.print(_hits_table(hits, f"search: {query}"))
            if explain:
                for i, h in enumerate(hits, 1):
                    console.print(i, dict(h.explanation or {}))


@app.command()
def get(ctx: typer.Context, record_id: str,
        deleted: Annotated[bool, typer.Option(help="Also find soft-deleted records.")] = False,
        as_json: Json = False) -> None:
    """Show one record."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        rec = mem.get(settings.scope(), record_id, include_deleted=deleted)
        if not emit(_row(rec), as_json):
            console.print_json(json.dumps(_row(rec), ensure_ascii=False))


@app.command("list")
def list_(ctx: typer.Context, limit: Annotated[int, typer.Option(help="Max rows.")] = 20,
          offset: Annotated[int, typer.Option(help="Rows to skip.")] = 0,
          type: Annotated[list[str] | None, typer.Option(help="Only these types.")] = None,
          deleted: Annotated[bool, typer.Option(help="Include soft-deleted.")] = False,
          as_json: Json = False) -> None:
    """List records, newest first."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        recs = mem.list(settings.scope(), filters={"types": type, "include_deleted": deleted},
                        limit=limit, offset=offset)
        if not emit([_row(r) for r in recs], as_json):
            console.print(_records_table(recs, f"{len(recs)} records"))


def _status_command(ctx: typer.Context, record_id: str, as_json: bool, restore: bool) -> None:
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        scope = settings.scope()
        rec = mem.restore(scope, record_id) if restore else mem.delete(scope, record_id)
        if not emit(_row(rec), as_json):
            console.print(f"{rec.id} is now {rec.status.value} (version {rec.version})")


@app.command()
def delete(ctx: typer.Context, record_id: str, as_json: Json = False) -> None:
    """Soft-delete a record (restorable)."""
    _status_command(ctx, record_id, as_json, restore=False)


@app.command()
def restore(ctx: typer.Context, record_id: str, as_json: Json = False) -> None:
    """Restore a soft-deleted record."""
    _status_command(ctx, record_id, as_json, restore=True)


@app.command()
def purge(ctx: typer.Context,
          record_id: Annotated[list[str] | None, typer.Argument(help="Ids; none = the whole "
                                                                "user.")] = None,
          yes: Annotated[bool, typer.Option("--yes", help="Confirm purging a whole user.")]
          = False, as_json: Json = False) -> None:
    """Destroy records for real (or every trace of the user, with --yes)."""
    settings: Settings = ctx.obj
    if not record_id and not yes:
        fail("purging a whole user destroys everything of theirs; repeat with --yes")
    with open_memory(settings) as mem:
        report = mem.purge(settings.scope(), record_id or None)
        data = {k: getattr(report, k) for k in report.__dataclass_fields__}
        if not emit(data, as_json):
            console.print(data)


@app.command()
def history(ctx: typer.Context, record_id: str, as_json: Json = False) -> None:
    """Every version of a record, oldest first."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        versions = mem.history(settings.scope(), record_id)
        if not emit([_row(r) for r in versions], as_json):
            console.print(_records_table(versions, f"history of {record_id}"))


@app.command()
def export(ctx: typer.Context,
           path: Annotated[Path, typer.Argument(help="Output .jsonl file; - for stdout.")],
           embeddings: Annotated[bool, typer.Option(help="Include vectors.")] = False,
           as_json: Json = False) -> None:
    """Export the scope's records as versioned JSON Lines."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        if str(path) == "-":
            n = mem.export_records(settings.scope(), sys.stdout, include_embeddings=embeddings)
            return
        with path.open("w", encoding="utf-8") as fp:
            n = mem.export_records(settings.scope(), fp, include_embeddings=embeddings)
        if not emit({"exported": n, "path": str(path)}, as_json):
            console.print(f"exported {n} records to {path}")


@app.command("import")
def import_(ctx: typer.Context, path: Annotated[Path, typer.Argument(help="A memstrata export.")],
            remap: Annotated[bool, typer.Option(help="Import into --tenant/--user (new ids).")]
            = False, as_json: Json = False) -> None:
    """Import an export (all lines checked first; one transaction)."""
    settings: Settings = ctx.obj
    if not path.exists():
        fail(f"{path} does not exist")
    with open_memory(settings) as mem, Progress(transient=True) as progress:
        progress.add_task(f"importing {path.name}", total=None)
        with path.open("r", encoding="utf-8", errors="strict") as fp:
            try:
                report = mem.import_records(fp, into=settings.scope() if remap else None)
            except UnicodeDecodeError as exc:
                fail(f"{path} is not valid UTF-8 ({exc.reason} at byte {exc.start}); nothing "
                     "was imported")
    data = {"imported": report.imported, "skipped": report.skipped,
            "reembedded": report.reembedded}
    if not emit(data, as_json):
        console.print(data)


@app.command()
def stats(ctx: typer.Context, as_json: Json = False) -> None:
    """Counts per type and status, jobs, models."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        data = mem.stats(settings.scope())
        if not emit(data, as_json):
            console.print(data)


@app.command()
def reembed(ctx: typer.Context, as_json: Json = False) -> None:
    """Re-embed the whole store with --embedder (model migration)."""
    settings: Settings = ctx.obj
    with open_memory(settings, reembed=True) as mem:
        data = {"embedding_model": mem.embedder.model_id, "dims": mem.embedder.dims}
        if not emit(data, as_json):
            console.print(f"store now uses {data['embedding_model']} ({data['dims']} dims)")


@app.command()
def demo(ctx: typer.Context, as_json: Json = False) -> None:
    """Store a multi-session conversation and answer searches from it (offline)."""
    from .demo import run_demo

    settings: Settings = ctx.obj
    run_demo(settings, as_json)


register_layer_commands(app)


def _mount_optional() -> None:
    try:
        from ..bench.cli import bench_app
    except ImportError:
        return
    app.add_typer(bench_app, name="bench", help="Benchmarks: LoCoMo recall and scale curves.")


_mount_optional()


def main() -> None:
    # The CLI owns its process: OpenMP threads of the embedding engine sleep when idle
    # instead of spinning, which kept the cores from the rest of ingest and from other
    # processes (`memstrata bench ingest`: ingest/raw 0.64 unset vs 0.96 PASSIVE, loaded
    # 2-core machine). A value the user set wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        app()
    except MemstrataError as exc:  # anything a command did not map itself
        fail(str(exc))
