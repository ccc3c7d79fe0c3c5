"""A session: its messages (single and batch), its end, and its task (working memory)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response

from ...records import Message, Role
from ..answers import JsonAnswer, record_body, records_body
from ..auth import CallerDep, UserPath
from ..dto import (
    MessageBatchIn,
    MessageIn,
    RecordOut,
    Records,
    RunReportOut,
    TaskCompleteIn,
    TaskDone,
    TaskIn,
    TaskNoteIn,
    TaskStepIn,
)
from ..errors import ERROR_RESPONSES, ApiError
from ..paths import IdPath
from ..state import state_of
from ..strict_json import StrictJSONRoute

router = APIRouter(
    route_class=StrictJSONRoute,
    prefix="/v1/users/{user}/sessions/{session}",
    tags=["sessions"],
    responses=ERROR_RESPONSES,
)

SessionPath = IdPath
AgentQuery = Annotated[
    str | None, Query(min_length=1, max_length=256, description="The agent writing (optional)")
]


def _message(m: MessageIn) -> Message:
    return Message(
        role=Role(m.role), content=m.content, observed_at=m.observed_at, metadata=m.metadata
    )


@router.post(
    "/messages", status_code=201, response_model=RecordOut, summary="Store one conversational turn"
)
async def add_message(
    request: Request,
    user: UserPath,
    session: SessionPath,
    body: MessageIn,
    caller: CallerDep,
    agent: AgentQuery = None,
) -> Response:
    scope = caller.owner_scope(user, session=session, agent=agent)
    records = await state_of(request.app).backend.add_messages(scope, [_message(body)])
    return JsonAnswer(record_body(records[0]), status_code=201)


@router.post(
    "/messages/batch",
    status_code=201,
    response_model=Records,
    summary="Store many turns in one transaction (all or nothing)",
)
async def add_messages(
    request: Request,
    user: UserPath,
    session: SessionPath,
    body: MessageBatchIn,
    caller: CallerDep,
    agent: AgentQuery = None,
) -> Response:
    scope = caller.owner_scope(user, session=session, agent=agent)
    records = await state_of(request.app).backend.add_messages(
        scope, [_message(m) for m in body.messages]
    )
    return JsonAnswer(records_body(records), status_code=201)


@router.post(
    "/end",
    response_model=RunReportOut,
    summary="End the session: final summary, episode, clustering",
)
async def end_session(
    request: Request, user: UserPath, session: SessionPath, caller: CallerDep
) -> RunReportOut:
    report = await state_of(request.app).backend.end_session(
        caller.owner_scope(user, session=session)
    )
    return RunReportOut.of(report)


@router.get("/task", response_model=RecordOut, summary="The session's active task (404: none)")
async def current_task(
    request: Request, user: UserPath, session: SessionPath, caller: CallerDep
) -> RecordOut:
    task = await state_of(request.app).backend.task_current(caller.scope(user, session=session))
    if task is None:
        raise ApiError(
            404, "not_found", f"no active task in session {session!r}; start one with POST .../task"
        )
    return RecordOut.of(task)


@router.post(
    "/task",
    status_code=201,
    response_model=RecordOut,
    summary="Start a task (an active one is closed as abandoned)",
)
async def start_task(
    request: Request, user: UserPath, session: SessionPath, body: TaskIn, caller: CallerDep
) -> RecordOut:
    rec = await state_of(request.app).backend.task_start(
        caller.owner_scope(user, session=session), body.goal, body.steps
    )
    return RecordOut.of(rec)


@router.post("/task/steps/{index}", response_model=RecordOut, summary="Set a step's status")
async def task_step(
    request: Request,
    user: UserPath,
    session: SessionPath,
    index: Annotated[int, Path(ge=0, le=10_000)],
    body: TaskStepIn,
    caller: CallerDep,
) -> RecordOut:
    rec = await state_of(request.app).backend.task_step(
        caller.owner_scope(user, session=session), index, body.status, body.result, body.error
    )
    return RecordOut.of(rec)


@router.post("/task/notes", response_model=RecordOut, summary="Add a scratchpad note")
async def task_note(
    request: Request, user: UserPath, session: SessionPath, body: TaskNoteIn, caller: CallerDep
) -> RecordOut:
    rec = await state_of(request.app).backend.task_note(
        caller.owner_scope(user, session=session), body.text, body.tool
    )
    return RecordOut.of(rec)


@router.post(
    "/task/complete",
    response_model=TaskDone,
    summary="Close the task: reflection, episode, procedures",
)
async def task_complete(
    request: Request, user: UserPath, session: SessionPath, body: TaskCompleteIn, caller: CallerDep
) -> TaskDone:
    done = await state_of(request.app).backend.task_complete(
        caller.owner_scope(user, session=session), body.success, body.outcome, body.feedback
    )
    return TaskDone(
        task=RecordOut.of(done.task),
        episode=RecordOut.of(done.episode),
        lessons=list(done.reflection.lessons),
    )
