"""memstrata's errors as HTTP answers: one JSON shape, a status per kind, never a traceback.

========================  ======  ===============================================
error                     status  note
========================  ======  ===============================================
malformed JSON            400
no / unknown / revoked key 401    ``WWW-Authenticate: Bearer``
role too low              403
NotFoundError             404     other tenants' records too (isolation)
ConflictError             409     ``expected_version`` is stale
body too large            413
ValidationError, schema   422     the message names the field and the fix
rate limit, quota         429     ``Retry-After``
EmbeddingMismatchError    500     no ``Retry-After``: a restart with the store's embedder
StoreError, not retryable 500     ``store_failed``, no ``Retry-After``: damaged or
                                  read-only file, full disk, schema, trigger refusal
StoreError, retryable     503     ``unavailable``, ``Retry-After``: the store is down
                                  (restarting) or locked, no connection free
ProviderError             503     an embedding/LLM provider failed
anything else             500     logged with its traceback, answered without it
========================  ======  ===============================================

A store failure says whether retrying helps (``StoreError.retryable``; a raw
``sqlite3.Error``, which the stores no longer let out, is classified the same way): a client
told ``Retry-After`` for a damaged file retried forever. Not retryable is 500, not 507: the
store is this server's fault, not the request's, and 500 is what clients and monitors
already treat as "needs an operator"; the message says what the operator should do.
"""

from __future__ import annotations

import logging
import math
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from ..errors import (
    ConflictError,
    EmbeddingMismatchError,
    ImportFormatError,
    MemstrataError,
    NotFoundError,
    ProviderError,
    QuotaExceededError,
    StoreError,
    ValidationError,
)
from ..store.sqlite.failures import transient as sqlite_transient

__all__ = [
    "ApiError",
    "ERROR_RESPONSES",
    "error_response",
    "install_handlers",
    "out_of_memory",
    "restart_needed",
    "store_answer",
    "validation_message",
]

log = logging.getLogger("memstrata.server")

STORE_RETRY_SECONDS = 5


class ApiError(Exception):
    """An answer the server decided on (auth, limits); carries its status and headers."""

    def __init__(
        self, status: int, code: str, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})


def error_response(
    status: int,
    code: str,
    message: str,
    *,
    fields: Sequence[str] = (),
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": message, "fields": list(fields)}},
        status_code=status,
        headers=dict(headers or {}),
    )


_ERROR_SCHEMA = {"$ref": "#/components/schemas/ErrorOut"}
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"description": text, "content": {"application/json": {"schema": _ERROR_SCHEMA}}}
    for status, text in (
        (400, "Malformed JSON, or a URL whose percent-escapes are not UTF-8"),
        (401, "Missing, unknown or revoked API key"),
        (403, "The key's role may not do this"),
        (404, "No such record for this user"),
        (409, "Version conflict"),
        (413, "Request body too large"),
        (422, "Invalid input: the message names the field and the fix"),
        (429, "Rate limit or quota; see Retry-After"),
        (
            500,
            "The store failed in a way retrying will not mend (store_failed), or an internal error",
        ),
        (
            503,
            "Store or provider unavailable for now, or the server out of memory; see Retry-After",
        ),
    )
}

_FIXES = {
    "missing": "add this {noun}",
    "extra_forbidden": "remove this {noun}; it is not part of this request",
    "string_too_short": "send a non-empty string",
    "string_too_long": "send a shorter string",
    "too_short": "send at least one item",
    "too_long": "send fewer items",
    "literal_error": "use one of the allowed values",
    "int_parsing": "send an integer",
    "int_type": "send an integer",
    "float_parsing": "send a number",
    "float_type": "send a number",
    "finite_number": "send a finite number",
    "bool_parsing": "send true or false",
    "bool_type": "send true or false",
    "string_type": "send a string",
    "dict_type": "send a JSON object",
    "list_type": "send a JSON array",
    "model_attributes_type": "send a JSON object",
    "datetime_from_date_parsing": "send an ISO 8601 time such as 2024-05-08T13:00:00Z",
    "datetime_parsing": "send an ISO 8601 time such as 2024-05-08T13:00:00Z",
    "datetime_type": "send an ISO 8601 time such as 2024-05-08T13:00:00Z",
    "greater_than_equal": "send a larger value",
    "greater_than": "send a larger value",
    "less_than_equal": "send a smaller value",
    "less_than": "send a smaller value",
}


_BOUNDS = frozenset({"greater_than_equal", "greater_than", "less_than_equal", "less_than"})
# an integer's field given NaN or Infinity (strict: "a valid integer") is told to send a
# finite number too, as a bound's is
_NUMBERS = _BOUNDS | {"int_type", "int_from_float", "finite_number"}


