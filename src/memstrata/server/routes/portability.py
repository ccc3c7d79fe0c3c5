"""Export (streamed JSON Lines) and import (admin) of one user's memory."""

from __future__ import annotations

import io
import tempfile
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from ..auth import CallerDep, UserPath, require_admin
from ..dto import ImportOut
from ..errors import ERROR_RESPONSES, ApiError
from ..state import state_of

router = APIRouter(prefix="/v1/users/{user}", tags=["portability"], responses=ERROR_RESPONSES)

_CHUNK = 64 * 1024
_SPOOL = 1024 * 1024  # exports larger than this spill to a temporary file, not to RAM


@router.get(
    "/export",
    summary="The user's records as versioned JSON Lines (streamed)",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
            "description": "One JSON object per line",
        }
    },
)
async def export(
    request: Request,
    user: UserPath,
    caller: CallerDep,
    include_embeddings: bool = False,
    include_deleted: bool = True,
) -> StreamingResponse:
    spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL, mode="w+", encoding="utf-8")  # noqa: SIM115 (closed by the stream)
    try:
        count = await state_of(request.app).backend.export(
            caller.scope(user),
            spool,
            include_embeddings=include_embeddings,
            include_deleted=include_deleted,
        )
    except BaseException:
        spool.close()
        raise
    spool.seek(0)

    async def chunks() -> AsyncIterator[bytes]:
        try:
            while block := spool.read(_CHUNK):
                yield block.encode("utf-8")
        finally:
            spool.close()

    return StreamingResponse(
        chunks(), media_type="application/x-ndjson", headers={"X-Record-Count": str(count)}
    )


@router.post(
    "/import",
    response_model=ImportOut,
    summary="Import an export into this user (admin; all lines checked first)",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
        }
    },
)
async def import_(request: Request, user: UserPath, caller: CallerDep) -> ImportOut:
    require_admin(caller, "import")
    raw = await request.body()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(
            422,
            "invalid_request",
            f"the import body is not UTF-8 ({exc.reason} at "
            f"byte {exc.start}); nothing was imported",
        ) from None
    if not text.strip():
        raise ApiError(
            422, "invalid_request", "the import body is empty; send the lines of a memstrata export"
        )
    # Always into this tenant and user: an export names its own tenant, and importing it
    # as-is would let a key write into whatever tenant the file says.
    report = await state_of(request.app).backend.import_records(
        io.StringIO(text), caller.owner_scope(user)
    )
    return ImportOut(imported=report.imported, skipped=report.skipped, reembedded=report.reembedded)
