"""The FastAPI application: ``create_app(memory, keys)`` wires routes, limits and metrics."""

from __future__ import annotations

import inspect
import logging
import math
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from typing import Any

from fastapi import Depends, FastAPI, Request, Response
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.routing import Route
from starlette.types import ASGIApp

from .. import __version__
from ..aio import AsyncMemory
from ..errors import MissingDependencyError
from ..memory import Memory
from ..ratelimit import SharedRateLimiter, check_rate
from ..ratelimit_state import MAX_KEYS, check_max_keys
from .backend import Backend, MemoryBackend
from .dto import ErrorOut, Health
from .errors import install_handlers
from .key_cache import CachedKeys
from .keys import InMemoryKeyStore, KeyStore, SQLiteKeyStore, sqlite_path
from .limits import BodyLimit, Limiter, MemoryCounters, shared_limiter
from .observe import Metrics, RequestObserver
from .paths import EncodedSlashes
from .priority import PriorityGate, ReadsFirst
from .query_params import query_as_declared
from .readiness import readiness
from .routes import (
    admin,
    episodes,
    facts,
    key_memory,
    knowledge,
    maintenance,
    memories,
    portability,
    procedures,
    retrieval,
    sessions,
    tenant,
)
from .state import ServerState, state_of

__all__ = ["Limits", "create_app"]

log = logging.getLogger("memstrata.server")

# The routers in the order /openapi.json and the docs list them, and in the order a request
# is matched against their routes: FastAPI tries one route after another (a search went
# through 17 routes before its own), so the routes an agent calls every turn come first; a
# search or a context then costs 50-70 us less of the app's CPU (in-process, 2026-11-26).
DOCUMENTED = (
    sessions.router,
    memories.router,
    retrieval.router,
    key_memory.router,
    facts.router,
    episodes.router,
    procedures.router,
    knowledge.router,
    maintenance.router,
    portability.router,
    admin.router,
    tenant.router,
)
MATCHED = (
    retrieval.router,
    sessions.router,
    *(r for r in DOCUMENTED[1:] if r is not retrieval.router),
)


@dataclass(frozen=True, slots=True)
class Limits:
    """Request limits. ``rate`` 0 turns a rate limit off (NaN, a negative rate or inf is a
    ValidationError).

    Rate limits are shared by every process on the same store (see :func:`shared_limiter`);
    ``shared_batch`` is how many requests a process takes from the store's counters at
    once when there is no Redis (1: one store write per request, exact; 0: a tenth of the
    burst). A counter write is a committed transaction: 0.07 ms on SQLite, 10 ms on
    PostgreSQL (measured p50; the commit waits for the WAL flush), so one per request would
    cost PostgreSQL more than the search does."""

    rate: float = 50.0  # requests/s per key, on average
    burst: int = 100  # requests a key may send at once
    max_body: int = 1024 * 1024  # bytes per request
    max_import_body: int = 64 * 1024 * 1024
    tenant_rate: float = 0.0  # requests/s per tenant, all its keys together (0: no limit)
    tenant_burst: int = 0  # 0: two seconds' worth of tenant_rate
    shared_batch: int = 0
    # Requests of the user routes running at once before the rest wait, reads first
    # (server/priority.py); 0: no gate, arrival order. `memstrata serve` picks it by
    # deployment (priority.default_slots).
    reads_first: int = 0
    # Keys (API keys, tenants) a process keeps rate-limit state for at most (session 29): the
    # least recently used past it are dropped (README, "Running for months").
    max_keys: int = MAX_KEYS

    def __post_init__(self) -> None:
        # NaN or a negative rate had served with no limit, without a word (rate <= 0 is
        # false for NaN, and the tenant limiter is built only for a rate > 0)
        check_rate(self.rate, "rate")
        check_rate(self.tenant_rate, "tenant_rate")
        check_max_keys(self.max_keys)

    @property
    def tenant_burst_or_default(self) -> int:
        return self.tenant_burst or max(1, math.ceil(2 * self.tenant_rate))

    def batch_for(self, burst: int) -> int:
        return self.shared_batch or max(1, burst // 10)

    def limiters(self, **where: Any) -> tuple[Limiter, Limiter | None]:
        """The rate limiters per key and per tenant (None: no tenant limit), kept where
        :func:`~memstrata.server.limits.shared_limiter`'s ``where`` arguments say."""

        def limiter(rate: float, burst: int) -> Limiter:
            return shared_limiter(
                rate, burst, batch=self.batch_for(burst), max_keys=self.max_keys, **where
            )

        tenant = self.tenant_rate > 0
        return limiter(self.rate, self.burst), (
            limiter(self.tenant_rate, self.tenant_burst_or_default) if tenant else None
        )


def _sqlite_job_counts(url: Callable[[], str]) -> Callable[[], Mapping[str, int] | None]:
    """The jobs per status of the SQLite store at ``url()`` (read when the metrics are
    scraped: an ``AsyncMemory``'s store exists once the server has opened it), else None."""

    def counts() -> Mapping[str, int] | None:
        try:
            path = sqlite_path(url())
        except Exception:  # not open yet (or closed): no store to read
            return None
        if not path:
            return None
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2.0)
        try:
            return dict(conn.execute("SELECT status, count(*) FROM jobs GROUP BY status"))
        finally:
            conn.close()

    return counts


