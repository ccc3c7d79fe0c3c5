"""Export (streamed JSON Lines) and import (admin, streamed onto disk) of one user's memory.

The export is sent as the memory produces it, a page of records a chunk (the first byte
leaves after the first page, and the server holds one page, not the user's history; no
spool on disk). Its counts are in its last line (``{"end": "complete", "count": N,
"past_versions": M}``: format version 3, with each record's history; version 2, without it,
when ``include_history=false``; :mod:`memstrata.portability`): no ``X-Record-Count``
header, since the counts are only known when the walk ends. An error before the first
chunk is an ordinary error answer (404, 503, ...). An error after it, once the 200 has gone
out, ends the body with ``{"end": "failed", "error": {"code", "message"}}`` and leaves the
chunked body unterminated (the server closes the connection, so an HTTP client reports an incomplete
transfer and ``curl`` exits non-zero); an import refuses a body without its complete end
line either way. Such a failure is logged once, as one ``ERROR`` record of the
``memstrata.server`` logger with the request's context (method, path, tenant, key id, user,
the error's code, the records and bytes sent); the traceback goes with it only for an
error that is not memstrata's own (an internal error). The access log and the latency
histogram still say 200: the status line had gone out.

The import's body is read as it arrives into a spooled temporary file (in memory up to
``IMPORT_SPOOL_IN_MEMORY`` bytes, on disk beyond), decoded as UTF-8 on the way, and the
import reads it from there a page at a time (:meth:`memstrata.Memory.import_records`), so
neither holds the body whole; the body cap of ``Limits.max_import_body`` still applies as
it arrives (413).
"""

from __future__ import annotations

import codecs
import json
import logging
import sqlite3
import tempfile
from collections.abc import AsyncIterator
from typing import IO, NoReturn

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from starlette.types import Send

from ...errors import EmbeddingMismatchError, MemstrataError, ProviderError, StoreError
from ...portability import failed_line, spool_failed
from ..auth import CallerDep, UserPath, require_admin
from ..dto import ImportOut
from ..errors import (
    ERROR_RESPONSES,
    ApiError,
    memstrata_response,
    restart_needed,
    store_answer,
)
from ..state import state_of
from ..streaming import StopsBetweenChunks, aclose
from ..strict_json import StrictJSONRoute

log = logging.getLogger("memstrata.server")

IMPORT_SPOOL_IN_MEMORY = 1024 * 1024  # bytes of an import body kept in memory, then on disk

router = APIRouter(
    route_class=StrictJSONRoute,
    prefix="/v1/users/{user}",
    tags=["portability"],
    responses=ERROR_RESPONSES,
)


@router.get(
    "/export",
    summary="The user's records as versioned JSON Lines (streamed)",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
            "description": "One JSON object per line: a header, one line per record "
            "followed by its earlier versions (past_version lines; none with "
            'include_history=false), and an end line {"end": "complete", "count": N, '
            '"past_versions": M}; an export without that end line is incomplete',
        }
    },
)
async def export(
    request: Request,
    user: UserPath,
    caller: CallerDep,
    include_embeddings: bool = False,
    include_deleted: bool = True,
    include_history: bool = True,
) -> StreamingResponse:
    chunks = state_of(request.app).backend.export(
        caller.scope(user),
        include_embeddings=include_embeddings,
        include_deleted=include_deleted,
        include_history=include_history,
    )
    # The header and the first page (or the whole of a small export): what fails here is
    # answered with its own status, before any byte of a 200.
    first = await anext(chunks)
    return ExportStream(first, chunks, request, user)


