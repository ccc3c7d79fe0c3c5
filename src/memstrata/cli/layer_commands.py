"""CLI commands that show and drive the layers: context, key, task, layers, worker, end-session."""

from __future__ import annotations

import signal
from typing import Annotated, Any

import typer
from rich.table import Table

from ..codec import record_to_dict
from ..filters import Filters
from ..layers.working import render as render_task
from ..records import RecordType
from .options import Settings, console, emit, fail, open_memory

__all__ = ["register"]

Json = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]

key_app = typer.Typer(help="Key memory: the conversation's compass, always first in context.",
                      no_args_is_help=True)
task_app = typer.Typer(help="Working memory: the current task of a session.",
                       no_args_is_help=True)


def context(ctx: typer.Context, query: Annotated[str | None, typer.Argument(help="Current "
                                                                            "input.")] = None,
            budget: Annotated[int, typer.Option(help="Token budget.")] = 4000,
            system: Annotated[str | None, typer.Option(help="System prompt.")] = None,
            as_json: Json = False) -> None:
    """Assemble the context an LLM would see for this scope and input."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        built = mem.build_context(settings.scope(), query, budget, system)
        data = {"tokens": built.tokens, "budget": budget, "usable": built.plan.usable,
                "messages": built.messages,
                "items": [{"block": i.block, "layer": i.layer, "score": i.score,
                           "record_id": i.record_id, "source_ids": list(i.source_ids),
                           "text": i.text} for i in built.items]}
        if emit(data, as_json):
            return
        for m in built.messages:
            console.rule(f"[bold]{m['role']}")
            console.print(m["content"], highlight=False)
        console.rule()
        console.print(f"{built.tokens} / {built.plan.usable} tokens usable of {budget} "
                      f"({len(built.items)} memories, {len(built.history)} recent turns)")


@key_app.command("set")
def key_set(ctx: typer.Context, text: str,
            priority: Annotated[int, typer.Option(help="Higher comes first.")] = 0,
            as_json: Json = False) -> None:
    """Pin a key memory (user-set)."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
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
        table = Table(title="key memory")
        for col in ("id", "origin", "priority", "text"):
            table.add_column(col, overflow="fold")
        for r in recs:
            table.add_row(r.id[:12], str(r.metadata.get("origin")),
                          str(r.metadata.get("priority", 0)), r.text)
        console.print(table)


@key_app.command("edit")
def key_edit(ctx: typer.Context, record_id: str,
             text: Annotated[str | None, typer.Option(help="New text.")] = None,
             priority: Annotated[int | None, typer.Option(help="New priority.")] = None,
             as_json: Json = False) -> None:
    """Edit a key memory (a new version)."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        scope = settings.scope()
        current = mem.key.get(scope, record_id)
        rec = mem.key.edit(scope, record_id, expected_version=current.version, text=text,
                           priority=priority)
        if not emit(record_to_dict(rec), as_json):
            console.print(f"key memory {rec.id} is now version {rec.version}")


@key_app.command("remove")
def key_remove(ctx: typer.Context, record_id: str, as_json: Json = False) -> None:
    """Remove a key memory (soft delete, restorable)."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        mem.key.remove(settings.scope(), record_id)
        if not emit({"removed": record_id}, as_json):
            console.print(f"key memory {record_id} removed")


def _task_out(rec: Any, as_json: bool) -> None:
    if not emit(record_to_dict(rec), as_json):
        console.print(render_task(rec), highlight=False)


@task_app.command("start")
def task_start(ctx: typer.Context, goal: str,
               step: Annotated[list[str] | None, typer.Option(help="A plan step (repeat).")]
               = None, as_json: Json = False) -> None:
    """Start a task in the session (needs --session)."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        _task_out(mem.tasks.start(_session_scope(settings), goal, step or []), as_json)


@task_app.command("step")
def task_step(ctx: typer.Context, index: int, status: str,
              result: Annotated[str | None, typer.Option(help="Step result.")] = None,
              error: Annotated[str | None, typer.Option(help="Step error.")] = None,
              as_json: Json = False) -> None:
    """Set a step's status: pending, in_progress, completed or failed."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        rec = mem.tasks.update_step(_session_scope(settings), index, status, result=result,
                                    error=error)
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
def task_complete(ctx: typer.Context,
                  outcome: Annotated[str, typer.Argument(help="What came of it.")],
                  failed: Annotated[bool, typer.Option("--failed", help="It failed.")] = False,
                  feedback: Annotated[str, typer.Option(help="User feedback.")] = "",
                  as_json: Json = False) -> None:
    """End the task: reflection, episode, procedural patterns."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        done = mem.tasks.complete(_session_scope(settings), not failed, outcome, feedback)
        data = {"task": record_to_dict(done.task), "episode": record_to_dict(done.episode),
                "lessons": done.reflection.lessons}
        if not emit(data, as_json):
            console.print(f"task closed; episode {done.episode.id}; lessons: "
                          f"{done.reflection.lessons}")


def _session_scope(settings: Settings) -> Any:
    scope = settings.scope()
    if scope.session is None:
        fail("this command needs --session (tasks live in a session)")
    return scope


def layers(ctx: typer.Context, limit: Annotated[int, typer.Option(help="Rows per layer.")] = 5,
           as_json: Json = False) -> None:
    """What each layer holds for the scope."""
    settings: Settings = ctx.obj
    with open_memory(settings) as mem:
        scope = settings.scope()
        data: dict[str, Any] = {}
        for rtype in RecordType:
            flt = Filters(types=frozenset({rtype}))
            n = mem.store.count(scope, flt)
            if n:
                newest = mem.store.list(scope, flt, limit=limit)
                data[rtype.value] = {"count": n, "newest": [r.text[:160] for r in newest]}
        if scope.session:
            data["short_term_window"] = len(mem.layers.short_term.window(scope))
        if emit(data, as_json):
            return
        for name, info in data.items():
            if isinstance(info, dict):
                console.rule(f"[bold]{name}[/bold] ({info['count']})")
                for line in info["newest"]:
                    console.print(f"  {line}", highlight=False)
            else:
                console.print(f"{name}: {info}")


def worker(ctx: typer.Context,
           once: Annotated[bool, typer.Option(help="Run what is queued, then exit.")] = False,
           poll: Annotated[float, typer.Option(help="Seconds between polls.")] = 1.0,
           as_json: Json = False) -> None:
    """Run background jobs (summaries, extraction, clustering, promotion) continuously."""
    settings: Settings = ctx.obj
    with open_memory(settings, background=False) as mem:
        if once:
            report = mem.flush()
            data = {"done": report.done, "retried": report.retried, "failed": report.failed,
                    "errors": report.errors}
            if not emit(data, as_json):
                console.print(data)
            return
        stopping = {"now": False}

        def stop(*_: object) -> None:
            stopping["now"] = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        console.print(f"worker running on {settings.url} (Ctrl-C to stop)")
        mem.run_worker(poll_seconds=poll, stop=lambda: stopping["now"])


def end_session(ctx: typer.Context, as_json: Json = False) -> None:
    """End --session: final summary, conversation episode, clustering."""
    settings: Settings = ctx.obj
    with open_memory(settings, background=False) as mem:
        report = mem.end_session(_session_scope(settings))
        data = {"done": report.done, "retried": report.retried, "failed": report.failed}
        if not emit(data, as_json):
            console.print(data)


def register(app: typer.Typer) -> None:
    app.command()(context)
    app.command()(layers)
    app.command()(worker)
    app.command("end-session")(end_session)
    app.add_typer(key_app, name="key")
    app.add_typer(task_app, name="task")
