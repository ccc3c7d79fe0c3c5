"""Working memory: the state of the current task (seed 000 L2).

One active ``TASK`` record per session holds the goal, the plan's steps (each with status
pending / in_progress / completed / failed and a result or error), scratchpad notes and an
iteration counter. Every change is a new version written against the version read
(optimistic locking), so concurrent writers get a ``ConflictError`` instead of a silent
overwrite. :func:`render` shows the task as the "Current Task State" block of the context.
When the task completes it is reflected on, archived as a task episode, taught to
procedural memory, and closed (kept, with its final status).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from memstrata._async.layers._build import build_record
from memstrata._async.layers.base import AsyncLayerContext
from memstrata._async.layers.episodic import AsyncEpisodeService
from memstrata._async.layers.procedural import AsyncProceduralService, new_records
from memstrata._async.layers.races import Raced, settled
from memstrata._async.store.base import RecordWrite
from memstrata.calls import checked_calls
from memstrata.errors import ConflictError, NotFoundError, ValidationError
from memstrata.filters import Filters, MetadataCondition
from memstrata.layers.working_types import (
    STEP_STATUS_ALIASES,
    StepStatus,
    TaskCompletion,
    _step,
    parse_step_status,
    render,
)
from memstrata.llm.base import TaskOutcome
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.records import MemoryRecord, RecordType, new_id
from memstrata.scope import Scope
from memstrata.store.types import ListQuery
from memstrata.text import validate_content
from memstrata.validation import check_bool, check_sequence, check_text
from memstrata.writes import check_owner, check_scope

__all__ = [
    "STEP_STATUS_ALIASES",
    "AsyncTaskService",
    "StepStatus",
    "TaskCompletion",
    "current_query",
    "parse_step_status",
    "render",
]


log = logging.getLogger(__name__)
_MAX_NOTES = 50  # the scratchpad keeps the newest notes; older ones stay in history
# Every task names its session here (``""``: started without one): ``start`` reads the id
# of the session's task inserted last by it (``Store.key_versions``), and again in its
# transaction.
_SESSION_FIELD = "task_session"
_MAX_ACTIVE = 1000  # active tasks of a session that one start closes (one, but for old races)


def _task_id() -> str:
    """A new task's id: random (uuid4's hex, as every other new record's), so no id a
    purge took is made again."""
    return "task-" + new_id()


def current_query(scope: Scope) -> ListQuery:
    """The store read behind ``current``: its first record is the session's active task
    (for a caller that folds it with other reads, ``Store.list_many``)."""
    active = (MetadataCondition("task_status", "eq", "active"),)
    return ListQuery(scope, Filters(types=frozenset({RecordType.TASK}), metadata=active), 10)


@checked_calls
class AsyncTaskService:
    def __init__(
        self,
        ctx: AsyncLayerContext,
        episodes: AsyncEpisodeService | None = None,
        procedures: AsyncProceduralService | None = None,
    ) -> None:
        self._ctx = ctx
        self._episodes = episodes or AsyncEpisodeService(ctx)
        self._procedures = procedures or AsyncProceduralService(ctx)
        self._fallback = HeuristicLLM()

    async def current(self, scope: Scope) -> MemoryRecord | None:
        """The session's active task, or ``None``."""
        q = current_query(check_scope(scope))
        found = await self._ctx.store.list(q.scope, q.filters, limit=q.limit)
        return found[0] if found else None

    async def _require(self, scope: Scope) -> MemoryRecord:
        """The active task, for a write to it (a caller's scope changes nothing)."""
        task = await self.current(check_owner(scope))
        if task is None:
            raise NotFoundError(f"no active task in {scope}; start one with tasks.start()")
        return task

    async def _write(
        self,
        scope: Scope,
        task: MemoryRecord,
        data: Mapping[str, Any],
        *,
        status: str | None = None,
    ) -> MemoryRecord:
        data = dict(data)
        if status is not None:
            data["status"] = status
        updated = replace(
            task,
            version=task.version + 1,
            updated_at=self._ctx.clock.now(),
            content=replace(task.content, raw=render(data), structured=data),
            metadata={**task.metadata, "task_status": data.get("status", "active")},
        )
        return await self._ctx.replace(scope, updated, expected_version=task.version, reindex=False)

    async def start(self, scope: Scope, goal: str, steps: Sequence[str] = ()) -> MemoryRecord:
        """Start a task; a task still active in this session is closed as ``abandoned``."""
        check_owner(scope)
        if not isinstance(goal, str) or not goal.strip():
            raise ValidationError("a task needs a non-empty goal")
        if isinstance(steps, str):
            raise ValidationError("steps must be a list of step descriptions, not one string")
        goal = validate_content(goal, field="goal")
        steps = [
            validate_content(s, field=f"steps[{i}]")
            for i, s in enumerate(check_sequence(steps, "steps"))
        ]
        data: dict[str, Any] = {
            "goal": goal.strip(),
            "steps": [_step(s) for s in steps],
            "notes": [],
            "iteration": 0,
            "status": "active",
            "tools": [],
            "started_at": self._ctx.clock.now().isoformat(),
        }
        session = scope.session or ""
        record = build_record(
            self._ctx,
            scope,
            render(data),
            type=RecordType.TASK,
            importance=0.5,
            structured=data,
            metadata={"task_status": "active", _SESSION_FIELD: session},
        )
        async with self._ctx.admit(scope, 1):  # refused: the previous task stays active
            (write,) = await self._ctx.writes([record])
            stored = await settled(
                lambda: self._start(scope, session, write),
                f"the tasks of session {session!r} were changed",
                "tasks.start",
            )
        return replace(record, id=stored.id)  # as given (the store holds it redacted)

    async def _start(self, scope: Scope, session: str, write: RecordWrite) -> MemoryRecord:
        """One read and one transaction of :meth:`start`: every task active in the session
        is closed as ``abandoned`` (a new version: its content and history are kept) and the
        new one inserted, all or nothing. ``Raced`` when another writer changed what was read.

        Two starts that read the session's tasks at the same moment would each close what
        they read and insert their own task: two active tasks. So each reads the id of the
        session's task inserted last before its other reads, and its transaction reads it
        again first (``UnitOfWork.key_versions``: one transaction of the session's starts
        at a time); another start committed since makes it another id, and this one reads
        again and closes the winner's task. The new task's id is random (:func:`_task_id`):
        until session 30 it was a hash of that newest id, which a purge of the newest task
        rewound, and the next start got the purged task's id again."""
        store = self._ctx.store
        seen = await store.key_versions(scope, RecordType.TASK, _SESSION_FIELD, session)
        q = current_query(scope)
        active = await store.list(q.scope, q.filters, limit=_MAX_ACTIVE)
        closes = []
        for previous in active:
            data = {**previous.content.structured, "status": "abandoned"}
            closed = replace(
                previous,
                version=previous.version + 1,
                updated_at=self._ctx.clock.now(),
                content=replace(previous.content, raw=render(data), structured=data),
                metadata={**previous.metadata, "task_status": "abandoned"},
            )
            closes.append((await self._ctx.version_write(closed, reindex=False), previous))
        new = replace(write, record=replace(write.record, id=_task_id()))
        try:
            async with store.transaction() as tx:
                now = await tx.key_versions(scope, RecordType.TASK, _SESSION_FIELD, session)
                if now.newest != seen.newest:
                    raise Raced  # another start (or a purge) changed the session's tasks
                for closing, previous in closes:
                    await tx.replace(scope, closing, expected_version=previous.version)
                await tx.insert([new])
        except (ConflictError, NotFoundError):
            raise Raced from None  # a task read was changed (closed, stepped) meanwhile
        return new.record

    async def update_step(
        self,
        scope: Scope,
        index: int,
        status: StepStatus | str,
        result: str | None = None,
        error: str | None = None,
    ) -> MemoryRecord:
        """Set step ``index`` (0-based) to ``status`` with its result or error."""
        result, error = (
            None if v is None else check_text(v, name, allow_empty=True)
            for v, name in ((result, "result"), (error, "error"))
        )
        task = await self._require(scope)
        data = dict(task.content.structured)
        steps = [dict(s) for s in data["steps"]]
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(steps):
            valid = f"0..{len(steps) - 1}" if steps else "none (the plan has no steps)"
            raise ValidationError(f"task step index {index!r} is out of range; valid: {valid}")
        new_status = parse_step_status(status)
        steps[index].update(
            status=new_status.value,
            result=result if result is not None else steps[index]["result"],
            error=error if error is not None else steps[index]["error"],
        )
        data["steps"] = steps
        return await self._write(scope, task, data)

    async def add_step(self, scope: Scope, description: str) -> MemoryRecord:
        description = validate_content(description, field="description")
        task = await self._require(scope)
        data = dict(task.content.structured)
        data["steps"] = [*data["steps"], _step(description)]
        return await self._write(scope, task, data)

    async def note(self, scope: Scope, text: str, *, tool: str | None = None) -> MemoryRecord:
        """Add a scratchpad note (and remember the tool that produced it, if any)."""
        text = validate_content(text, field="text")
        if tool is not None:
            tool = validate_content(tool, field="tool")
        task = await self._require(scope)
        data = dict(task.content.structured)
        data["notes"] = [*data["notes"], text][-_MAX_NOTES:]
        if tool and tool not in data.get("tools", []):
            data["tools"] = [*data.get("tools", []), tool]
        return await self._write(scope, task, data)

    async def next_iteration(self, scope: Scope) -> MemoryRecord:
        task = await self._require(scope)
        data = dict(task.content.structured)
        data["iteration"] = int(data["iteration"]) + 1
        return await self._write(scope, task, data)

    async def complete(
        self,
        scope: Scope,
        success: bool,
        outcome: str,
        feedback: str = "",
        *,
        strategy: str = "sequential",
    ) -> TaskCompletion:
        """Close the active task: reflect, archive an episode, update procedural patterns."""
        check_bool(success, "success")
        outcome = check_text(outcome, "outcome", allow_empty=True)
        feedback = check_text(feedback, "feedback", allow_empty=True)
        strategy = check_text(strategy, "strategy")
        task = await self._require(scope)
        data = task.content.structured
        # The provider sees the outcome and feedback: redacted first, like everything stored.
        outcome, feedback = (
            self._ctx.redact_query(scope, v) if isinstance(v, str) else v
            for v in (outcome, feedback)
        )
        outcome_in = TaskOutcome(
            goal=str(data["goal"]),
            steps=[s["description"] for s in data["steps"]],
            step_statuses=[str(s["status"]) for s in data["steps"]],
            outcome=outcome,
            success=success,
            feedback=feedback,
            tools=list(data.get("tools", [])),
        )
        try:
            reflection = await self._ctx.llm.reflect(outcome_in)
        except Exception as exc:  # a failing model degrades to the heuristic reflection
            log.warning("reflect failed (%s); using the heuristic reflection", exc)
            reflection = self._fallback.reflect(outcome_in)
        # Everything the completion adds (its episode, new patterns, the feedback episode) is
        # read and built first, then admitted at once: refused, the task stays active.
        episode = self._episodes.task_episode(scope, outcome_in, reflection, source_ids=(task.id,))
        lessons = await self._procedures.lessons(
            scope, outcome_in, reflection, strategy=strategy, source_ids=(task.id, episode.id)
        )
        said = (
            self._episodes.feedback_episode(scope, feedback, source_ids=(task.id,))
            if feedback.strip()
            else None
        )
        async with self._ctx.admit(scope, 1 + new_records(lessons) + (said is not None)):
            await self._ctx.insert([episode])
            patterns = await self._procedures.store_lessons(scope, lessons)
            closed = await self._write(
                scope,
                task,
                {
                    **data,
                    "outcome": outcome,
                    "feedback": feedback,
                    "success": success,
                    "episode_id": episode.id,
                    "closed_at": self._ctx.clock.now().isoformat(),
                },
                status="completed" if success else "failed",
            )
            if said is not None:
                await self._ctx.insert([said])
        return TaskCompletion(closed, reflection, episode, patterns)
