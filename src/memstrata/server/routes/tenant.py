"""The tenant's API keys and audit log: admin keys only, and only their own tenant's.

A key bound to one user (``user=``) acts for that user only (server/keys.py), admin or not:
it may not list, create or revoke the tenant's keys (a key it made without a user would act
for every user of the tenant), and reads the audit events of its own user only."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import anyio.to_thread
from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from ...audit import AuditEvent
from ...errors import NotFoundError
from ..auth import Caller, CallerDep, require_admin
from ..dto import Id
from ..dto import Request as RequestBody
from ..errors import ERROR_RESPONSES, ApiError
from ..keys import ApiKey
from ..state import state_of
from ..strict_json import StrictJSONRoute

router = APIRouter(
    route_class=StrictJSONRoute, prefix="/v1", tags=["tenant"], responses=ERROR_RESPONSES
)


def _require_service_admin(caller: Caller, action: str) -> None:
    """An admin key of the whole tenant (no user): 403 for a key bound to one user."""
    require_admin(caller, action)
    if caller.key.user is not None:
        raise ApiError(
            403,
            "forbidden",
            f"{action} needs a service admin key (created without --for-user): this key "
            f"{caller.key.id} is bound to user {caller.key.user!r} and acts for that user only",
        )


class KeyIn(RequestBody):
    role: Literal["member", "admin"] = "member"
    name: Annotated[str, Field(max_length=200)] = ""
    user: Id | None = Field(None, description="Bind the key to this user of the tenant")
    roles: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        default_factory=list, max_length=50, description="Access-control roles"
    )


class KeyOut(BaseModel):
    id: str
    tenant: str
    role: str
    name: str
    user: str | None
    roles: list[str]
    created_at: datetime
    revoked_at: datetime | None

    @classmethod
    def of(cls, k: ApiKey) -> KeyOut:
        return cls(
            id=k.id,
            tenant=k.tenant,
            role=k.role.value,
            name=k.name,
            user=k.user,
            roles=sorted(k.roles),
            created_at=k.created_at,
            revoked_at=k.revoked_at,
        )


class NewKeyOut(KeyOut):
    key: str = Field(description="The key itself: shown once, stored only as a hash")


class KeysOut(BaseModel):
    keys: list[KeyOut]


class AuditEventOut(BaseModel):
    id: str
    actor: str
    action: str
    at: datetime
    user: str | None
    record_ids: list[str]
    reason: str | None
    policy: str | None
    score: float | None
    details: dict[str, Any]

    @classmethod
    def of(cls, e: AuditEvent) -> AuditEventOut:
        return cls(
            id=e.id,
            actor=e.actor,
            action=e.action,
            at=e.at,
            user=e.user,
            record_ids=list(e.record_ids),
            reason=e.reason,
            policy=e.policy,
            score=e.score,
            details=dict(e.details),
        )


class AuditOut(BaseModel):
    events: list[AuditEventOut]
    next_after: str | None = Field(
        default=None,
        description="Pass as `after` for the next page (null: this page is the last)",
    )


@router.get("/keys", response_model=KeysOut, summary="The tenant's API keys (admin)")
async def list_keys(request: Request, caller: CallerDep) -> KeysOut:
    _require_service_admin(caller, "listing keys")
    keys = state_of(request.app).keys
    found = await anyio.to_thread.run_sync(keys.list, caller.tenant)
    return KeysOut(keys=[KeyOut.of(k) for k in found])


@router.post("/keys", status_code=201, response_model=NewKeyOut, summary="Create a key (admin)")
async def create_key(request: Request, body: KeyIn, caller: CallerDep) -> NewKeyOut:
    _require_service_admin(caller, "creating keys")
    keys = state_of(request.app).keys

    def create() -> Any:
        return keys.create(
            caller.tenant, role=body.role, name=body.name, user=body.user, roles=body.roles
        )

    new = await anyio.to_thread.run_sync(create)
    return NewKeyOut(key=new.secret, **KeyOut.of(new.key).model_dump())


@router.delete("/keys/{key_id}", response_model=KeyOut, summary="Revoke a key (admin)")
async def revoke_key(request: Request, key_id: Id, caller: CallerDep) -> KeyOut:
    _require_service_admin(caller, "revoking keys")
    keys = state_of(request.app).keys

    def revoke() -> ApiKey:
        # Another tenant's key is a 404, exactly like a missing one.
        if not any(k.id == key_id for k in keys.list(caller.tenant)):
            raise NotFoundError(f"no API key {key_id!r} in this tenant; GET /v1/keys lists them")
        return keys.revoke(key_id)

    return KeyOut.of(await anyio.to_thread.run_sync(revoke))


# The actions memstrata writes in the log (tests/audit29 checks the list against the code).
# A library caller may record an action of its own (``mem.audit.record``): those are
# read too, once one is in the log.
AUDIT_ACTIONS = (
    "delete",
    "downgrade",
    "forget",
    "maintain",
    "merge",
    "purge",
    "purge_failed",
    "refresh",
    "restore",
    "set_access",
    "set_importance",
)


async def _check_action(request: Request, tenant: str, user: str | None, action: str) -> None:
    """``action`` matched no event of this page: a 422 listing the actions when it is none
    memstrata writes and no event of the tenant (of ``user``, for a key bound to one) has
    it: a typo (``action=delet``) was an empty page, as if nothing had been deleted."""
    if action in AUDIT_ACTIONS:
        return
    if await state_of(request.app).backend.audit(tenant, user=user, action=action, limit=1):
        return
    raise ApiError(
        422,
        "invalid_request",
        f"action={action!r} is no audit action: memstrata writes {', '.join(AUDIT_ACTIONS)} "
        "(an action a library caller recorded itself is found once one is in the log)",
    )


_ISO = r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?$"


def _time(name: str, value: str | None) -> datetime | None:
    """An ISO 8601 query time (naive means UTC); a 422 naming the parameter otherwise."""
    if value is None:
        return None
    try:
        found = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ApiError(
            422,
            "invalid_request",
            f"{name}={value!r} is not an ISO 8601 time such as 2026-05-01T12:00:00Z",
        ) from None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


@router.get("/audit", response_model=AuditOut, summary="The tenant's audit log (admin)")
async def audit(
    request: Request,
    caller: CallerDep,
    user: Annotated[str | None, Query(min_length=1, max_length=256)] = None,
    action: Annotated[str | None, Query(min_length=1, max_length=64)] = None,
    actor: Annotated[str | None, Query(min_length=1, max_length=256)] = None,
    record_id: Annotated[str | None, Query(min_length=1, max_length=256)] = None,
    since: Annotated[str | None, Query(pattern=_ISO, description="ISO 8601 time")] = None,
    until: Annotated[str | None, Query(pattern=_ISO, description="ISO 8601 time")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    after: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=256,
            description="An event id: the events after it (keyset paging; not with offset)",
        ),
    ] = None,
) -> AuditOut:
    require_admin(caller, "reading the audit log")
    bound = caller.key.user
    if bound is not None and user not in (None, bound):
        raise ApiError(
            403,
            "forbidden",
            f"this key is bound to user {bound!r}: it reads that user's audit events only; "
            f"use a service admin key (created without --for-user) for user {user!r}'s",
        )
    user = bound or user
    events = await state_of(request.app).backend.audit(
        caller.tenant,
        user=user,
        action=action,
        actor=actor,
        record_id=record_id,
        since=_time("since", since),
        until=_time("until", until),
        limit=limit,
        offset=offset,
        after=after,
    )
    if not events and action is not None:
        await _check_action(request, caller.tenant, bound, action)
    return AuditOut(
        events=[AuditEventOut.of(e) for e in events],
        next_after=events[-1].id if len(events) == limit else None,
    )
