"""Export (streamed JSON Lines) and import (admin) of one user's memory.

The export is sent as the memory produces it, a page of records a chunk (the first byte
leaves after the first page, and the server holds one page, not the user's history; no
spool on disk). Its count is in its last line (``{"end": "complete", "count": N}``, format
version 2, :mod:`memstrata.portability`): no ``X-Record-Count`` header, since the count is
only known when the walk ends. An error before the first chunk is an ordinary error answer
(404, 503, ...). An error after it, once the 200 has gone out, ends the body with
``{"end": "failed", "error": {"code", "message"}}`` and then cuts the connection (the
chunked body is never terminated, so an HTTP client reports an incomplete transfer and
``curl`` exits non-zero); an import refuses a body without its complete end line either way.
"""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from ...errors import MemstrataError
from ...portability import failed_line
from ..auth import CallerDep, UserPath, require_admin
from ..dto import ImportOut
from ..errors import ERROR_RESPONSES, ApiError, memstrata_response
from ..state import state_of

router = APIRouter(prefix="/v1/users/{user}", tags=["portability"], responses=ERROR_RESPONSES)


class ExportInterrupted(Exception):
    """Raised after an export's failed line: the server then cuts the connection (and the
    app's handler logs it, with the error that caused it)."""


@router.get(
    "/export",
    summary="The user's records as versioned JSON Lines (streamed)",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
            "description": "One JSON object per line: a header, one line per record, and "
            'an end line {"end": "complete", "count": N}; an export without that end line '
            "is incomplete",
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
    chunks = state_of(request.app).backend.export(
        caller.scope(user), include_embeddings=include_embeddings, include_deleted=include_deleted
    )
    # The header and the first page (or the whole of a small export): what fails here is
    # answered with its own status, before any byte of a 200.
    first = await anext(chunks)
    return StreamingResponse(_body(first, chunks, request), media_type="application/x-ndjson")


async def _body(first: str, rest: AsyncIterator[str], request: Request) -> AsyncIterator[bytes]:
    yield first.encode("utf-8")
    try:
        async for chunk in rest:
            yield chunk.encode("utf-8")
    except Exception as exc:
        code, message = _failure(exc, request)
        yield failed_line(code, message).encode("utf-8")
        raise ExportInterrupted(f"export of {request.url.path} failed: {message}") from exc


def _failure(exc: Exception, request: Request) -> tuple[str, str]:
    """The code and message the same error gets as an answer (no internals)."""
    if isinstance(exc, MemstrataError):
        error = json.loads(bytes(memstrata_response(exc, request).body))["error"]
        return str(error["code"]), str(error["message"])
    if isinstance(exc, sqlite3.Error):
        return "store_unavailable", f"the store is unavailable ({type(exc).__name__}); retry later"
    return "internal_error", "internal error; the server log has the details"


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
