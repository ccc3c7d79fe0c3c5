"""The stdio transport, with each line's JSON read once more for a key given twice, and
every line the SDK would drop unanswered answered.

The SDK parses a line with pydantic, which keeps the last value of a key named twice:
``"arguments": {"content": "a", "content": "b"}`` stored "b" and dropped "a" without a word.
The HTTP API and the MCP endpoint over HTTP refuse such a body (``server/strict_json.py``,
``server._refused_request``); here a line that names a key twice is answered with a JSON-RPC
"Invalid Request" error carrying its id and never reaches the SDK.

The SDK has no hook between a line and its parse, so this serves stdio as
``MCPServer.run_stdio_async`` does, with its public ``stdio_server(stdin=...)``: the lines
come through :class:`CheckedLines` (read from fd 0 as the SDK reads them: UTF-8, bad bytes
replaced). Given its ``stdin``, the SDK does not point fd 0 at the null device while it
serves (it still does so for fd 1): memstrata's tools never read stdin.

A line is bounded (session 29): :func:`bounded_lines` reads fd 0 in chunks and keeps at most
``max_line`` bytes of a line (``memstrata mcp --max-body``, 1 MiB by default: the largest
body the HTTP API and ``/mcp`` take). Before, a line was read whole before anything looked at
it, so a client that never sent a newline grew the server's memory without bound. A longer
line is answered at once, when it passes the limit, with a JSON-RPC "Invalid Request" error
(its id when the line begins with it, as SDK clients write requests; else ``null``); the
rest of it, up to its newline, is read and dropped, and the server goes on with the next
line: the client is told, and its session stays usable.

Every other line the SDK cannot take is answered too (session 31): its reader dropped a line
it could not parse or validate without a word, so a client that sent a cut line, a batch or
a request whose id is ``1.5`` waited for an answer that never came. As JSON-RPC 2.0 says,
and as ``/mcp`` answers the same body: not JSON, -32700 with id ``null``; JSON that is no
JSON-RPC 2.0 message (a batch, which MCP has not had since 2025-06-18; no object; another
``"jsonrpc"``; an id of another type; no method), -32600; params the SDK refuses, -32602
(with the request's id when it has one). A blank line is skipped.

Params are answered with what was wrong (session 32): the SDK answered params its model
refuses (``"name": 5``, ``"arguments": "x"``, no ``"name"``) and any request sent before
``initialize`` with -32602 "Invalid request parameters" and nothing more;
:func:`~memstrata.mcp_server.server.invalid_params` names the parameter and what to send,
as ``/mcp`` does, and a request before ``initialize`` is told to send it first.

Stdin's end is no cancellation (session 32): the SDK cancelled every request still running
when stdin closed, so ``memstrata mcp < calls.jsonl`` answered most of them "Connection
closed" (or not at all) while some of those writes had been stored. The lines now end only
once every request passed on has been answered (:meth:`CheckedLines.watching`)."""

from __future__ import annotations

import json
import logging
import re
import sys
from collections import Counter
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import Any, cast

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError as PydanticValidationError

from .. import json_keys
from .server import invalid_params, invalid_request, request_id

__all__ = ["MAX_LINE", "CheckedLines", "bounded_lines", "run_stdio"]

log = logging.getLogger("memstrata.mcp")

MAX_LINE = 1024 * 1024  # bytes of one message, its newline aside: the HTTP API's max_body
_CHUNK = 64 * 1024
# How long requests still running when stdin closes get to finish and be answered
DRAIN_SECONDS = 300
# The id of a request whose line is too long to parse, when it comes first (after
# "jsonrpc"), as the SDK's clients write it: never a key of a nested object.
_LEADING_ID = re.compile(
    rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,19}|"(?:[^"\\]|\\.){0,256}")'
)

# What the SDK's JSON parser refuses that Python's takes (an escaped lone surrogate):
# /mcp answers it with a parse error, so stdio does too
_UNPARSED = frozenset({"json_invalid", "string_unicode"})


def _leading_id(head: bytes) -> str | int | None:
    found = _LEADING_ID.match(head)
    if found is None:
        return None
    try:
        rid = json.loads(found.group(1))
    except ValueError:
        return None
    return rid if isinstance(rid, str | int) else None


