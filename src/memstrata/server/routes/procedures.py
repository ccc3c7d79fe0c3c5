"""Procedural memory: a proven plan to reuse, warnings from failure patterns, new patterns.

Decomposition patterns are learned when a task completes (``.../task/complete``); failure
patterns too, and an operator may add one here."""

from __future__ import annotations

from fastapi import APIRouter, Request

from ..auth import CallerDep, UserPath
from ..dto import (
    FailurePatternIn,
    FailureWarningOut,
    RecordOut,
    SuggestIn,
    SuggestionOut,
    SuggestOut,
    WarningsIn,
    WarningsOut,
)
from ..errors import ERROR_RESPONSES
from ..state import state_of
from ..strict_json import StrictJSONRoute

router = APIRouter(
    route_class=StrictJSONRoute,
    prefix="/v1/users/{user}/procedures",
    tags=["procedures"],
    responses=ERROR_RESPONSES,
)


@router.post(
    "/suggest",
    response_model=SuggestOut,
    summary="A proven decomposition for a task like this one (similar and reliable)",
)
async def suggest(
    request: Request, user: UserPath, body: SuggestIn, caller: CallerDep
) -> SuggestOut:
    found = await state_of(request.app).backend.suggest_procedure(caller.scope(user), body.query)
    return SuggestOut(suggestion=SuggestionOut.of(found) if found is not None else None)


@router.post(
    "/warnings",
    response_model=WarningsOut,
    summary="Failure patterns whose indicators occur in a text, most severe first",
)
async def warnings(
    request: Request, user: UserPath, body: WarningsIn, caller: CallerDep
) -> WarningsOut:
    found = await state_of(request.app).backend.failure_warnings(
        caller.scope(user), body.text, body.limit
    )
    return WarningsOut(warnings=[FailureWarningOut.of(w) for w in found])


@router.post(
    "/failures",
    status_code=201,
    response_model=RecordOut,
    summary="Add a failure pattern (indicators, mitigation, severity 1-5)",
)
async def add_failure(
    request: Request, user: UserPath, body: FailurePatternIn, caller: CallerDep
) -> RecordOut:
    rec = await state_of(request.app).backend.add_failure_pattern(
        caller.owner_scope(user), body.pattern, body.indicators, body.mitigation, body.severity
    )
    return RecordOut.of(rec)
