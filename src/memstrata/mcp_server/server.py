"""The memory tools and the MCP server that serves them (stdio or streamable HTTP)."""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    ErrorData,
    JSONRPCError,
    ToolAnnotations,
    jsonrpc_message_adapter,
)
from mcp_types.methods import MONOLITH_REQUESTS
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as ArgumentsError
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Send
from starlette.types import Scope as AsgiScope

from .. import __version__, json_keys
from ..errors import EmbeddingMismatchError, MemstrataError, StoreError
from ..filters import Filters
from ..records import MemoryRecord, RecordType
from ..scope import Scope
from ..server.auth import CREDENTIALS, credentials_twice
from ..server.backend import MemoryBackend
from ..server.dto import Time
from ..server.errors import ApiError, error_response, restart_needed, validation_message
from ..server.key_cache import lookup
from ..server.keys import KeyStore
from ..server.limits import BodyLimit, Limiter, admit
from ..server.priority import whole_body_bytes
from .identity import KEY_STATE, Identity, bearer_of

__all__ = ["build_mcp_server", "http_app", "invalid_params", "mcp_endpoint"]

Layer = Literal[
    "messages", "summaries", "episodic", "semantic", "mid_term", "key", "procedural", "working"
]
Text = Annotated[str, Field(min_length=1, max_length=20_000)]


class MemoryOut(BaseModel):
    id: str
    type: str
    text: str
    version: int
    status: str
    observed_at: str
    tags: list[str]
    importance: float
    confidence: float

    @classmethod
    def of(cls, r: MemoryRecord) -> MemoryOut:
        return cls(
            id=r.id,
            type=r.type.value,
            text=r.text,
            version=r.version,
            status=r.status.value,
            observed_at=r.observed_at.isoformat(),
            tags=list(r.tags),
            importance=r.importance,
            confidence=r.confidence,
        )


class HitOut(BaseModel):
    id: str
    text: str
    score: float
    layer: str
    observed_at: str


class SearchOut(BaseModel):
    hits: list[HitOut]


class ContextItemOut(BaseModel):
    block: str
    text: str
    record_id: str | None


class ContextOut(BaseModel):
    text: str = Field(description="The assembled context as one text")
    messages: list[dict[str, str]]
    items: list[ContextItemOut]
    tokens: int


class MemoryListOut(BaseModel):
    memories: list[MemoryOut]
    total: int
    next_offset: int | None


class DeletedOut(BaseModel):
    id: str
    status: str


def _annotations(
    *, read_only: bool, destructive: bool = False, idempotent: bool = False
) -> ToolAnnotations:
    return ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