def create_app(
    memory: AsyncMemory | Memory | MemoryBackend,
    keys: KeyStore,
    *,
    limits: Limits = Limits(),
    on_close: Callable[[], None | Awaitable[None]] | None = None,
    mcp: bool = True,
    host: str = "127.0.0.1",
    redis: Any = None,
    redis_prefix: str = "memstrata",
    async_redis: Callable[[], Awaitable[Any]] | None = None,
) -> FastAPI:
    """The HTTP API over ``memory``: an ``AsyncMemory`` (each call awaited on the server's
    event loop; the app's lifespan opens it there at startup, so its background task and
    connection pools live on that loop: under Starlette's ``TestClient`` enter the client
    with ``with``), a sync ``Memory`` (each call on a worker thread) or any
    :class:`~memstrata.server.backend.MemoryBackend`.

    ``on_close`` (a function or a coroutine function, e.g. ``memory.aclose``) runs when the
    server shuts down (closing the memory and the key store); the app closes nothing else.
    With ``mcp`` (and the ``mcp`` extra installed) the MCP server's streamable HTTP endpoint
    is served at ``/mcp`` with the same keys and rate limits; ``host`` is the address
    served, for the SDK's DNS-rebinding protection (on for 127.0.0.1/localhost). The rate
    limits live in ``redis`` (a connected client) when given, else in the store's counters
    (shared by every process on the store), else in this process; ``async_redis`` opens a
    ``redis.asyncio`` client of the same Redis at startup, on the server's loop, which the
    limits then ask with no worker thread (closed when the server stops)."""
    native = memory if isinstance(memory, AsyncMemory) else None
    backend = Backend(memory) if isinstance(memory, Memory | AsyncMemory) else memory
    store: Any = memory.store if isinstance(memory, Memory) else None
    counters = MemoryCounters(native) if native is not None else None

    key_limiter, tenant_limiter = limits.limiters(
        store=store, counters=counters, redis=redis, prefix=redis_prefix
    )
    mcp_run = _mount_mcp(backend, keys, host, key_limiter, tenant_limiter) if mcp else None

    shared = [x for x in (key_limiter, tenant_limiter) if isinstance(x, SharedRateLimiter)]

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        client: Any = None
        try:
            if native is not None:  # on this loop: its background task and pools live here
                await native.open()
            if async_redis is not None and shared:  # bound to this loop, like the pools
                client = await async_redis()
                for limiter in shared:
                    limiter.use_async_redis(client)
            if mcp_run is None:
                yield
            else:
                async with mcp_run[1]():
                    yield
        finally:
            if client is not None:
                for limiter in shared:
                    limiter.use_async_redis(None)
                await client.aclose()
            if on_close is not None:
                done = on_close()
                if inspect.isawaitable(done):
                    await done

    job_counts: Callable[[], Mapping[str, int] | None] = lambda: None  # noqa: E731
    if isinstance(memory, Memory | AsyncMemory):
        job_counts = _sqlite_job_counts(lambda: str(memory.store.url))
    app = FastAPI(
        title="memstrata",
        version=__version__,
        description="Layered long-term memory for LLM agents. Every /v1 path needs an API key "
        "(`Authorization: Bearer ms_...`); the key decides the tenant, the path the user.",
        docs_url="/docs",
        redoc_url=None,
        openapi_url="/openapi.json",
        lifespan=lifespan,
    )
    local = (SQLiteKeyStore, InMemoryKeyStore)  # a local file or a dict: no waiting
    store_keys = keys.keys if isinstance(keys, CachedKeys) else keys
    app.state.memstrata = ServerState(
        backend,
        keys,
        key_limiter,
        job_counts,
        tenant_limiter,
        blocking_keys=not isinstance(store_keys, local),
    )
    metrics = Metrics(job_counts)
    app.state.memstrata.cut_exports = lambda code: metrics.cut_exports.labels(code).inc()
    install_handlers(app)
    for router in MATCHED:  # a query name the route does not read, or repeated: 422
        app.include_router(router, dependencies=[Depends(query_as_declared)])
    _ops_routes(app, metrics)
    if mcp_run is not None:
        app.router.routes.append(Route("/mcp", endpoint=mcp_run[0]))
    ui = resources.files("memstrata.server") / "ui"
    app.mount("/ui", StaticFiles(directory=str(ui), html=True), name="ui")
    app.openapi_schema = None
    _complete_schema(app)
    if limits.reads_first > 0:
        gate = PriorityGate(limits.reads_first, search_lane=1)
        metrics.watch(gate)
        app.add_middleware(ReadsFirst, gate=gate)
    app.add_middleware(
        BodyLimit,
        limit=limits.max_body,
        large_limit=limits.max_import_body,
        large_suffixes=("/import",),
    )
    app.add_middleware(RequestObserver, metrics=metrics)
    app.add_middleware(EncodedSlashes)  # outermost: every layer routes ids holding "/"
    return app


