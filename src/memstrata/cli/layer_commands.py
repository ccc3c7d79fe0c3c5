"""CLI commands that show and drive the layers: context, key, task, layers, worker, end-session."""

from __future__ import annotations

import functools
import json
import logging
import signal
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .options import (
    DoneJobsDays,
    Settings,
    choice,
    command_done_jobs_days,
    console,
    emit,
    fail,
    open_memory,
)
from .resolve import resolve_id

if TYPE_CHECKING:
    from ..worker_types import RunReport

__all__ = ["register"]

Json = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]

key_app = typer.Typer(
    help="Key memory: the conversation's compass, always first in context.", no_args_is_help=True
)
task_app = typer.Typer(help="Working memory: the current task of a session.", no_args_is_help=True)


def record_to_dict(rec: Any) -> dict[str, Any]:
    from ..codec import record_to_dict as to_dict

    return to_dict(rec)


def context(
    ctx: typer.Context,
    query: Annotated[str | None, typer.Argument(help="Current input.")] = None,
    budget: Annotated[int, typer.Option(help="Token budget.")] = 4000,
    system: Annotated[str | None, typer.Option(help="System prompt.")] = None,
    as_json: Json = False,
) -> None:
    """Assemble the context an LLM would see for this scope and input."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        built = mem.build_context(settings.scope(), query, budget, system)
        data = {
            "tokens": built.tokens,
            "budget": budget,
            "usable": built.plan.usable,
            "messages": built.messages,
            "items": [
                {
                    "block": i.block,
                    "layer": i.layer,
                    "score": i.score,
                    "record_id": i.record_id,
                    "source_ids": list(i.source_ids),
                    "text": i.text,
                }
                for i in built.items
            ],
        }
        if emit(data, as_json):
            return
        for m in built.messages:
            console.rule(str(m["role"]))
            console.print(m["content"])
        console.rule()
        console.print(
            f"{built.tokens} / {built.plan.usable} tokens usable of {budget} "
            f"({len(built.items)} memories, {len(built.history)} recent turns)"
        )


@key_app.command("set")
def key_set(
    ctx: typer.Context,
    text: str,
    priority: Annotated[int, typer.Option(help="Higher comes first.")] = 0,
    as_json: Json = False,
) -> None:
    """Pin a key memory (user-set)."""
    settings: Settings = ctx.obj
    with open_memory(settings, create=True) as mem:
        rec = mem.key.set(settings.scope(), text, priority)
        if not emit(record_to_dict(rec), as_json):
            console.print(f"key memory {rec.id} set")


@key_app.command("list")
def key_list(ctx: typer.Context, as_json: Json = False) -> None:
    """Key memories in context order (user-set before auto-promoted)."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        recs = mem.key.list(settings.scope())
        if emit([record_to_dict(r) for r in recs], as_json):
            return
        from rich.table import Table
        from rich.text import Text

        from .output import SHORT_ID

        table = Table(title="key memory", title_justify="left")
        for col in ("id", "origin", "priority", "text"):
            table.add_column(col, overflow="fold")
        for r in recs:
            table.add_row(
                *(
                    Text(str(v))
                    for v in (
                        r.id[:SHORT_ID],
                        r.metadata.get("origin"),
                        r.metadata.get("priority", 0),
                        r.text,
                    )
                )
            )
        console.print(table)


@key_app.command("edit")
def key_edit(
    ctx: typer.Context,
    record_id: str,
    text: Annotated[str | None, typer.Option(help="New text.")] = None,
    priority: Annotated[int | None, typer.Option(help="New priority.")] = None,
    as_json: Json = False,
) -> None:
    """Edit a key memory (a new version)."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        scope = settings.scope()
        record_id = resolve_id(mem, scope, record_id)
        current = mem.key.get(scope, record_id)
        rec = mem.key.edit(
            scope, record_id, expected_version=current.version, text=text, priority=priority
        )
        if not emit(record_to_dict(rec), as_json):
            console.print(f"key memory {rec.id} is now version {rec.version}")


@key_app.command("remove")
def key_remove(ctx: typer.Context, record_id: str, as_json: Json = False) -> None:
    """Remove a key memory (soft delete, restorable)."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        scope = settings.scope()
        record_id = resolve_id(mem, scope, record_id)
        mem.key.remove(scope, record_id)
        if not emit({"removed": record_id}, as_json):
            console.print(f"key memory {record_id} removed")


def _task_out(rec: Any, as_json: bool) -> None:
    if not emit(record_to_dict(rec), as_json):
        console.print(task_text(rec.content.structured))