async def bounded_lines(
    read: Callable[[int], Awaitable[bytes]],
    limit: int,
    refuse: Callable[[bytes], Awaitable[None]],
) -> AsyncIterator[str]:
    """The lines of the bytes ``read(n)`` gives (``b""``: the end), decoded as the SDK reads
    stdin (UTF-8, bad bytes replaced), each with its newline. A line over ``limit`` bytes
    is never held: ``refuse(its first bytes)`` is awaited once it passes the limit, and
    the rest of it is dropped up to its newline. Holds at most ``limit`` + one chunk."""
    line = bytearray()
    dropping = False
    while chunk := await read(_CHUNK):
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not dropping:
                if len(line) + len(piece) > limit:
                    head = bytes(line[:1024]) + piece[: max(0, 1024 - len(line))]
                    line.clear()
                    dropping = True
                    await refuse(head)
                else:
                    line += piece
            if end < 0:
                break
            if not dropping:
                yield (line + b"\n").decode("utf-8", errors="replace")
            line.clear()
            dropping = False
            start = end + 1
    if line and not dropping:  # the last line, without a newline
        yield line.decode("utf-8", errors="replace")


class CheckedLines:
    """``lines`` without blank ones and those the SDK would drop or take wrongly (not JSON,
    no JSON-RPC 2.0 message, params it refuses, a key named twice): each is answered through
    the stream :meth:`answer_with` gives (the SDK's write stream, once it has made it)."""

    def __init__(
        self, lines: AsyncIterable[str], served: Callable[[str], bool] | None = None
    ) -> None:
        """``served(method)``: whether the server has a handler for a request method (the
        SDK refuses those before ``initialize``); None: no such check."""
        self._lines = lines
        self._answers: Any = None
        self._ready = anyio.Event()
        self._served = served
        self._initialized = False
        self._pending: Counter[tuple[str, str | int]] = Counter()  # requests passed on
        self._idle = anyio.Event()
        self._watched = False  # whether answers are seen (:meth:`watching`)

    @classmethod
    def reading(
        cls,
        read: Callable[[int], Awaitable[bytes]],
        limit: int,
        served: Callable[[str], bool] | None = None,
    ) -> CheckedLines:
        """The lines of ``read`` (:func:`bounded_lines`), a line over ``limit`` bytes
        answered with an "Invalid Request" error and dropped."""

        async def refuse(head: bytes) -> None:
            await checked._too_long(head, limit)

        checked = cls(bounded_lines(read, limit, refuse), served)
        return checked

    def answer_with(self, stream: Any) -> None:
        self._answers = stream
        self._ready.set()

    def watching(self, stream: Any) -> _Watched:
        """``stream`` (the SDK's write stream), seeing each answer go out: the lines end,
        once stdin has, only when every request passed on has been answered."""
        self._watched = True
        return _Watched(stream, self._answered)

    def _answered(self, rid: Any) -> None:
        key = _key(rid)
        if key is not None and self._pending[key] > 0:
            self._pending[key] -= 1
            if self._pending[key] == 0:
                del self._pending[key]
            if not self._pending:
                self._idle.set()

    def _passing(self, parsed: dict[str, Any]) -> None:
        """Note a request passed on (its id; a cancelled one is not waited for)."""
        method = parsed.get("method")
        if method == "notifications/cancelled":
            params = parsed.get("params")
            if isinstance(params, dict):
                self._answered(params.get("requestId"))
            return
        key = _key(parsed.get("id")) if "method" in parsed else None
        if key is not None:
            self._pending[key] += 1
            self._idle = anyio.Event() if self._idle.is_set() else self._idle
        if method == "initialize":
            self._initialized = True

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._checked():
            yield line
        # stdin ended: the SDK cancels whatever is still running once the lines end
        if self._pending and self._watched:
            log.info("stdin closed; answering %d request(s) still running", len(self._pending))
            with anyio.move_on_after(DRAIN_SECONDS):
                await self._idle.wait()
            if self._pending:
                log.warning(
                    "stdin closed; %d request(s) unanswered after %d s were cancelled",
                    len(self._pending),
                    DRAIN_SECONDS,
                )

    async def _checked(self) -> AsyncIterator[str]:
        async for line in self._lines:
            if not line.strip():
                continue  # a blank line: no message (the SDK dropped it too)
            try:
                parsed = json_keys.loads(line)
            except json_keys.DuplicateKeyError as exc:
                await self._refuse(line, exc)
                continue
            except RecursionError:
                await self._parse_error("nested too deeply")
                continue
            except ValueError as exc:
                await self._parse_error(str(exc)[:200])
                continue
            refused = invalid_request(parsed)
            if refused is not None:
                await self._send(refused[1], refused[0])
                continue
            wrong = invalid_params(parsed)
            if wrong is not None:  # as /mcp answers it (the SDK: "Invalid request parameters")
                await self._send(request_id(line), wrong, INVALID_PARAMS)
                continue
            early = self._before_initialize(parsed)
            if early is not None:
                await self._send(request_id(line), early, INVALID_PARAMS)
                continue
            try:  # the SDK's own check of the line, which drops what fails it unanswered
                jsonrpc_message_adapter.validate_json(line, by_name=False)
            except PydanticValidationError as exc:
                if any(e["type"] in _UNPARSED for e in exc.errors()):  # as /mcp: -32700
                    await self._parse_error("a string escape that is no Unicode character")
                    continue
                method = json.dumps(parsed.get("method"))[:80]
                message = (
                    f'Invalid params: the "params" of {method} are not what MCP takes (a JSON '
                    "object of the method's parameters)"
                )
                await self._send(request_id(line), message, INVALID_PARAMS)
                continue
            if isinstance(parsed, dict):
                self._passing(parsed)
            yield line

    def _before_initialize(self, parsed: Any) -> str | None:
        """Why a request is refused before ``initialize`` (the SDK: -32602 "Invalid request
        parameters", whatever its params), or None."""
        if self._initialized or self._served is None or not isinstance(parsed, dict):
            return None
        method = parsed.get("method")
        if "id" not in parsed or method in ("initialize", "ping") or not isinstance(method, str):
            return None
        if not self._served(method):
            return None  # the SDK's "Method not found", as after initialize
        return (
            f"Invalid params: {json.dumps(method)[:80]} was sent before the session was "
            'initialized: send "initialize" first (then the "notifications/initialized" '
            "notification), as an MCP client does"
        )

    async def _parse_error(self, why: str) -> None:
        log.warning("an MCP line that is not JSON was dropped: %s", why)
        message = f"Parse error: the line is not JSON ({why}); send one JSON-RPC message a line"
        await self._send(None, message, PARSE_ERROR)

    async def _too_long(self, head: bytes, limit: int) -> None:
        rid = _leading_id(head)
        log.warning("an MCP message of over %d bytes was dropped (id %r)", limit, rid)
        message = (
            f"Invalid Request: the message is over {limit} bytes (memstrata mcp --max-body); "
            "it was dropped: send a smaller one (a long document in parts)"
        )
        await self._send(rid, message)

    async def _send(self, rid: str | int | None, message: str, code: int = INVALID_REQUEST) -> None:
        await self._ready.wait()
        error = ErrorData(code=code, message=message)
        await self._answers.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=rid, error=error)))

    async def _refuse(self, line: str, exc: json_keys.DuplicateKeyError) -> None:
        rid = request_id(line)
        if rid is None and '"id"' not in line:  # a notification: nothing to answer
            log.warning("an MCP notification was dropped: %s", exc)
            return
        await self._send(rid, f"Invalid Request: {exc}; send each key once")


