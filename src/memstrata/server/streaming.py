"""A streamed answer that stops between two chunks when its client leaves.

Starlette's ``StreamingResponse`` watches for the client's disconnect and then cancels the
task making the body, wherever it is. An export makes its chunks from a database cursor: a
cancel in the middle of a page's query made psycopg send the server a cancel request,
which anyio's cancel scope (level-triggered: every later ``await`` in it is cancelled
again) interrupted in turn, so psycopg closed the connection ("query cancellation
interrupted (CancelledError): closing connection", then the pool's "discarding closed
connection"): a warning pair and a new connection for each export a client cut (session
22). Here the disconnect only sets a flag: the chunk being made is finished, none is made
after it, and the iterator is closed (``aclose``), so its transaction ends and its
connection goes back to the pool as it would at the end.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

__all__ = ["StopsBetweenChunks", "aclose"]


async def aclose(chunks: AsyncIterator[Any]) -> None:
    """Close an async generator (its ``finally`` blocks run now, not when it is collected),
    shielded from a cancellation of the caller; other iterators have nothing to close."""
    close = getattr(chunks, "aclose", None)
    if close is not None:
        with anyio.CancelScope(shield=True):
            await close()


class StopsBetweenChunks(StreamingResponse):
    """``StreamingResponse`` over an async iterator of chunks, stopped between two chunks
    (and the iterator closed) when the client disconnects; otherwise the same."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        gone = anyio.Event()
        chunks: AsyncIterator[Any] = aiter(self.body_iterator)

        async def until_gone() -> AsyncGenerator[Any, None]:
            try:
                while not gone.is_set():
                    try:
                        chunk = await anext(chunks)
                    except StopAsyncIteration:
                        return
                    if gone.is_set():  # nobody to send it to
                        return
                    yield chunk
            finally:
                await aclose(chunks)

        async def listen() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        self.body_iterator = body = until_gone()
        async with anyio.create_task_group() as group:
            group.start_soon(listen)
            try:
                await self.stream_response(send)
            finally:
                group.cancel_scope.cancel()  # stop listening
                await aclose(body)  # if sending failed midway
        if self.background is not None:
            await self.background()