def _mount_mcp(
    backend: MemoryBackend,
    keys: KeyStore,
    host: str,
    key_limiter: Limiter,
    tenant_limiter: Limiter | None,
) -> tuple[ASGIApp, Callable[[], AbstractAsyncContextManager[None]]] | None:
    """The MCP endpoint over the same backend and keys, or None without the ``mcp`` extra."""
    from ..mcp_server import require_mcp_extra

    try:
        require_mcp_extra()
    except MissingDependencyError as exc:
        log.info("no MCP endpoint at /mcp: %s", exc)
        return None
    from ..mcp_server.identity import Identity
    from ..mcp_server.server import build_mcp_server, mcp_endpoint

    server = build_mcp_server(backend, Identity(keys=keys))
    return mcp_endpoint(server, keys, host=host, limits=(key_limiter, tenant_limiter))


def _ops_routes(app: FastAPI, metrics: Metrics) -> None:
    @app.get("/healthz", response_model=Health, tags=["operations"], summary="The process is up")
    async def healthz() -> Health:
        return Health(status="ok")

    @app.get(
        "/readyz",
        response_model=Health,
        tags=["operations"],
        summary="The store answers (503 when it does not)",
        responses={503: {"model": ErrorOut, "description": "Store unavailable"}},
    )
    async def readyz(request: Request) -> Response:
        return await readiness(state_of(request.app).backend, "serve")

    @app.get(
        "/metrics",
        tags=["operations"],
        summary="Prometheus metrics",
        response_class=Response,
        responses={
            200: {
                "content": {"text/plain": {"schema": {"type": "string"}}},
                "description": "Prometheus text format",
            }
        },
    )
    async def metrics_endpoint() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse("/ui/")


def _complete_schema(app: FastAPI) -> None:
    """List the paths in :data:`DOCUMENTED` order (not the order they are matched in) and
    register ErrorOut in the OpenAPI components (the routes' error responses refer to it)."""
    original = app.openapi

    def openapi() -> dict[str, object]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = original()
        paths: dict[str, Any] = schema["paths"]
        listed = [getattr(r, "path", "") for router in DOCUMENTED for r in router.routes]
        schema["paths"] = {p: paths[p] for p in dict.fromkeys(listed) if p in paths} | {
            p: item for p, item in paths.items() if p not in listed
        }
        comps = schema.setdefault("components", {}).setdefault("schemas", {})
        for model in (ErrorOut,):
            js = model.model_json_schema(ref_template="#/components/schemas/{model}")
            for name, sub in js.pop("$defs", {}).items():
                comps.setdefault(name, sub)
            comps.setdefault(model.__name__, js)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