def task_text(data: Mapping[str, Any]) -> str:
    """The task block with its plan numbered as ``memstrata task step`` takes a step: from 0,
    the step's index in the record's ``steps`` (the library's ``update_step`` and the HTTP
    API's ``.../task/steps/{index}`` take the same). Until session 29 it showed the context's
    block, numbered from 1 for a model, so ``task step 1`` after "1. [ ] a" set the second
    step; the numbers shown changed rather than the argument, which scripts pass."""
    from ..layers.working import render as render_task

    steps = data.get("steps", [])
    notes = data.get("notes", [])
    lines = [render_task({**data, "steps": [], "notes": []})]
    if steps:
        lines.append("Plan (step numbers as `memstrata task step` takes them):")
        for i, step in enumerate(steps):  # each step's mark, result and error as the block's
            shown = render_task({"steps": [step]}).split("\nPlan:\n1. ", 1)[1]
            lines.append(f"{i}. {shown}")
    if notes:
        lines.append("Scratchpad:")
        lines.extend(f"- {note}" for note in notes)
    return "\n".join(lines)


@task_app.command("start")
def task_start(
    ctx: typer.Context,
    goal: str,
    step: Annotated[list[str] | None, typer.Option(help="A plan step (repeat).")] = None,
    as_json: Json = False,
) -> None:
    """Start a task in the session (needs --session)."""
    settings: Settings = ctx.obj
    with open_memory(settings, create=True) as mem:
        _task_out(mem.tasks.start(_session_scope(settings), goal, step or []), as_json)


@task_app.command("step")
def task_step(
    ctx: typer.Context,
    index: Annotated[
        int,
        typer.Argument(help="The step's number as `task show` shows it: from 0 (the first is 0)."),
    ],
    status: Annotated[
        str,
        typer.Argument(
            help="pending, in_progress, completed or failed (also: todo, doing, done, fail, ...)."
        ),
    ],
    result: Annotated[str | None, typer.Option(help="Step result.")] = None,
    error: Annotated[str | None, typer.Option(help="Step error.")] = None,
    as_json: Json = False,
) -> None:
    """Set a step's status: pending, in_progress, completed or failed."""
    from ..layers.working import STEP_STATUS_ALIASES, StepStatus

    settings: Settings = ctx.obj
    status = choice(status, [s.value for s in StepStatus], "step status", dict(STEP_STATUS_ALIASES))
    with open_memory(settings) as mem:
        rec = mem.tasks.update_step(
            _session_scope(settings), index, status, result=result, error=error
        )
        _task_out(rec, as_json)


@task_app.command("note")
def task_note(ctx: typer.Context, text: str, as_json: Json = False) -> None:
    """Add a scratchpad note to the current task."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        _task_out(mem.tasks.note(_session_scope(settings), text), as_json)


@task_app.command("show")
def task_show(ctx: typer.Context, as_json: Json = False) -> None:
    """Show the session's current task state."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        rec = mem.tasks.current(_session_scope(settings))
        if rec is None:
            fail("no active task in this session; start one with `memstrata task start`")
        _task_out(rec, as_json)


