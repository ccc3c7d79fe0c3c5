"""Memories: add, get, list (paginated), update (optimistic), delete, restore, purge, history."""

from __future__ import annotations

from typing import Annotated

import anyio.to_thread
from fastapi import APIRouter, Query, Request, Response

from ...filters import Filters
from ...records import RecordType
from ..answers import JsonAnswer, record_body, records_body
from ..auth import CallerDep, UserPath, require_admin
from ..dto import AccessIn, MemoryIn, MemoryPatch, PurgeIn, PurgeOut, RecordList, RecordOut, Records
from ..errors import ERROR_RESPONSES, ApiError
from ..paths import IdPath
from ..state import state_of
from ..strict_json import StrictJSONRoute

router = APIRouter(
    route_class=StrictJSONRoute,
    prefix="/v1/users/{user}",
    tags=["memories"],
    responses=ERROR_RESPONSES,
)

RecordId = Annotated[str, Query(min_length=1, max_length=256)]


@router.post(
    "/memories",
    status_code=201,
    response_model=RecordOut,
    summary="Store a memory (deduplicated unless dedup=false)",
)
async def add_memory(
    request: Request, user: UserPath, body: MemoryIn, caller: CallerDep
) -> Response:
    scope = caller.owner_scope(user, session=body.session, agent=body.agent)
    rec = await state_of(request.app).backend.add(
        scope,
        body.content,
        type=body.type,
        importance=body.importance,
        confidence=body.confidence,
        tags=body.tags,
        metadata=body.metadata,
        source=body.source,
        observed_at=body.observed_at,
        visibility=body.visibility,
        source_ids=body.source_ids,
        dedup=body.dedup,
    )
    return JsonAnswer(record_body(rec), status_code=201)


@router.get("/memories", response_model=RecordList, summary="List records, newest first")
async def list_memories(
    request: Request,
    user: UserPath,
    caller: CallerDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    type: Annotated[list[RecordType] | None, Query(description="Only these types")] = None,
    tag: Annotated[
        list[Annotated[str, Query(min_length=1, max_length=256)]] | None,
        Query(description="Any of these tags"),
    ] = None,
    session: Annotated[str | None, Query(min_length=1, max_length=256)] = None,
    agent: Annotated[str | None, Query(min_length=1, max_length=256)] = None,
    include_deleted: bool = False,
    newest_first: bool = True,
) -> Response:
    scope = caller.scope(user, session=session, agent=agent)
    filters = Filters(
        types=frozenset(type) if type else None,
        tags_any=frozenset(tag) if tag else None,
        include_deleted=include_deleted,
    )
    items, total = await state_of(request.app).backend.list_records(
        scope, filters, limit=limit, offset=offset, newest_first=newest_first
    )
    nxt = offset + len(items)
    return JsonAnswer(
        {
            "items": [record_body(r) for r in items],
            "total": total,
            "limit": limit,
            "offset": offset,
            "next_offset": nxt if nxt < total else None,
        }
    )


@router.get("/memories/{record_id}", response_model=RecordOut, summary="One record")
async def get_memory(
    request: Request,
    user: UserPath,
    record_id: IdPath,
    caller: CallerDep,
    include_deleted: bool = False,
) -> Response:
    rec = await state_of(request.app).backend.get(
        caller.scope(user), record_id, include_deleted=include_deleted
    )
    return JsonAnswer(record_body(rec))


@router.patch(
    "/memories/{record_id}",
    response_model=RecordOut,
    summary="Write a new version (409 if expected_version is stale)",
)
async def update_memory(
    request: Request, user: UserPath, record_id: IdPath, body: MemoryPatch, caller: CallerDep
) -> Response:
    changes = body.model_dump(exclude_unset=True, exclude={"expected_version"})
    changes = {k: v for k, v in changes.items() if v is not None}
    if not changes:
        raise ApiError(
            422,
            "invalid_request",
            "nothing to change: send at least one of "
            "content, importance, confidence, tags, metadata, source",
        )
    rec = await state_of(request.app).backend.update(
        caller.owner_scope(user), record_id, expected_version=body.expected_version, **changes
    )
    return JsonAnswer(record_body(rec))


@router.delete(
    "/memories/{record_id}",
    response_model=RecordOut,
    summary="Soft delete (restorable until purged)",
)
async def delete_memory(
    request: Request, user: UserPath, record_id: IdPath, caller: CallerDep
) -> RecordOut:
    backend = state_of(request.app).backend
    return RecordOut.of(
        await backend.delete(caller.owner_scope(user), record_id, actor=caller.actor)
    )


@router.post(
    "/memories/{record_id}/restore",
    response_model=RecordOut,
    summary="Restore a soft-deleted record",
)
async def restore_memory(
    request: Request, user: UserPath, record_id: IdPath, caller: CallerDep
) -> RecordOut:
    backend = state_of(request.app).backend
    return RecordOut.of(
        await backend.restore(caller.owner_scope(user), record_id, actor=caller.actor)
    )


@router.put(
    "/memories/{record_id}/access",
    response_model=RecordOut,
    summary="Who besides the user may read the record (visibility, users, roles)",
)
async def set_access(
    request: Request, user: UserPath, record_id: IdPath, body: AccessIn, caller: CallerDep
) -> RecordOut:
    rec = await state_of(request.app).backend.set_access(
        caller.owner_scope(user),
        record_id,
        visibility=body.visibility,
        allowed_users=body.allowed_users,
        allowed_roles=body.allowed_roles,
        actor=caller.actor,
    )
    return RecordOut.of(rec)


@router.get(
    "/memories/{record_id}/history", response_model=Records, summary="Every version, oldest first"
)
async def history(
    request: Request, user: UserPath, record_id: IdPath, caller: CallerDep
) -> Response:
    versions = await state_of(request.app).backend.history(caller.scope(user), record_id)
    return JsonAnswer(records_body(versions))


@router.post(
    "/purge",
    response_model=PurgeOut,
    summary="Destroy records for real, or every trace of the user (admin)",
)
async def purge(request: Request, user: UserPath, body: PurgeIn, caller: CallerDep) -> PurgeOut:
    require_admin(caller, "purge")
    if (body.ids is None) == (not body.all_of_user):
        raise ApiError(
            422,
            "invalid_request",
            "send either ids (a list of record ids) or all_of_user=true, not both and not neither",
        )
    state = state_of(request.app)
    scope = caller.owner_scope(user)
    report = await state.backend.purge(scope, body.ids, actor=caller.actor)
    if body.ids is None:  # the keys bound to the user name them (server/keys.py)
        await anyio.to_thread.run_sync(state.keys.purge_user, scope.tenant, scope.user)
    return PurgeOut(
        records=report.records,
        versions=report.versions,
        vectors=report.vectors,
        jobs=report.jobs,
        cache_entries=report.cache_entries,
        remaining=report.remaining,
    )