def build_mcp_server(backend: MemoryBackend, identity: Identity) -> MCPServer[Any]:
    """An MCP server whose tools act on ``identity``'s memory through ``backend``."""

    def scope_of(ctx: Context[Any, Any]) -> Scope:
        headers: Any = None
        checked = None
        try:
            headers = ctx.headers
            # the key _RequireKey accepted: not looked up a second time, on the event loop
            state = getattr(ctx.request_context.request, "state", None)
            checked = getattr(state, KEY_STATE, None)
        except ValueError:  # no request (in-process calls)
            headers = None
        return identity.scope(headers, checked)

    async def memory_add(
        content: Text,
        ctx: Context[Any, Any],
        observed_at: Time | None = None,
        tags: Annotated[list[str], Field(max_length=50)] | None = None,
        importance: Annotated[float, Field(ge=0, le=1)] | None = None,
    ) -> MemoryOut:
        """Remember a fact, preference or decision about the user for later sessions.
        observed_at: when it was true or said, an ISO 8601 string (not a number), default
        now. A near-duplicate of an existing memory is merged into it instead of stored
        twice."""
        scope = scope_of(ctx).user_scope.with_agent(identity.agent)
        rec = await backend.add(
            scope, content, observed_at=observed_at, tags=tags or (), importance=importance
        )
        return MemoryOut.of(rec)

    async def memory_search(
        query: Text,
        ctx: Context[Any, Any],
        top_k: Annotated[int, Field(ge=1, le=100)] = 10,
        layers: list[Layer] | None = None,
    ) -> SearchOut:
        """Search the user's memory (keywords and meaning), best first."""
        scope = scope_of(ctx).with_session(None)
        hits = await backend.search(
            scope, query, top_k, layers=layers, filters=None, mode=None, explain=False
        )
        return SearchOut(
            hits=[
                HitOut(
                    id=h.id,
                    text=h.text,
                    score=h.score,
                    layer=h.layer,
                    observed_at=h.record.observed_at.isoformat(),
                )
                for h in hits
            ]
        )

    async def memory_context(
        ctx: Context[Any, Any],
        query: Text | None = None,
        token_budget: Annotated[int, Field(ge=64, le=200_000)] = 4000,
    ) -> ContextOut:
        """What to know about the user now: key memory, summaries, facts, relevant memories
        and the session's recent turns, fitted to token_budget."""
        built = await backend.build_context(scope_of(ctx), query, token_budget, None, None)
        return ContextOut(
            text=built.text,
            messages=built.messages,
            tokens=built.tokens,
            items=[
                ContextItemOut(block=i.block, text=i.text, record_id=i.record_id)
                for i in built.items
            ],
        )

    async def memory_get(
        id: Annotated[str, Field(min_length=1, max_length=256)], ctx: Context[Any, Any]
    ) -> MemoryOut:
        """One memory by id, with its current version."""
        return MemoryOut.of(await backend.get(scope_of(ctx).user_scope, id))

    async def memory_update(
        id: Annotated[str, Field(min_length=1, max_length=256)],
        content: Text,
        ctx: Context[Any, Any],
        expected_version: Annotated[int, Field(ge=1)] | None = None,
    ) -> MemoryOut:
        """Correct a memory's text (a new version; the old one stays in its history).
        expected_version: the version you read; if it changed since, nothing is written."""
        scope = scope_of(ctx).user_scope
        if expected_version is None:
            expected_version = (await backend.get(scope, id)).version
        rec = await backend.update(
            scope, id, expected_version=expected_version, content=content, source="corrected_memory"
        )
        return MemoryOut.of(rec)

    async def memory_delete(
        id: Annotated[str, Field(min_length=1, max_length=256)], ctx: Context[Any, Any]
    ) -> DeletedOut:
        """Forget a memory (soft delete: hidden everywhere, restorable by the user)."""
        rec = await backend.delete(scope_of(ctx).user_scope, id)
        return DeletedOut(id=rec.id, status=rec.status.value)

    async def memory_list(
        ctx: Context[Any, Any],
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
        offset: Annotated[int, Field(ge=0)] = 0,
        types: list[Literal["note", "fact", "episode", "summary", "message", "key", "knowledge"]]
        | None = None,
    ) -> MemoryListOut:
        """The user's memories, newest first."""
        scope = scope_of(ctx).user_scope
        flt = Filters(types=frozenset(RecordType(t) for t in types) if types else None)
        items, total = await backend.list_records(
            scope, flt, limit=limit, offset=offset, newest_first=True
        )
        nxt = offset + len(items)
        return MemoryListOut(
            memories=[MemoryOut.of(r) for r in items],
            total=total,
            next_offset=nxt if nxt < total else None,
        )

    async def key_memory_set(
        text: Annotated[str, Field(min_length=1, max_length=4000)],
        ctx: Context[Any, Any],
        priority: Annotated[int, Field(ge=-1000, le=1000)] = 0,
    ) -> MemoryOut:
        """Pin something that must always be in context (goal, constraint, deadline)."""
        return MemoryOut.of(await backend.key_set(scope_of(ctx).user_scope, text, priority))

    async def key_memory_list(ctx: Context[Any, Any]) -> MemoryListOut:
        """The pinned key memories, in the order they enter the context."""
        recs = await backend.key_list(scope_of(ctx).user_scope)
        return MemoryListOut(
            memories=[MemoryOut.of(r) for r in recs], total=len(recs), next_offset=None
        )

    specs: list[tuple[Callable[..., Awaitable[BaseModel]], ToolAnnotations]] = [
        (memory_add, _annotations(read_only=False)),
        (memory_search, _annotations(read_only=True, idempotent=True)),
        (memory_context, _annotations(read_only=True, idempotent=True)),
        (memory_get, _annotations(read_only=True, idempotent=True)),
        (memory_update, _annotations(read_only=False, destructive=True)),
        (memory_delete, _annotations(read_only=False, destructive=True, idempotent=True)),
        (memory_list, _annotations(read_only=True, idempotent=True)),
        (key_memory_set, _annotations(read_only=False)),
        (key_memory_list, _annotations(read_only=True, idempotent=True)),
    ]
    tools = [
        _strict(_Tool.from_function(_reported(fn), annotations=ann, structured_output=True))
        for fn, ann in specs
    ]
    return _Server(
        "memstrata",
        version=__version__,
        tools=tools,
        log_level="WARNING",
        instructions="Long-term memory about the user. Call memory_context at the "
        "start of a conversation; memory_add for facts worth keeping.",
    )


