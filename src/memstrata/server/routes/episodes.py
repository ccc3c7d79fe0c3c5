"""Episodic memory: recall episodes by a query, a session's episode, the user's feedback."""

from __future__ import annotations

from fastapi import APIRouter, Request

from ..auth import CallerDep, UserPath
from ..dto import EpisodeHitOut, EpisodeHits, FeedbackIn, RecallIn, RecordOut
from ..errors import ERROR_RESPONSES, ApiError
from ..paths import IdPath
from ..state import state_of
from ..strict_json import StrictJSONRoute

router = APIRouter(
    route_class=StrictJSONRoute,
    prefix="/v1/users/{user}/episodes",
    tags=["episodes"],
    responses=ERROR_RESPONSES,
)


@router.post(
    "/recall",
    response_model=EpisodeHits,
    summary="The best episodes for a query (similarity, recency, importance > 0.3)",
)
async def recall(
    request: Request, user: UserPath, body: RecallIn, caller: CallerDep
) -> EpisodeHits:
    hits = await state_of(request.app).backend.recall_episodes(
        caller.scope(user, session=body.session), body.query, body.k
    )
    return EpisodeHits(hits=[EpisodeHitOut.of(h) for h in hits])


@router.get(
    "/sessions/{session}",
    response_model=RecordOut,
    summary="The episode written when the session ended (404: none yet)",
)
async def session_episode(
    request: Request,
    user: UserPath,
    session: IdPath,
    caller: CallerDep,
) -> RecordOut:
    found = await state_of(request.app).backend.session_episode(caller.scope(user, session=session))
    if found is None:
        raise ApiError(
            404,
            "not_found",
            f"no episode for session {session!r}: it is written when the session ends "
            "(POST .../sessions/{session}/end)",
        )
    return RecordOut.of(found)


@router.post(
    "/feedback",
    status_code=201,
    response_model=RecordOut,
    summary="Record the user's feedback as an episode (importance 0.9)",
)
async def feedback(
    request: Request, user: UserPath, body: FeedbackIn, caller: CallerDep
) -> RecordOut:
    rec = await state_of(request.app).backend.record_feedback(
        caller.owner_scope(user, session=body.session), body.text, body.source_ids
    )
    return RecordOut.of(rec)
