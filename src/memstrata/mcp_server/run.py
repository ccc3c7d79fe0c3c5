"""Start the MCP server on a transport with an identity from the configuration."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
from starlette.applications import Starlette
from starlette.routing import Mount

from ..aio import AsyncMemory
from ..errors import ValidationError
from ..server.backend import Backend
from ..server.factory import ServeConfig, open_server_memory
from ..server.keys import open_key_store
from ..server.limits import Limiter, MemoryCounters
from ..server.readiness import routes as readiness_routes
from .identity import Identity
from .server import build_mcp_server, http_app
from .stdio import run_stdio

__all__ = ["run_mcp"]

log = logging.getLogger("memstrata.mcp")


def run_mcp(
    config: ServeConfig,
    *,
    transport: str,
    key: str | None,
    tenant: str | None,
    user: str | None,
    session: str | None,
    agent: str | None,
    host: str = "127.0.0.1",
    port: int = 8001,
    shutdown_timeout: int | None = None,
    header_timeout: float = 0.0,
    body_timeout: float = 0.0,
    min_body_rate: float = 0.0,
    max_connections: int = 0,
    max_connections_per_ip: int = 0,
    on_start: Callable[[], None] | None = None,
) -> int:
    """Serve until stopped; the exit status (HTTP: :mod:`memstrata.server.run`'s, stdio: 0).
    The ``AsyncMemory`` is opened on the transport's event loop (stdio: the loop of
    ``anyio.run``; HTTP: uvicorn's, in the app's lifespan) and closed when the server
    stops. HTTP: ``header_timeout``, ``body_timeout``, ``min_body_rate``,
    ``max_connections`` and ``max_connections_per_ip`` are the deadlines and limits of
    :mod:`memstrata.server.slow_clients` (0: none). ``on_start`` is called once the
    configuration is accepted (the memory made, the key authenticated), just before the
    server serves: the CLI's start line (cli/start_line.py)."""
    memory = open_server_memory(config)
    keys = open_key_store(config.url)
    try:
        backend = Backend(memory)
        if transport == "stdio":
            caller: str | None = None
            roles: frozenset[str] = frozenset()
            if key is not None:
                found = keys.authenticate(key)
                if found is None:
                    raise ValidationError(
                        "--key is unknown or revoked; create one with "
                        "`memstrata keys create --tenant T`"
                    )
                tenant = found.tenant
                user = user or found.user
                if found.user is not None and found.user != user:
                    caller, roles = found.user, found.access_roles
            if not tenant or not user:
                raise ValidationError(
                    "the stdio MCP server needs a tenant and a user: --key "
                    "(or --tenant) and --user, or MEMSTRATA_API_KEY / "
                    "MEMSTRATA_USER"
                )
            # One stdio process is one conversation: its own session unless one is given.
            identity = Identity(
                tenant,
                user,
                session or f"mcp-{uuid.uuid4().hex[:12]}",
                agent,
                caller=caller,
                roles=roles,
            )
            server = build_mcp_server(backend, identity)
            if on_start is not None:
                on_start()

            async def stdio() -> None:
                async with memory:
                    await run_stdio(server, max_line=config.max_body)

            anyio.run(stdio)
            return 0
        from ..server.run import serve_until_stopped

        server = build_mcp_server(backend, Identity(None, user, session, agent, keys=keys))
        mcp = http_app(
            server, keys, host=host, limits=_rate_limits(config, memory), max_body=config.max_body
        )

        @asynccontextmanager
        async def lifespan(_app: Starlette) -> AsyncIterator[None]:
            async with memory, mcp.router.lifespan_context(mcp):
                yield

        # /healthz and /readyz beside the endpoint, outside its key check: what a load
        # balancer polls, answered as `memstrata serve` answers them
        app = Starlette(
            routes=[*readiness_routes(backend, "mcp"), Mount("/", app=mcp)], lifespan=lifespan
        )
        if on_start is not None:
            on_start()
        # HTTP: ``shutdown_timeout`` bounds the wait for open requests on SIGTERM (an MCP
        # client's event stream stays open: without it the process never exited)
        return serve_until_stopped(
            app,
            host=host,
            port=port,
            log_config=None,
            timeout_graceful_shutdown=shutdown_timeout,
            header_timeout=header_timeout,
            body_timeout=body_timeout,
            min_body_rate=min_body_rate,
            max_connections=max_connections,
            max_connections_per_ip=max_connections_per_ip,
        )
    finally:
        keys.close()


def _rate_limits(config: ServeConfig, memory: AsyncMemory) -> tuple[Limiter, Limiter | None]:
    """The HTTP transport's rate limits per key and per tenant, as ``memstrata serve``'s: kept
    in the store's counters, so every process on the store shares them."""
    return config.limits().limiters(counters=MemoryCounters(memory))
