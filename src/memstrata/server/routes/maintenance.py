"""Maintenance of one user's memory: forget records, a maintenance pass, importance by tag.

``forget`` and ``importance-by-tag`` change records the way a member may change them one by
one (a soft delete, restorable; a new version); a maintenance pass may purge for real
(retention), so it needs an admin key unless it is a dry run, which changes nothing."""

from __future__ import annotations

from fastapi import APIRouter, Request

from ..auth import CallerDep, UserPath, require_admin
from ..dto import (
    ForgetIn,
    ForgetOut,
    ImportanceByTagIn,
    LogEntryOut,
    MaintainIn,
    MaintenanceOut,
    RecordOut,
    Records,
)
from ..errors import ERROR_RESPONSES
from ..state import state_of
from ..strict_json import StrictJSONRoute

router = APIRouter(
    route_class=StrictJSONRoute,
    prefix="/v1/users/{user}",
    tags=["maintenance"],
    responses=ERROR_RESPONSES,
)


@router.post(
    "/forget",
    response_model=ForgetOut,
    summary="Forget records: soft delete with a log entry and an audit event (restorable)",
)
async def forget(request: Request, user: UserPath, body: ForgetIn, caller: CallerDep) -> ForgetOut:
    entries = await state_of(request.app).backend.forget(
        caller.owner_scope(user), body.ids, reason=body.reason, actor=caller.actor
    )
    return ForgetOut(forgotten=[LogEntryOut.of(e) for e in entries])


@router.post(
    "/maintain",
    response_model=MaintenanceOut,
    summary="A maintenance pass: forgetting policy, decay, retention, consolidation "
    "(admin; a dry run needs none)",
)
async def maintain(
    request: Request, user: UserPath, body: MaintainIn, caller: CallerDep
) -> MaintenanceOut:
    if not body.dry_run:
        require_admin(caller, "maintain without dry_run (it may purge by retention)")
    report = await state_of(request.app).backend.maintain(
        caller.owner_scope(user),
        policy=body.policy,
        dry_run=body.dry_run,
        consolidate=body.consolidate,
        actor=caller.actor,
        now=body.now,
    )
    return MaintenanceOut.of(report)


@router.post(
    "/importance-by-tag",
    response_model=Records,
    summary="Set the importance of every current record with a tag (a new version each)",
)
async def importance_by_tag(
    request: Request, user: UserPath, body: ImportanceByTagIn, caller: CallerDep
) -> Records:
    updated = await state_of(request.app).backend.set_importance_by_tag(
        caller.owner_scope(user), body.tag, body.importance, actor=caller.actor
    )
    return Records(records=[RecordOut.of(r) for r in updated])