def _string_length(kind: str, ctx: Mapping[str, Any], value: str) -> tuple[str, str]:
    """pydantic's error of a string's length, in characters."""
    if kind == "too_long":
        most = ctx.get("max_length", "the")
        return "string_too_long", f"String should have at most {most} characters, not {len(value)}"
    least = ctx.get("min_length", 1)
    return "string_too_short", f"String should have at least {least} character(s)"


def _not_finite(value: object) -> bool:
    """JSON's NaN and Infinity, which Python's reader takes, out of a bound's range."""
    return isinstance(value, float) and not math.isfinite(value)


def _field(loc: Sequence[Any], whole: str) -> str:
    return ".".join(str(p) for p in loc) or whole


def validation_message(
    errors: Sequence[Mapping[str, Any]], *, noun: str = "field", whole: str = "body"
) -> tuple[str, list[str]]:
    """pydantic's errors in one line, and the names they are about: for each (10 at most),
    the name, what was wrong (pydantic's ``msg``: never the value, which may be huge or
    private) and what to do; ``noun`` is what a name is (an MCP tool has arguments)."""
    parts, fields = [], []
    for err in errors[:10]:
        name = _field(err.get("loc", ()), whole)
        kind = str(err.get("type"))
        msg = str(err.get("msg", "invalid"))[:200]
        if kind in ("too_long", "too_short") and isinstance(err.get("input"), str):
            # an id in a path (a validator before its length check makes pydantic count
            # "items"): "Value should have at most 256 items" read as a list's limit
            kind, msg = _string_length(kind, err.get("ctx") or {}, err["input"])
        if kind == "value_error":  # memstrata's own check: its message says what to do
            parts.append(f"{name}: {msg.removeprefix('Value error, ')}")
        else:
            fix = _FIXES.get(kind, "correct this value").format(noun=noun)
            if kind in _NUMBERS and _not_finite(err.get("input")):  # NaN is neither way
                fix = _FIXES["finite_number"]
            parts.append(f"{name}: {msg} — {fix}")
        fields.append(name)
    more = f" (+{len(errors) - 10} more)" if len(errors) > 10 else ""
    return "; ".join(parts) + more, fields


# What FastAPI says when the body cannot even be decoded (not UTF-8, compressed, a number of
# over 4,300 digits, nesting deeper than Python's recursion limit), and what to do instead.
_UNREADABLE_BODY = (
    "the request body could not be read as JSON (not UTF-8 text, compressed, nested too "
    "deep or holding a number too long); send a JSON object encoded as UTF-8, uncompressed, "
    "with Content-Type: application/json"
)


def install_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        bad_json = [e for e in errors if e.get("type") == "json_invalid"]
        if bad_json:
            ctx = bad_json[0].get("ctx") or {}
            return error_response(
                400,
                "malformed_json",
                f"the request body is not valid JSON ({ctx.get('error', 'parse error')}); "
                "send a JSON object with Content-Type: application/json",
            )
        message, fields = validation_message(errors)
        return error_response(422, "invalid_request", message, fields=fields)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}.get(
            exc.status_code, "http_error"
        )
        detail = exc.detail if isinstance(exc.detail, str) else "request refused"
        if exc.status_code == 404 and detail == "Not Found":
            detail = "no such path; see /docs for the API"
        if exc.status_code == 400 and detail == "There was an error parsing the body":
            if isinstance(exc.__cause__, MemoryError):  # FastAPI's "parse error"
                return out_of_memory(request)
            code, detail = "malformed_json", _UNREADABLE_BODY
        return error_response(exc.status_code, code, detail, headers=exc.headers)

    @app.exception_handler(ApiError)
    async def _api(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, headers=exc.headers)

    @app.exception_handler(MemstrataError)
    async def _memstrata(request: Request, exc: MemstrataError) -> JSONResponse:
        return memstrata_response(exc, request)

    @app.exception_handler(sqlite3.Error)
    async def _sqlite(request: Request, exc: sqlite3.Error) -> JSONResponse:
        log.error("store error on %s %s: %s", request.method, request.url.path, exc)
        if sqlite_transient(exc):
            return error_response(
                503,
                "store_unavailable",
                f"the store is unavailable ({type(exc).__name__}); retry later",
                headers={"Retry-After": str(STORE_RETRY_SECONDS)},
            )
        return error_response(
            500,
            "store_failed",
            f"the store failed ({type(exc).__name__}: {exc}). {_NO_RETRY}",
        )

    @app.exception_handler(ClientDisconnect)
    async def _gone(request: Request, _: ClientDisconnect) -> JSONResponse:
        # the client left (or stalled and was cut: server/slow_clients.py) before its body
        # was read; a route that reads as the body comes (an import) sees it here. Nobody is
        # left to answer: 499, as nginx logs it, for the access log and the metrics.
        log.info("client left mid-body on %s %s", request.method, request.url.path)
        return error_response(499, "client_closed_request", "the client left mid-body")

    @app.exception_handler(MemoryError)
    async def _out_of_memory(request: Request, _: MemoryError) -> JSONResponse:
        # A handler of its own class, not Exception's: Starlette re-raises what that one
        # answers and uvicorn then drops the connection.
        return out_of_memory(request)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        # Starlette re-raises the error after this answer and uvicorn closes the
        # connection: said here (Connection: close), a keep-alive client sends its next
        # request on a new one (it was reset: "Connection reset by peer").
        if isinstance(exc, RuntimeError) and "can't start new thread" in str(exc):
            return out_of_memory(request, thread=True)  # a thread's stack: memory too
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return error_response(
            500,
            "internal_error",
            "internal error; the server log has the details",
            headers={"Connection": "close"},
        )