class _Server(MCPServer[Any]):
    """The SDK's server, but a call of a tool it does not have names the tools it has (the
    SDK said "Unknown tool: NAME" and nothing more)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        if self._tool_manager.get_tool(name) is None:
            known = ", ".join(sorted(t.name for t in self._tool_manager.list_tools()))
            raise ToolError(
                f"unknown tool {json.dumps(name)[:80]}: this server's tools are {known} "
                "(tools/list describes them)"
            )
        return await super().call_tool(name, arguments, context)


def _reported(fn: Callable[..., Awaitable[BaseModel]]) -> Callable[..., Awaitable[BaseModel]]:
    """memstrata's errors reach the model as tool errors with their message (what to fix);
    the SDK would otherwise hide them behind "Error executing tool"."""

    @functools.wraps(fn)
    async def tool(*args: Any, **kwargs: Any) -> BaseModel:
        try:
            return await fn(*args, **kwargs)
        except EmbeddingMismatchError as exc:  # the server must restart: says so
            raise ToolError(restart_needed(exc, "mcp")) from None
        except StoreError as exc:  # whether calling again can help, as HTTP's 503 / 500
            raise ToolError(_store_failed(exc)) from None
        except MemstrataError as exc:
            raise ToolError(str(exc)) from None

    return tool


def _store_failed(exc: StoreError) -> str:
    """A store's failure as a tool error that tells the model whether to call again."""
    if exc.retryable:
        return f"{exc}. The store is unavailable for now: call the tool again in a few seconds"
    return (
        f"{exc}. Retrying will not help: the memory store needs its operator; carry on "
        "without memory and tell the user it is unavailable"
    )


class _Tool(Tool):
    """The SDK's tool, but arguments its schema refuses are answered in a line: each
    argument, what was wrong, what to send (the SDK gave pydantic's text: the internal
    model's name, the value echoed back whatever its size, a link to pydantic's docs)."""

    async def run(
        self, arguments: dict[str, Any], context: Context[Any, Any], convert_result: bool = False
    ) -> Any:
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ArgumentsError):
                raise
            # the input is read (a NaN is neither too large nor too small), never echoed
            errors = exc.__cause__.errors(include_url=False)
            message, _ = validation_message(errors, noun="argument", whole="arguments")
            # the cause kept: the SDK logs the names of the refused arguments from it
            raise ToolError(f"invalid arguments for {self.name}: {message}") from exc.__cause__


def _strict(tool: Tool) -> Tool:
    """Refuse arguments the schema does not declare (the SDK ignores them by default), so a
    model cannot slip in e.g. a ``tenant`` and believe it took effect; and read each value
    as the HTTP API's models do (strict: ``true`` is no number, ``"3"`` and ``2.0`` no
    integer; the SDK's lax models stored ``"importance": true`` as 1.0, which the HTTP API
    and the library refuse). A time is still an ISO 8601 string (``Time``)."""
    base = tool.fn_metadata.arg_model
    strict: type[ArgModelBase] = type(
        base.__name__,
        (base,),
        {
            "model_config": ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True),
            "__module__": base.__module__,
        },
    )
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool


