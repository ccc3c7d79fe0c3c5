"""Profile facts (semantic memory): the current facts, one key's fact and history, upsert.

An upsert goes through the library's conflict rules (``mem.facts.upsert``); the answer says
what they decided (inserted, confirmed, replaced, conflict, unchanged)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from ...llm.models import ExtractedFact
from ...records import Source
from ..auth import CallerDep, UserPath
from ..dto import FactIn, FactQueryIn, FactUpsertOut, RecordOut, Records
from ..errors import ERROR_RESPONSES, ApiError
from ..paths import Decoded
from ..state import state_of
from ..strict_json import StrictJSONRoute

router = APIRouter(
    route_class=StrictJSONRoute,
    prefix="/v1/users/{user}/facts",
    tags=["facts"],
    responses=ERROR_RESPONSES,
)

KeyPath = Annotated[str, Decoded, Path(min_length=1, max_length=256, description="The fact's key")]


@router.get("", response_model=Records, summary="The user's current, unexpired facts")
async def list_facts(
    request: Request,
    user: UserPath,
    caller: CallerDep,
    min_confidence: Annotated[float, Query(ge=0, le=1)] = 0.0,
) -> Records:
    found = await state_of(request.app).backend.facts(caller.scope(user), min_confidence)
    return Records(records=[RecordOut.of(r) for r in found])


@router.post(
    "",
    response_model=FactUpsertOut,
    summary="Upsert a fact through the conflict rules (the answer says what happened)",
)
async def upsert_fact(
    request: Request, user: UserPath, body: FactIn, caller: CallerDep
) -> FactUpsertOut:
    fact = ExtractedFact(
        category=body.category,
        key=body.key,
        value=body.value,
        confidence=body.confidence,
        evidence=body.evidence,
        replaces=body.replaces,
        ended=body.ended,
    )
    outcome = await state_of(request.app).backend.upsert_fact(
        caller.owner_scope(user),
        fact,
        body.source_ids,
        expires_at=body.expires_at,
        source=Source(body.source),
        observed_at=body.observed_at,
    )
    previous = outcome.previous
    return FactUpsertOut(
        action=outcome.action.value,
        fact=RecordOut.of(outcome.record),
        previous=RecordOut.of(previous) if previous is not None else None,
    )


@router.post(
    "/relevant",
    response_model=Records,
    summary="The facts most relevant to a query (or the most confident), for a prompt",
)
async def relevant_facts(
    request: Request, user: UserPath, body: FactQueryIn, caller: CallerDep
) -> Records:
    found = await state_of(request.app).backend.relevant_facts(
        caller.scope(user), body.query, body.limit, body.min_confidence
    )
    return Records(records=[RecordOut.of(r) for r in found])


@router.get("/{key}", response_model=RecordOut, summary="The key's current fact (404: none)")
async def get_fact(request: Request, user: UserPath, key: KeyPath, caller: CallerDep) -> RecordOut:
    found = await state_of(request.app).backend.fact(caller.scope(user), key)
    if found is None:
        raise ApiError(
            404,
            "not_found",
            f"no current fact {key!r} for this user (never set, or expired); "
            "GET .../facts lists them",
        )
    return RecordOut.of(found)


@router.get(
    "/{key}/history",
    response_model=Records,
    summary="Every version of every fact that held the key, oldest first",
)
async def fact_history(
    request: Request, user: UserPath, key: KeyPath, caller: CallerDep
) -> Records:
    versions = await state_of(request.app).backend.fact_history(caller.scope(user), key)
    return Records(records=[RecordOut.of(r) for r in versions])
