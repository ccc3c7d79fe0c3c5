"""Reading: hybrid search (with every score term on request) and context assembly."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from ..answers import JsonAnswer, context_body, hit_body
from ..auth import CallerDep, UserPath
from ..dto import ContextIn, ContextOut, SearchIn, SearchOut
from ..errors import ERROR_RESPONSES
from ..state import state_of
from ..strict_json import StrictJSONRoute

router = APIRouter(
    route_class=StrictJSONRoute,
    prefix="/v1/users/{user}",
    tags=["retrieval"],
    responses=ERROR_RESPONSES,
)


@router.post("/search", response_model=SearchOut, summary="Hybrid search (BM25 + dense)")
async def search(request: Request, user: UserPath, body: SearchIn, caller: CallerDep) -> Response:
    scope = caller.scope(user, session=body.session, agent=body.agent)
    hits = await state_of(request.app).backend.search(
        scope,
        body.query,
        body.top_k,
        layers=body.layers,
        filters=body.filters,
        mode=body.mode,
        explain=body.explain,
    )
    return JsonAnswer({"hits": [hit_body(h) for h in hits]})


@router.post(
    "/context",
    response_model=ContextOut,
    summary="Assemble the context an LLM should see, within token_budget",
)
async def context(request: Request, user: UserPath, body: ContextIn, caller: CallerDep) -> Response:
    scope = caller.scope(user, session=body.session, agent=body.agent)
    built = await state_of(request.app).backend.build_context(
        scope, body.query, body.token_budget, body.system_prompt, body.reserve_ratio
    )
    return JsonAnswer(context_body(built))
