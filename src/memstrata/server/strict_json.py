"""Request bodies whose JSON objects name a key twice are refused, not read as their last
value: ``{"content": "a", "content": "b"}`` stored "b" and dropped "a" without a word (and so
inside ``metadata``). Every router of the API is built with :class:`StrictJSONRoute`, whose
requests parse JSON with :func:`memstrata.json_keys.loads`; FastAPI answers the
``JSONDecodeError`` it raises as any malformed body (400 ``malformed_json``, the message
naming the key), before the route runs, so nothing is written."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

from memstrata import json_keys

__all__ = ["StrictJSONRequest", "StrictJSONRoute"]


class StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                self._json = json_keys.loads(body)
            except json_keys.DuplicateKeyError as exc:
                text = body.decode("utf-8", "replace")
                raise json.JSONDecodeError(f"{exc}; send each key once", text, 0) from None
        return self._json


class StrictJSONRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(StrictJSONRequest(request.scope, request.receive))

        return strict