@task_app.command("complete")
def task_complete(
    ctx: typer.Context,
    outcome: Annotated[str, typer.Argument(help="What came of it.")],
    failed: Annotated[bool, typer.Option("--failed", help="It failed.")] = False,
    feedback: Annotated[str, typer.Option(help="User feedback.")] = "",
    as_json: Json = False,
) -> None:
    """End the task: reflection, episode, procedural patterns."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        done = mem.tasks.complete(_session_scope(settings), not failed, outcome, feedback)
        data = {
            "task": record_to_dict(done.task),
            "episode": record_to_dict(done.episode),
            "lessons": done.reflection.lessons,
        }
        if emit(data, as_json):
            return
        console.print(f"task {'failed' if failed else 'completed'}; episode {done.episode.id}")
        console.print(done.reflection.summary)
        for lesson in done.reflection.lessons:
            console.print(f"- {lesson}")


def _session_scope(settings: Settings) -> Any:
    scope = settings.scope()
    if scope.session is None:
        fail("this command needs --session (tasks live in a session)")
    return scope


# The README's layers, in its order, and the record types each holds.
README_LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("short-term", ("message",)),
    ("working", ("task",)),
    ("mid-term", ("cluster",)),
    ("summaries", ("summary",)),
    ("episodic", ("episode",)),
    ("semantic", ("fact", "knowledge", "note")),
    ("key", ("key",)),
    ("procedural", ("procedure",)),
)


def layers(
    ctx: typer.Context,
    limit: Annotated[
        int, typer.Option(min=0, max=100_000, help="Newest records shown per layer (0: none).")
    ] = 5,
    as_json: Json = False,
) -> None:
    """What each layer holds for the scope (counts, and a preview of the newest records)."""
    from ..filters import Filters
    from ..records import RecordType

    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        scope = settings.scope()
        data: dict[str, Any] = {}
        for name, types in README_LAYERS:
            by_type = {
                t: mem.store.count(scope, Filters(types=frozenset({RecordType(t)}))) for t in types
            }
            n = sum(by_type.values())
            if not n:
                continue
            flt = Filters(types=frozenset(RecordType(t) for t in types))
            newest = mem.store.list(scope, flt, limit=limit) if limit > 0 else []
            data[name] = {
                "count": n,
                "by_type": {t: c for t, c in by_type.items() if c},
                "shown": len(newest),
                "newest": [r.text[:160] for r in newest],
            }
        if scope.session:
            window = len(mem.layers.short_term.window(scope))
            data.setdefault("short-term", {"count": 0, "by_type": {}, "shown": 0, "newest": []})[
                "window"
            ] = window
        if emit(data, as_json):
            return
        if not data:
            console.print(f"nothing stored in {scope}")
        for name, info in data.items():
            kinds = ", ".join(f"{t} {c}" for t, c in info["by_type"].items())
            head = f"{name}: {info['count']} record{'s' if info['count'] != 1 else ''}"
            if kinds and len(info["by_type"]) > 1:
                head += f" ({kinds})"
            if "window" in info:
                head += f"; {info['window']} turns in the session's window"
            if info["shown"] < info["count"]:
                head += f" — newest {info['shown']} shown"
            console.rule(head)
            for text in info["newest"]:  # every line of a record indented under its layer
                console.print("  " + text.replace("\n", "\n  "))


def worker(
    ctx: typer.Context,
    once: Annotated[bool, typer.Option(help="Run what is queued, then exit.")] = False,
    poll: Annotated[float, typer.Option(help="Seconds between polls.")] = 1.0,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No line per run (run continuously).")
    ] = False,
    as_json: Json = False,
    done_jobs: DoneJobsDays = None,
) -> None:
    """Run background jobs (summaries, extraction, clustering, promotion) continuously:
    one line per run that claimed jobs (its time and counts; with --json, a JSON object),
    nothing for polls that found none."""
    settings: Settings = command_done_jobs_days(ctx.obj, done_jobs)
    with open_memory(settings, background=False) as mem:
        if once:
            from .output import report_table, run_report_data

            data = run_report_data(mem.flush())
            if not emit(data, as_json):
                console.print(report_table("background jobs run", data))
            return
        stopping = {"now": False}

        def stop(*_: object) -> None:
            stopping["now"] = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        _warnings_on_stderr()
        _start_line(settings, poll).write(as_json=False)  # stderr: stdout has the runs
        mem.run_worker(
            poll_seconds=poll,
            stop=lambda: stopping["now"],
            on_run=None if quiet else functools.partial(_run_line, as_json=as_json),
        )


def _start_line(settings: Settings, poll: float) -> Any:
    """``memstrata worker``'s start line: the fields of the servers' (start_line.py)."""
    from ..store.vector_bound import VECTOR_CACHE_ROWS
    from .start_line import StartLine

    return StartLine(
        "worker",
        url=settings.url,
        listen="none",
        listen_text=f"no address, polls every {poll:g} s (Ctrl-C to stop)",
        workers=1,
        done_jobs_days=settings.done_jobs_retention(),
        vector_cache_rows=settings.vector_cache_rows or VECTOR_CACHE_ROWS,
    )


def _warnings_on_stderr() -> None:
    """The worker's warnings (the store not answering and answering again, a lease lost)
    on stderr, as a daemon's log, unless ``-v`` already shows the library's log there: the
    CLI otherwise hides it, and a worker waiting for its store said nothing."""
    lib, worker = logging.getLogger("memstrata"), logging.getLogger("memstrata.worker")
    if any(not isinstance(h, logging.NullHandler) for h in lib.handlers):
        return
    if any(h.get_name() == _WORKER_STDERR for h in worker.handlers):
        return  # a second `worker` command in this process (tests, an embedding program)
    handler = _Stderr()
    handler.set_name(_WORKER_STDERR)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.WARNING)
    worker.addHandler(handler)


_WORKER_STDERR = "memstrata-worker-stderr"


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler writing to ``sys.stderr`` as it is at each record (as logging's own last
    resort does): a program that runs the CLI in-process swaps it between commands."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def _run_line(report: RunReport, *, as_json: bool) -> None:
    """One run of ``memstrata worker``, on one line (flushed: a log reads it at once):
    when it ended, then what ``--once`` reports, counts that are 0 beside ``claimed``,
    ``done``, ``retried`` and ``failed`` left out; errors last."""
    from datetime import UTC, datetime

    from .output import run_report_data

    data = run_report_data(report)
    at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    if as_json:
        line = json.dumps({"at": at, **data}, ensure_ascii=False, default=str)
    else:
        always = ("claimed", "done", "retried", "failed")
        counts = ", ".join(
            f"{k.replace('_', ' ')} {v}"
            for k, v in data.items()
            if k != "errors" and (k in always or v)
        )
        line = f"{at} jobs run: {counts}"
        if report.errors:
            line += "; errors: " + " | ".join(" ".join(e.split()) for e in report.errors)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def end_session(ctx: typer.Context, as_json: Json = False) -> None:
    """End --session: final summary, conversation episode, clustering."""
    settings: Settings = ctx.obj
    with open_memory(settings, background=False) as mem:
        scope = _session_scope(settings)
        from .output import report_table, run_report_data

        data = run_report_data(mem.end_session(scope))
        if not emit(data, as_json):
            console.print(report_table(f"session {scope.session} ended: jobs", data))


def register(app: typer.Typer) -> None:
    app.command()(context)
    app.command()(layers)
    app.command()(worker)
    app.command("end-session")(end_session)
    app.add_typer(key_app, name="key")
    app.add_typer(task_app, name="task")
