"""The stdio transport, with each line's JSON read once more for a key given twice.

The SDK parses a line with pydantic, which keeps the last value of a key named twice:
``"arguments": {"content": "a", "content": "b"}`` stored "b" and dropped "a" without a word.
The HTTP API and the MCP endpoint over HTTP refuse such a body (``server/strict_json.py``,
``server._refused_request``); here a line that names a key twice is answered with a JSON-RPC
"Invalid Request" error carrying its id and never reaches the SDK.

The SDK has no hook between a line and its parse, so this serves stdio as
``MCPServer.run_stdio_async`` does, with its public ``stdio_server(stdin=...)``: the lines
come through :class:`CheckedLines` (read from fd 0 as the SDK reads them: UTF-8, bad bytes
replaced). Given its ``stdin``, the SDK does not point fd 0 at the null device while it
serves (it still does so for fd 1): memstrata's tools never read stdin."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterable, AsyncIterator
from io import TextIOWrapper
from typing import Any, cast

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, ErrorData, JSONRPCError

from .. import json_keys
from .server import request_id

__all__ = ["CheckedLines", "run_stdio"]

log = logging.getLogger("memstrata.mcp")


class CheckedLines:
    """``lines`` without those whose JSON names a key twice: each is answered through the
    stream :meth:`answer_with` gives (the SDK's write stream, once it has made it)."""

    def __init__(self, lines: AsyncIterable[str]) -> None:
        self._lines = lines
        self._answers: Any = None
        self._ready = anyio.Event()

    def answer_with(self, stream: Any) -> None:
        self._answers = stream
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._lines:
            try:
                json_keys.loads(line)
            except json_keys.DuplicateKeyError as exc:
                await self._refuse(line, exc)
                continue
            except (ValueError, RecursionError):
                pass  # not JSON: the SDK's to answer, as before
            yield line

    async def _refuse(self, line: str, exc: json_keys.DuplicateKeyError) -> None:
        rid = request_id(line)
        if rid is None and '"id"' not in line:  # a notification: nothing to answer
            log.warning("an MCP notification was dropped: %s", exc)
            return
        await self._ready.wait()
        message = f"Invalid Request: {exc}; send each key once"
        error = ErrorData(code=INVALID_REQUEST, message=message)
        await self._answers.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=rid, error=error)))


async def run_stdio(server: MCPServer[Any]) -> None:
    """Serve ``server`` on stdin and stdout until stdin closes (``run_stdio_async``'s steps)."""
    text = TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    lines = CheckedLines(anyio.wrap_file(text))
    try:
        async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
            lines.answer_with(write_stream)
            # the SDK's own low-level server: MCPServer exposes no other way to run it on
            # streams (run_stdio_async makes them itself)
            lowlevel = server._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
    finally:
        text.detach()  # sys.stdin's buffer is not this wrapper's to close
