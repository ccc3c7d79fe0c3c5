"""Knowledge: documents stored as overlapping chunks, and one document read back whole."""

from __future__ import annotations

from fastapi import APIRouter, Request

from ...layers.knowledge_types import rejoin
from ..auth import CallerDep, UserPath
from ..dto import DocumentOut, KnowledgeIn, RecordOut
from ..errors import ERROR_RESPONSES, ApiError
from ..paths import IdPath
from ..state import state_of
from ..strict_json import StrictJSONRoute

router = APIRouter(
    route_class=StrictJSONRoute,
    prefix="/v1/users/{user}/knowledge",
    tags=["knowledge"],
    responses=ERROR_RESPONSES,
)


def _document(qa_id: str, chunks: list[RecordOut], text: str) -> DocumentOut:
    titles = [c.metadata.get("title") for c in chunks if c.metadata.get("title")]
    return DocumentOut(
        qa_id=qa_id, title=str(titles[0]) if titles else None, text=text, chunks=chunks
    )


@router.post(
    "",
    status_code=201,
    response_model=DocumentOut,
    summary="Store a document as chunks (2,000 tokens, 200 overlapping)",
)
async def ingest(
    request: Request, user: UserPath, body: KnowledgeIn, caller: CallerDep
) -> DocumentOut:
    chunks = await state_of(request.app).backend.ingest_knowledge(
        caller.owner_scope(user, session=body.session),
        body.text,
        body.qa_id,
        body.title,
        importance=body.importance,
        tags=body.tags,
    )
    [(qa_id, text)] = rejoin(chunks)
    return _document(qa_id, [RecordOut.of(c) for c in chunks], text)


@router.get(
    "/{qa_id}",
    response_model=DocumentOut,
    summary="A document's chunks in order and its text put back together",
)
async def document(
    request: Request,
    user: UserPath,
    qa_id: IdPath,
    caller: CallerDep,
) -> DocumentOut:
    chunks = await state_of(request.app).backend.knowledge_chunks(caller.scope(user), qa_id)
    if not chunks:
        raise ApiError(
            404, "not_found", f"no document {qa_id!r} for this user; POST .../knowledge stores one"
        )
    chunks.sort(key=lambda c: int(c.metadata.get("chunk_index", 0)))
    [(_, text)] = rejoin(chunks)
    return _document(qa_id, [RecordOut.of(c) for c in chunks], text)
