"""Ids in URL paths may hold any character, ``/`` and ``%`` included.

Starlette routes on the percent-decoded path, so an id holding ``/`` — sent as ``%2F``, as
clients and the inspector encode it (``encodeURIComponent``) — became two path segments and
matched no route: a record imported with the id ``conv-1/turn-3``, a user ``org/alice`` or
a fact key ``likes_ac/dc`` could not be read, edited or deleted over HTTP (404 "no such
path"). :class:`EncodedSlashes` rebuilds the routed path from the raw one so that an
encoded ``/`` stays inside its segment (as ``%2F``, and a ``%`` as ``%25``), and every id
parameter (:data:`IdPath` and the aliases built on it) decodes those two back.

A percent-escape that is not UTF-8 (``%E9`` for "é" in Latin-1) was decoded as U+FFFD, so
``/v1/users/caf%E9`` and ``/v1/users/caf%E8`` named the same user "caf\ufffd" and read each
other's memories; such a path or query string is refused (400) instead.
"""

from __future__ import annotations

import re
from typing import Annotated, Any
from urllib.parse import unquote, unquote_to_bytes

from fastapi import Path
from pydantic import BeforeValidator
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["Decoded", "EncodedSlashes", "IdPath", "not_utf8", "routed_path"]

_ESCAPED = re.compile("%(25|2F)")


def routed_path(raw: bytes) -> str:
    """The path to route on: each segment of the raw path decoded, with a ``/`` or ``%``
    inside a segment written ``%2F`` / ``%25`` so it stays in its segment."""
    return "/".join(
        unquote(seg).replace("%", "%25").replace("/", "%2F")
        for seg in raw.decode("latin-1").split("/")
    )


def _decoded(value: Any) -> Any:
    """A path parameter as the client meant it (``%2F`` → ``/``, ``%25`` → ``%``)."""
    if isinstance(value, str):
        return _ESCAPED.sub(lambda m: "%" if m.group(1) == "25" else "/", value)
    return value


# Put first in a path parameter's ``Annotated``: the length is checked on the decoded id.
Decoded = BeforeValidator(_decoded)
IdPath = Annotated[str, Decoded, Path(min_length=1, max_length=256)]  # 1-256 of any character


class EncodedSlashes:
    """ASGI middleware: route on :func:`routed_path` of the request's raw path."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path") if scope["type"] in ("http", "websocket") else None
        if scope["type"] == "http":
            bad = not_utf8(raw or b"", "path") or not_utf8(scope.get("query_string"), "query")
            if bad:
                from .errors import error_response

                await error_response(400, "bad_encoding", bad)(scope, receive, send)
                return
        if raw and b"%" in raw:  # nothing encoded: the decoded path is the routed one
            scope = {**scope, "path": routed_path(raw.split(b"?", 1)[0])}
        await self.app(scope, receive, send)


def not_utf8(raw: bytes | None, part: str) -> str | None:
    """Why the URL's ``part`` cannot be read as the client meant it, or ``None``: every
    percent-escape must be UTF-8, or two different ids would decode to the same one."""
    if not raw or b"%" not in raw:
        return None
    try:
        unquote_to_bytes(raw.replace(b"+", b" ")).decode("utf-8")
    except UnicodeDecodeError as exc:
        return (
            f"the request's {part} holds percent-escapes that are not UTF-8 (byte "
            f"{exc.object[exc.start]:#04x}): encode ids as UTF-8 before percent-encoding them, "
            "as encodeURIComponent and urllib.parse.quote do"
        )
    return None
