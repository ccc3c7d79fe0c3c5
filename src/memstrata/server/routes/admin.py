"""Introspection: the calling key, stats, jobs, and every layer of a user (the inspector)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request

from ..auth import CallerDep, UserPath, require_admin
from ..dto import JobOut, Jobs, LayersOut, RunReportOut, Stats, WhoAmI
from ..errors import ERROR_RESPONSES, ApiError
from ..state import state_of
from ..strict_json import StrictJSONRoute

router = APIRouter(route_class=StrictJSONRoute, tags=["introspection"], responses=ERROR_RESPONSES)


@router.get("/v1/whoami", response_model=WhoAmI, summary="The calling key's tenant and role")
async def whoami(caller: CallerDep) -> WhoAmI:
    return WhoAmI(
        key_id=caller.key.id,
        tenant=caller.tenant,
        role=caller.key.role.value,
        user=caller.key.user,
        roles=sorted(caller.key.roles),
    )


@router.get("/v1/users/{user}/stats", response_model=Stats, summary="Counts, jobs, models")
async def stats(request: Request, user: UserPath, caller: CallerDep) -> Stats:
    return Stats.model_validate(await state_of(request.app).backend.stats(caller.scope(user)))


@router.get("/v1/users/{user}/jobs", response_model=Jobs, summary="The user's background jobs")
async def jobs(
    request: Request,
    user: UserPath,
    caller: CallerDep,
    status: Literal["pending", "running", "done", "failed"] | None = None,
) -> Jobs:
    scope = caller.scope(user)
    if scope.caller is not None:  # the owner's operations, never shared (until session 27 read)
        raise ApiError(
            403,
            "forbidden",
            f"the jobs of {user!r} are {user!r}'s own: this key belongs to user "
            f"{scope.caller!r}, which reads only the records {user!r} shared with it; use "
            f"{user!r}'s own key or a service key (created without --for-user)",
        )
    found = await state_of(request.app).backend.jobs(scope, status)
    return Jobs(jobs=[JobOut.of(j) for j in found])


@router.post(
    "/v1/users/{user}/jobs/run",
    response_model=RunReportOut,
    summary="Run the user's queued jobs now (admin)",
)
async def run_jobs(request: Request, user: UserPath, caller: CallerDep) -> RunReportOut:
    require_admin(caller, "running jobs")
    report = await state_of(request.app).backend.run_jobs(caller.owner_scope(user))
    return RunReportOut.of(report)


@router.get(
    "/v1/users/{user}/layers",
    response_model=LayersOut,
    summary="What every layer holds for the user (the inspector's view)",
)
async def layers(
    request: Request,
    user: UserPath,
    caller: CallerDep,
    session: Annotated[str | None, Query(min_length=1, max_length=256)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> LayersOut:
    view = await state_of(request.app).backend.layers(caller.scope(user, session=session), limit)
    return LayersOut.of(view)