def out_of_memory(request: Request, *, thread: bool = False) -> JSONResponse:
    """503 ``out_of_memory`` with ``Retry-After``: the process could not get the memory (or
    a thread: its stack) a request needed, under a memory limit or beside other requests;
    the same request may succeed once they are done. Logged in one line: a traceback may
    need the memory that ran out."""
    what = "could not start a thread" if thread else "ran out of memory"
    log.error("out of memory on %s %s (%s)", request.method, request.url.path, what)
    return error_response(
        503,
        "out_of_memory",
        f"the server {what} for this request (a memory limit, or other requests holding "
        "it); a write may or may not have been applied: re-read before retrying; retry in "
        "a few seconds, or send less per request",
        headers={"Retry-After": str(STORE_RETRY_SECONDS), "Connection": "close"},
    )


def restart_needed(exc: EmbeddingMismatchError, command: str) -> str:
    """What a server (``memstrata serve``, ``memstrata mcp``: ``command``) says of a store
    that holds vectors of another embedding model than the one it embeds with: another
    process re-embedded it, and every search and write is refused until this process is
    started again with an embedder of the store's model. Retrying cannot help."""
    return (
        f"{exc}. Retrying will not help: this server embeds with the model it was started "
        f"with until it is restarted; restart it with an embedder of the store's model "
        f"(`memstrata {command} --embedder ...`), or re-embed the store back to this one's"
    )


_NO_RETRY = (
    "Retrying will not help: the store needs its operator (the message says what to do; "
    "the server log has the details)"
)


def store_answer(exc: StoreError | ProviderError) -> tuple[int, str, str, dict[str, str]]:
    """The status, code, message and headers of a store's (or a provider's) failure, as
    ``memstrata_response`` answers it, without its log line: 503 ``unavailable`` with
    ``Retry-After`` when the same call may succeed later (``StoreError.retryable``, any
    ``ProviderError``), else 500 ``store_failed`` saying that retrying will not help."""
    msg = str(exc)
    if isinstance(exc, StoreError) and not exc.retryable:
        return 500, "store_failed", f"{msg}. {_NO_RETRY}", {}
    return 503, "unavailable", msg, {"Retry-After": str(STORE_RETRY_SECONDS)}


def memstrata_response(exc: MemstrataError, request: Request | None = None) -> JSONResponse:
    msg = str(exc)
    if isinstance(exc, NotFoundError):
        return error_response(404, "not_found", msg)
    if isinstance(exc, ConflictError):
        return error_response(409, "version_conflict", msg)
    if isinstance(exc, ValidationError | ImportFormatError):
        return error_response(422, "invalid_request", msg)
    if isinstance(exc, QuotaExceededError):
        # a daily quota: when it resets; records or a per-request limit: waiting does not
        # help, but 429 keeps its Retry-After (clients back off instead of hammering)
        wait = exc.retry_after if exc.retry_after is not None else 3600
        return error_response(429, "quota_exceeded", msg, headers={"Retry-After": str(wait)})
    if isinstance(exc, EmbeddingMismatchError):
        # Not 503 with Retry-After (until session 25): the store will not change back by
        # itself, and clients retried for nothing. A fault of this server, not the request.
        where = f" on {request.method} {request.url.path}" if request else ""
        log.error("embedding mismatch%s: %s", where, msg)
        return error_response(500, "embedding_mismatch", restart_needed(exc, "serve"))
    if isinstance(exc, StoreError | ProviderError):
        status, code, text, headers = store_answer(exc)
        where = f" on {request.method} {request.url.path}" if request else ""
        log.error("%s%s: %s", "unavailable" if status == 503 else "store failed", where, msg)
        return error_response(status, code, text, headers=headers)
    return error_response(422, "invalid_request", msg)
