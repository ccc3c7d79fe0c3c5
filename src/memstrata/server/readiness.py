"""``/healthz`` and ``/readyz``: one answer for ``memstrata serve`` and for
``memstrata mcp --transport http``, so a load balancer checks either the same way.

``/healthz``: the process is up. ``/readyz``: the store answers and holds vectors of this
server's embedding model; otherwise 503 ``not_ready`` — with ``Retry-After`` when the
store may come back by itself (``StoreError.retryable``, or any other failure to answer),
without it when someone must act first: a restart (another process re-embedded the store)
or the store's operator (a damaged or read-only file, a full disk).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..errors import EmbeddingMismatchError, StoreError
from .backend import MemoryBackend
from .errors import STORE_RETRY_SECONDS, error_response, restart_needed, store_answer

__all__ = ["health", "readiness", "routes"]


def health() -> JSONResponse:
    return JSONResponse({"status": "ok"})


async def readiness(backend: MemoryBackend, command: str) -> Response:
    """``/readyz``'s answer for a server started by ``memstrata <command>``."""
    try:
        await backend.ready()
    except EmbeddingMismatchError as exc:  # not until restarted: no Retry-After
        return error_response(503, "not_ready", restart_needed(exc, command))
    except Exception as exc:  # any failure to answer means "not ready"
        if isinstance(exc, StoreError) and not exc.retryable:  # not by waiting: no Retry-After
            return error_response(503, "not_ready", f"the store failed: {store_answer(exc)[2]}")
        return error_response(
            503,
            "not_ready",
            f"the store does not answer: {exc}",
            headers={"Retry-After": str(STORE_RETRY_SECONDS)},
        )
    return JSONResponse({"status": "ready"})


def routes(backend: MemoryBackend, command: str) -> list[Route]:
    """Both, as Starlette routes (no key needed: a load balancer has none)."""

    async def healthz(_request: Request) -> Response:
        return health()

    async def readyz(_request: Request) -> Response:
        return await readiness(backend, command)

    return [Route("/healthz", healthz), Route("/readyz", readyz)]
