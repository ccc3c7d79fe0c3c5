"""Ids in URL paths may hold any character, ``/`` and ``%`` included.

Starlette routes on the percent-decoded path, so an id holding ``/`` — sent as ``%2F``, as
clients and the inspector encode it (``encodeURIComponent``) — became two path segments and
matched no route: a record imported with the id ``conv-1/turn-3``, a user ``org/alice`` or
a fact key ``likes_ac/dc`` could not be read, edited or deleted over HTTP (404 "no such
path"). :class:`EncodedSlashes` rebuilds the routed path from the raw one so that an
encoded ``/`` stays inside its segment (as ``%2F``, and a ``%`` as ``%25``), and every id
parameter (:data:`IdPath` and the aliases built on it) decodes those two back.
"""

from __future__ import annotations

import re
from typing import Annotated, Any
from urllib.parse import unquote

from fastapi import Path
from pydantic import BeforeValidator
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["Decoded", "EncodedSlashes", "IdPath", "routed_path"]

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
        if raw and b"%" in raw:  # nothing encoded: the decoded path is the routed one
            scope = {**scope, "path": routed_path(raw.split(b"?", 1)[0])}
        await self.app(scope, receive, send)
