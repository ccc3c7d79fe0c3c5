"""Key memory: what always comes first in the context."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from ..auth import CallerDep, UserPath
from ..dto import KeyMemoryIn, KeyMemoryPatch, RecordOut, Records
from ..errors import ERROR_RESPONSES
from ..paths import IdPath
from ..state import state_of
from ..strict_json import StrictJSONRoute

router = APIRouter(
    route_class=StrictJSONRoute,
    prefix="/v1/users/{user}/key-memory",
    tags=["key memory"],
    responses=ERROR_RESPONSES,
)


@router.get("", response_model=Records, summary="Key memories in context order")
async def list_key(request: Request, user: UserPath, caller: CallerDep) -> Records:
    recs = await state_of(request.app).backend.key_list(caller.scope(user))
    return Records(records=[RecordOut.of(r) for r in recs])


@router.post("", status_code=201, response_model=RecordOut, summary="Pin a key memory")
async def set_key(
    request: Request, user: UserPath, body: KeyMemoryIn, caller: CallerDep
) -> RecordOut:
    rec = await state_of(request.app).backend.key_set(
        caller.owner_scope(user), body.text, body.priority
    )
    return RecordOut.of(rec)


@router.patch("/{record_id}", response_model=RecordOut, summary="Edit a key memory")
async def edit_key(
    request: Request, user: UserPath, record_id: IdPath, body: KeyMemoryPatch, caller: CallerDep
) -> RecordOut:
    rec = await state_of(request.app).backend.key_edit(
        caller.owner_scope(user),
        record_id,
        expected_version=body.expected_version,
        text=body.text,
        priority=body.priority,
    )
    return RecordOut.of(rec)


@router.delete(
    "/{record_id}",
    status_code=204,
    response_class=Response,
    summary="Remove a key memory (soft delete)",
)
async def remove_key(
    request: Request, user: UserPath, record_id: IdPath, caller: CallerDep
) -> Response:
    await state_of(request.app).backend.key_remove(caller.owner_scope(user), record_id)
    return Response(status_code=204)