class ExportStream(StopsBetweenChunks):
    """The chunks of an export; one that fails after the first ends with the failed line
    and no terminating chunk (see the module), logged once. A client that leaves stops the
    export between two pages (server/streaming.py)."""

    def __init__(self, first: str, rest: AsyncIterator[str], request: Request, user: str):
        super().__init__(self._chunks(first, rest), media_type="application/x-ndjson")
        self.failed = False
        self._request, self._user = request, user
        self._records = self._bytes = 0

    async def _chunks(self, first: str, rest: AsyncIterator[str]) -> AsyncIterator[bytes]:
        chunk = first
        try:
            while True:
                data = chunk.encode("utf-8")
                self._records += chunk.count("\n")
                self._bytes += len(data)
                yield data
                chunk = await anext(rest)
        except StopAsyncIteration:
            return
        except Exception as exc:  # noqa: BLE001 - every failure ends the body the same way
            self.failed = True
            code, message = _failure(exc, self._request)
            self._log(exc, code, message)
            state_of(self._request.app).cut_exports(code)
            yield failed_line(code, message).encode("utf-8")
        finally:
            await aclose(rest)  # its snapshot transaction ends now, its connection goes back

    def _log(self, exc: Exception, code: str, message: str) -> None:
        state = self._request.state
        log.error(
            "export of user %s failed after %d bytes were sent (%s: %s); the client got a "
            "200 and an unterminated body ending with a failed line",
            self._user,
            self._bytes,
            code,
            message,
            exc_info=exc if code == "internal_error" else None,
            extra={
                "method": self._request.method,
                "path": self._request.url.path,
                "tenant": getattr(state, "tenant", None),
                "key_id": getattr(state, "key_id", None),
                "user": self._user,
                "code": code,
                "lines_sent": self._records,
                "bytes_sent": self._bytes,
            },
        )

    async def stream_response(self, send: Send) -> None:
        """Starlette's, without the terminating chunk after a failure: the server then
        closes the connection instead of ending a body that is not whole."""
        await send({"type": "http.response.start", "status": self.status_code,
                    "headers": self.raw_headers})  # fmt: skip
        async for chunk in self.body_iterator:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if not self.failed:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


def _failure(exc: Exception, request: Request) -> tuple[str, str]:
    """The code and message the same error gets as an answer (no internals); the answer's
    own log line is not written (the stream logs its failure once)."""
    if isinstance(exc, EmbeddingMismatchError):  # as memstrata_response answers it (500)
        return "embedding_mismatch", restart_needed(exc, "serve")
    if isinstance(exc, StoreError | ProviderError):
        _, code, message, _ = store_answer(exc)  # as memstrata_response answers them
        return code, message
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
    with tempfile.SpooledTemporaryFile(
        max_size=IMPORT_SPOOL_IN_MEMORY, mode="w+", encoding="utf-8", newline="\n"
    ) as body:
        try:  # past IMPORT_SPOOL_IN_MEMORY the body goes to a file in TMPDIR
            await _spool_text(request, body)
            body.seek(0)
        except OSError as exc:
            raise spool_failed(exc) from exc
        # Always into this tenant and user: an export names its own tenant, and importing
        # it as-is would let a key write into whatever tenant the file says.
        report = await state_of(request.app).backend.import_records(body, caller.owner_scope(user))
    return ImportOut(
        imported=report.imported,
        skipped=report.skipped,
        reembedded=report.reembedded,
        renamed=report.renamed,
        versions=report.versions,
    )


async def _spool_text(request: Request, body: IO[str]) -> None:
    """The request body, decoded as UTF-8 as it arrives, written to ``body``; 422 for a
    body that is not UTF-8 or is blank (nothing was imported)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    fed = 0  # bytes given to the decoder so far
    blank = True
    async for data in request.stream():
        pending = len(decoder.getstate()[0])  # bytes of a character cut by the last chunk
        try:
            text = decoder.decode(data)
        except UnicodeDecodeError as exc:
            _not_utf8(exc, fed - pending)
        fed += len(data)
        blank = blank and not text.strip()
        body.write(text)
    try:
        body.write(decoder.decode(b"", final=True))
    except UnicodeDecodeError as exc:
        _not_utf8(exc, fed - len(exc.object))
    if blank:
        raise ApiError(
            422, "invalid_request", "the import body is empty; send the lines of a memstrata export"
        )


def _not_utf8(exc: UnicodeDecodeError, offset: int) -> NoReturn:
    raise ApiError(
        422,
        "invalid_request",
        f"the import body is not UTF-8 ({exc.reason} at byte {offset + exc.start}); nothing "
        "was imported",
    ) from None