def _key(rid: Any) -> tuple[str, str | int] | None:
    """A request id as a key (1 and "1" are two ids); None for no id MCP allows."""
    if isinstance(rid, str):
        return ("s", rid)
    if type(rid) is int:
        return ("i", rid)
    return None


class _Watched:
    """The SDK's write stream, telling :class:`CheckedLines` of each answer it carries."""

    def __init__(self, stream: Any, answered: Callable[[Any], None]) -> None:
        self._stream = stream
        self._answered = answered

    async def send(self, item: SessionMessage) -> None:
        await self._stream.send(item)
        if isinstance(item.message, JSONRPCResponse | JSONRPCError):
            self._answered(item.message.id)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _Watched:
        await self._stream.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return cast("bool | None", await self._stream.__aexit__(exc_type, exc, tb))


async def run_stdio(server: MCPServer[Any], *, max_line: int = MAX_LINE) -> None:
    """Serve ``server`` on stdin and stdout until stdin closes and every request read has
    been answered (``run_stdio_async``'s steps); a message (a line) of over ``max_line``
    bytes is refused and dropped."""
    stdin = anyio.wrap_file(sys.stdin.buffer)  # not closed: sys.stdin's, not this server's
    # the SDK's own low-level server: MCPServer exposes no other way to run it on streams
    # (run_stdio_async makes them itself)
    lowlevel = server._lowlevel_server

    def served(method: str) -> bool:
        return lowlevel.get_request_handler(method) is not None

    lines = CheckedLines.reading(stdin.read1, max_line, served)
    async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
        lines.answer_with(write_stream)
        answers = lines.watching(write_stream)
        await lowlevel.run(read_stream, answers, lowlevel.create_initialization_options())