class _RequireKey:
    """HTTP transport: no valid API key, no MCP (401 before the SDK sees the request; so
    for an ``Authorization`` or ``X-API-Key`` header given twice, session 31); a key
    over its rate limit (or its tenant over the tenant's) gets 429 with ``Retry-After``."""

    def __init__(
        self,
        app: ASGIApp,
        keys: KeyStore,
        limits: tuple[Limiter, Limiter | None] | None = None,
    ) -> None:
        self.app = app
        self.keys = keys
        self.limits = limits

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers: dict[str, str] = {}
            twice = None
            for k, v in scope.get("headers", []):
                name = k.decode("latin-1").lower()
                if name in CREDENTIALS and name in headers:
                    twice = name
                headers[name] = v.decode("latin-1")
            if twice is not None:  # the last one was taken, where the HTTP API took the first
                two = credentials_twice(twice)
                response = error_response(two.status, two.code, two.message, headers=two.headers)
                await response(scope, receive, send)
                return
            secret = bearer_of(headers)
            # as the HTTP routes do: the key from memory or off the loop, the limits on it
            key = await lookup(self.keys, secret) if secret else None
            refusal: ApiError | None = None
            if key is not None and self.limits is not None:
                refusal = await admit(*self.limits, key.id, key.tenant)
            if key is None:
                response = error_response(
                    401,
                    "unauthorized",
                    "this MCP endpoint needs a valid API key: "
                    "Authorization: Bearer ms_... (memstrata keys create --tenant T)",
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
            if refusal is not None:
                response = error_response(
                    refusal.status, refusal.code, refusal.message, headers=refusal.headers
                )
                await response(scope, receive, send)
                return
            # The SDK reads the whole body and logs a client that left midway (one cut at
            # its deadline, server/slow_clients.py) as an error with a traceback: it gets
            # the body read already, and a request whose client left is not run at all.
            receive, body = await whole_body_bytes(receive)
            if body is None:
                return
            scope.setdefault("state", {})[KEY_STATE] = key
            refused = _unknown_version(headers.get(VERSION_HEADER), body) or _refusal(body)
            if refused is not None:
                code, message, rid = refused
                error = ErrorData(code=code, message=message)
                answer = Response(
                    JSONRPCError(jsonrpc="2.0", id=rid, error=error).model_dump_json(
                        by_alias=True, exclude_unset=True
                    ),
                    status_code=400,
                    media_type="application/json",
                )
                await answer(scope, receive, send)
                return
        await self.app(scope, receive, send)


VERSION_HEADER = "mcp-protocol-version"


def _unknown_version(version: str | None, body: bytes) -> tuple[int, str, Any] | None:
    """A ``MCP-Protocol-Version`` header naming no protocol the SDK speaks: -32600 naming
    the versions it does (the request's id). The SDK sent every such request to its
    2026-07-28 entry, whose answer was about that protocol's ``params._meta`` envelope
    ("params._meta must be an object carrying ... envelope keys", -32602), which does not
    tell a client of another version what to send (session 33). No header at all is the
    SDK's (it means 2025-03-26), and 2026-07-28 stays its own."""
    if version is None or version in HANDSHAKE_PROTOCOL_VERSIONS + MODERN_PROTOCOL_VERSIONS:
        return None
    shown = json.dumps(version[:64]) + ("..." if len(version) > 64 else "")
    message = (
        f"Invalid Request: MCP-Protocol-Version {shown} is not one this server speaks; "
        f'send one of {", ".join(HANDSHAKE_PROTOCOL_VERSIONS)} (negotiated by "initialize")'
        f" or {', '.join(MODERN_PROTOCOL_VERSIONS)}, or no such header"
    )
    return INVALID_REQUEST, message, request_id(body)


def _refused_request(body: bytes | str) -> tuple[str, Any] | None:
    """Why the JSON-RPC message in ``body`` is refused as an "Invalid Request" (-32600), and
    the id to answer it with (None: it is not refused so). A body that is not JSON is the
    SDK's to answer (its parse error).

    - An object naming a key twice: the SDK (pydantic) kept the last value, so
      ``{"content": "a", "content": "b"}`` stored "b" and dropped "a" without a word; the
      HTTP API refuses it too (``server/strict_json.py``). Answered with the request's id
      when it has one.
    - Whatever :func:`invalid_request` refuses: JSON that is no JSON-RPC 2.0 message."""
    refused = _refusal(body)
    if refused is None or refused[0] != INVALID_REQUEST:
        return None
    return refused[1], refused[2]


def _refusal(body: bytes | str) -> tuple[int, str, Any] | None:
    """The JSON-RPC error code, message and id ``body`` is answered with before the SDK
    sees it: :func:`_refused_request`'s (-32600), else :func:`invalid_params`' (-32602,
    the request's id), else None."""
    try:
        parsed = json_keys.loads(body)
    except json_keys.DuplicateKeyError as exc:
        return INVALID_REQUEST, f"Invalid Request: {exc}; send each key once", request_id(body)
    except (ValueError, RecursionError):
        return None
    refused = invalid_request(parsed)
    if refused is not None:
        return INVALID_REQUEST, *refused
    wrong = invalid_params(parsed)
    if wrong is not None:
        return INVALID_PARAMS, wrong, parsed.get("id")
    return None


def invalid_params(parsed: Any) -> str | None:
    """What is wrong with the ``params`` of the request ``parsed`` (a JSON-RPC 2.0 request
    :func:`invalid_request` let through), in a line: each parameter, what was wrong, what to
    send; None when MCP's model of the method takes them, or the method is none of MCP's
    (the SDK answers "Method not found").

    The SDK answered such a request with -32602 "Invalid request parameters" and nothing
    else (over stdio and over HTTP; over HTTP params that are no object got "Validation
    error: " and pydantic's dump, id null): a client could not tell that ``"name": 5``,
    ``"arguments": "x"`` or a missing ``"name"`` was what it got wrong. The check is the
    SDK's own (the method's request model, as its handler validates the params), so it
    refuses nothing the SDK would take; a tool's own arguments are the tool's to check
    (``_Tool.run``: a tool error naming them). The value sent is never echoed."""
    if not isinstance(parsed, dict) or "id" not in parsed:  # a notification: no answer
        return None
    method = parsed.get("method")
    model = MONOLITH_REQUESTS.get(method) if isinstance(method, str) else None
    if model is None:
        return None
    body = {"method": method, **({"params": parsed["params"]} if "params" in parsed else {})}
    try:
        model.model_validate(body, by_name=False)
    except ArgumentsError as exc:
        errors = exc.errors(include_url=False)
    else:
        return None
    shown = []
    for err in errors:
        loc = tuple(err.get("loc", ()))
        loc = loc[1:] if loc[:1] == ("params",) else loc
        loc = tuple(str(part)[:80] for part in loc)
        if err.get("type") in _NOT_AN_OBJECT:  # pydantic names its model: say what to send
            err = {**err, "type": "dict_type", "msg": "Input should be a JSON object"}
        shown.append({**err, "loc": loc})
    message, _ = validation_message(shown, noun="parameter", whole="params")
    return f"Invalid params of {json.dumps(method)[:80]}: {message}"


_NOT_AN_OBJECT = frozenset({"model_type", "model_attributes_type", "dict_type"})


def invalid_request(parsed: Any) -> tuple[str, str | int | None] | None:
    """Why the parsed JSON ``parsed`` is no JSON-RPC 2.0 message MCP takes ("Invalid
    Request", -32600), and the id to answer with (the request's, when it has a valid one;
    else None); None when it is one, its ``params`` aside (the SDK answers params it cannot
    take with "Invalid params", -32602). The SDK answered all of these (over HTTP) with
    -32602 and its validator's dump, or (over stdio) not at all.

    - A batch (a JSON array): MCP has had none since protocol version 2025-06-18, and the
      SDK takes none.
    - An id MCP does not allow: MCP's ids are strings or integers; the SDK took a request
      with any other id (``1.5``, ``1e999``, ``null``, ``[1]``) for a notification and
      answered 202 with no body, so the client waited for an answer that never came.
    - An object that is no request, notification or response: ``"jsonrpc"`` other than
      ``"2.0"``, no ``"method"``, a method that is no string."""
    if isinstance(parsed, list):
        return (
            "Invalid Request: a batch (a JSON array of messages); MCP has had none since "
            "protocol version 2025-06-18: send each message on its own",
            None,
        )
    if not isinstance(parsed, dict):
        return (
            "Invalid Request: the message is no JSON object; send a JSON-RPC 2.0 request "
            '({"jsonrpc": "2.0", "id": 1, "method": ..., "params": {...}}) or notification',
            None,
        )
    rid = parsed.get("id") if "method" in parsed else None
    if "method" in parsed and "id" in parsed and not _valid_id(rid):
        shown = json.dumps(rid)[:40] if rid is not None else "null"
        return (
            f"Invalid Request: the id {shown} is not a string or an integer (MCP "
            "requests need one; a notification has no id)",
            None,
        )
    rid = rid if _valid_id(rid) else None
    if parsed.get("jsonrpc") != "2.0":
        shown = json.dumps(parsed.get("jsonrpc"))[:40] if "jsonrpc" in parsed else "missing"
        return f'Invalid Request: "jsonrpc" is {shown}; MCP speaks JSON-RPC "2.0"', rid
    envelope = {k: v for k, v in parsed.items() if k != "params"}  # params: the SDK's
    try:
        jsonrpc_message_adapter.validate_python(envelope, by_name=False)
    except ArgumentsError:
        return (
            "Invalid Request: not a JSON-RPC 2.0 request (a string or integer id, a string "
            "method), notification (a method, no id) or response (an id, a result or error)",
            rid,
        )
    return None


def _valid_id(rid: Any) -> bool:
    return isinstance(rid, str) or type(rid) is int


def request_id(body: bytes | str) -> str | int | None:
    """The id of the one request in ``body``, for an answer refusing it (None when there is
    none a client could match: a notification, a batch, an id of another kind)."""
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        return None
    rid = parsed.get("id") if isinstance(parsed, dict) and "method" in parsed else None
    return rid if _valid_id(rid) else None


def http_app(
    server: MCPServer[Any],
    keys: KeyStore,
    *,
    host: str = "127.0.0.1",
    limits: tuple[Limiter, Limiter | None] | None = None,
    max_body: int | None = None,
) -> Starlette:
    """The streamable HTTP app (at ``/mcp``) behind the API-key check and, when given, the
    rate limits (``limits``: per key, per tenant) and a body cap (``max_body`` bytes: 413
    above it, before the SDK reads the body into memory)."""
    app = server.streamable_http_app(host=host, stateless_http=True, json_response=True)
    app.add_middleware(_RequireKey, keys=keys, limits=limits)
    if max_body is not None:
        app.add_middleware(BodyLimit, limit=max_body, large_limit=max_body)
    return app


def mcp_endpoint(
    server: MCPServer[Any],
    keys: KeyStore,
    *,
    host: str = "127.0.0.1",
    limits: tuple[Limiter, Limiter | None] | None = None,
) -> tuple[ASGIApp, Callable[[], AbstractAsyncContextManager[None]]]:
    """The streamable HTTP endpoint as one ASGI app to route at ``/mcp`` of another app
    (``memstrata serve``), behind the API-key check and the server's rate limits (``limits``:
    per key, per tenant), and the context manager that must run for the app's lifetime (the
    SDK's session manager; the host app's lifespan enters it)."""
    app = server.streamable_http_app(host=host, stateless_http=True, json_response=True)
    [route] = [r for r in app.routes if isinstance(r, Route) and r.path == "/mcp"]
    return _RequireKey(route.app, keys, limits), server.session_manager.run
