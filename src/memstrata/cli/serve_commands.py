"""``memstrata serve``, ``memstrata mcp`` and ``memstrata keys``: the service commands.

FastAPI, uvicorn and the MCP SDK are imported inside the commands, so ``memstrata --help``
stays fast and a missing extra is a clear error naming the ``pip install`` to run.
"""

from __future__ import annotations

import math
import os
from typing import Annotated, Any

import typer

from ..errors import MemstrataError
from .options import DoneJobsDays, Settings, command_done_jobs_days, console, emit, fail

__all__ = ["register"]

Json = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def _finite(value: float) -> float:
    """A FloatRange lets NaN through (every comparison with it is false): a NaN deadline
    or cache time served with that protection silently off."""
    if not math.isfinite(value):
        raise typer.BadParameter(f"must be a finite number, got {value}")
    return value


RateLimit = Annotated[
    float,
    typer.Option(
        help="Requests/s per API key, shared by every process on the store (0: no limit)."
    ),
]
Burst = Annotated[int, typer.Option(min=1, help="Requests a key may send at once.")]
TenantRateLimit = Annotated[
    float, typer.Option(help="Requests/s per tenant, all its keys together (0: no limit).")
]
TenantBurst = Annotated[
    int, typer.Option(help="Requests a tenant may send at once (0: 2 s of its rate).")
]
UserQuota = Annotated[
    str,
    typer.Option(
        help="Quota of every user, e.g. records=1000,embeddings_per_day=5000,"
        "context_tokens=4000 (any subset; over it: refused, nothing written).",
    ),
]
TenantQuota = Annotated[
    str, typer.Option(help="Quota of each tenant's total (records, embeddings per day).")
]

# uvicorn's defaults are 5 s for both. An idle keep-alive connection closed by the server
# at the moment a client (httpx also expires them at 5 s) sends on it is a reset request;
# a process too busy to answer the supervisor's ping within 5 s is killed with every
# connection it holds.
KEEP_ALIVE_S = 75
WORKER_TIMEOUT_S = 60
# A day: beyond it a timeout is a typo (multiprocessing's poll of the supervisor's ping
# raised OverflowError at 10**11 s). Below 0 uvicorn closed every connection after its
# first answer; a worker timeout of 0 or less killed every process as hung, again and again.
MAX_TIMEOUT_S = 86_400
# uvicorn waits for every open connection on SIGTERM, with no limit: a client that sent half
# a body, or reads an export slowly, kept the process from exiting (still up 60 s after the
# signal, session 21). Requests still running after this are cancelled (a write not yet
# committed is rolled back, never acknowledged); below an orchestrator's usual 30 s grace.
SHUTDOWN_TIMEOUT_S = 20
APP_FACTORY = "memstrata.server.factory:app_from_env"
# Deadlines for clients that stall (server/slow_clients.py). nginx's client_body_timeout and
# send_timeout are 60 s; its client_header_timeout is 60 s too, but a client sends its
# headers in one packet: 10 s leaves a slow link ample time and lets a slow-loris hold each
# connection it opens 6x less long.
HEADER_TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 60.0
# A body's minimum average rate once it has been coming for --body-timeout s: Apache
# mod_reqtimeout's MinRate default. Below a 9,600 bit/s modem (1,200 bytes/s) and a GPRS
# uplink (2-5 kB/s), so no working link is cut; a trickler must spend 500 bytes/s per
# connection it holds.
MIN_BODY_RATE = 500.0
# Connections a process holds open: nginx's worker_connections is 512-1024. The process's
# descriptor limit is raised to fit them (and the store's) where the hard limit allows.
MAX_CONNECTIONS = 1000

ShutdownTimeout = Annotated[
    int,
    typer.Option(
        min=0,
        help="Seconds a stopping process (SIGTERM) lets running requests finish; then they "
        "are cancelled (an uncommitted write is rolled back, never acknowledged) and it exits.",
    ),
]

LOG_LEVELS = ("debug", "info", "warning", "error")


def _log_level(value: str) -> str:
    """One of :data:`LOG_LEVELS` (any case); another was a traceback from ``logging`` once
    the server had started to set itself up ("Unknown level: 'LOUD'")."""
    if value.lower() not in LOG_LEVELS:
        raise typer.BadParameter(f"must be one of {', '.join(LOG_LEVELS)}, got {value!r}")
    return value.lower()


LogLevel = Annotated[str, typer.Option(callback=_log_level, help="debug, info, warning, error.")]
MAX_BODY = 1024 * 1024
MaxBody = Annotated[int, typer.Option(min=1, help="Largest request body, bytes (413 above).")]
HeaderTimeout = Annotated[
    float,
    typer.Option(
        min=0.0,
        callback=_finite,
        help="Seconds a client has to send a request's headers (from the connection opening, "
        "or the request's first byte); then 408 and the connection is closed (0: no limit).",
    ),
]
BodyTimeout = Annotated[
    float,
    typer.Option(
        min=0.0,
        callback=_finite,
        help="Seconds a request body may pause between two chunks (a slow upload that moves "
        "is never cut), and a client may take nothing of an answer; then 408 (or the "
        "connection closed) (0: no limit).",
    ),
]

MinBodyRate = Annotated[
    float,
    typer.Option(
        min=0.0,
        callback=_finite,
        help="Bytes/s a request body must average once it has been coming for --body-timeout "
        "s (server hold-ups not counted); then 408 and the connection is closed (0: no "
        "minimum).",
    ),
]
MaxConnections = Annotated[
    int,
    typer.Option(
        min=0,
        help="Connections a process keeps open; one more closes the one idle longest, or is "
        "answered 503 when none is idle (0: no cap).",
    ),
]

# Keys (API keys, tenants) a process keeps rate-limit state for (session 29's bound; README,
# "Running for months"): reachable from the library only (Limits(max_keys=)) until session 30.
# ratelimit_state.MAX_KEYS, written here so that `memstrata --help` imports no store code.
MAX_KEYS = 100_000
MaxKeys = Annotated[
    int,
    typer.Option(
        min=1,
        help="API keys (and tenants) a process keeps rate-limit state for; past it the least "
        "recently used is dropped (the count stays in the store or Redis; a key dropped "
        "with tokens it held may take a batch again).",
    ),
]

# Rows of users' vector matrices the store keeps in the process for searches (SQLite and
# PostgreSQL; memory:// has no such cache). store.vector_bound.VECTOR_CACHE_ROWS, written here
# so that `memstrata --help` imports no store code (tests/vcache30 check they agree).
VECTOR_CACHE_ROWS = 500_000
VectorCacheRows = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="Rows of users' vectors the store keeps in the process for searches (each "
        "dimensions x 4 bytes: 500,000 is ~0.75 GB at 384 dimensions); past it the least "
        "recently searched users are dropped and read again at their next search. Default: "
        "memstrata's --vector-cache-rows (MEMSTRATA_VECTOR_CACHE_ROWS), else 500,000.",
        show_default=False,
    ),
]

MaxConnectionsPerIp = Annotated[
    int,
    typer.Option(
        min=0,
        help="Connections one client address may keep open to a process; one more closes "
        "that address's connection idle longest, or is answered 429 when none is idle (0: "
        "no cap). Behind a proxy every client has the proxy's address: leave it 0 there.",
    ),
]

keys_app = typer.Typer(
    help="API keys: each names a tenant; the HTTP and MCP servers need one.", no_args_is_help=True
)


def _key_row(k: Any) -> dict[str, Any]:
    return {
        "id": k.id,
        "tenant": k.tenant,
        "role": k.role.value,
        "name": k.name,
        "created_at": k.created_at.isoformat(),
        "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None,
        "user": k.user,
        "roles": sorted(k.roles),
    }


def _key_store(settings: Settings) -> Any:
    from ..server.keys import open_key_store, sqlite_path
    from ..store.url import redact_url

    scheme = settings.url.partition("://")[0].lower()
    if sqlite_path(settings.url) is None and scheme not in ("postgresql", "postgres"):
        fail(
            f"keys are kept in the memory store's database; {redact_url(settings.url)} is not "
            "one (use --db sqlite:///path.db or --db postgresql://...)"
        )
    try:
        return open_key_store(settings.url)
    except MemstrataError as exc:
        fail(str(exc))


@keys_app.command("create")
def keys_create(
    ctx: typer.Context,
    tenant: Annotated[str, typer.Option(help="The tenant the key acts for.")],
    role: Annotated[
        str, typer.Option(help="member or admin (admin may also purge, import and run jobs).")
    ] = "member",
    name: Annotated[str, typer.Option(help="A label for listings.")] = "",
    user: Annotated[
        str | None,
        typer.Option(
            "--for-user",
            help="Bind the key to this user: it owns their memory and only reads what other "
            "users shared with it.",
        ),
    ] = None,
    access_role: Annotated[
        list[str] | None,
        typer.Option(
            "--access-role", help="An access-control role of the key (records' allowed_roles)."
        ),
    ] = None,
    as_json: Json = False,
) -> None:
    """Create an API key; the key is printed once and stored only as a hash."""
    store = _key_store(ctx.obj)
    try:
        new = store.create(tenant, role=role, name=name, user=user, roles=access_role or ())
    except MemstrataError as exc:
        fail(str(exc))
    finally:
        store.close()
    if not emit({"key": new.secret, **_key_row(new.key)}, as_json):
        console.print(
            f"API key for tenant [bold]{new.key.tenant}[/bold] ({new.key.role.value}, "
            f"id {new.key.id}); shown only now:"
        )
        console.print(new.secret, highlight=False, soft_wrap=True)


@keys_app.command("list")
def keys_list(
    ctx: typer.Context,
    tenant: Annotated[str | None, typer.Option(help="Only this tenant's keys.")] = None,
    as_json: Json = False,
) -> None:
    """List API keys (ids, tenants, roles; never the keys)."""
    store = _key_store(ctx.obj)
    try:
        rows = [_key_row(k) for k in store.list(tenant)]
    except MemstrataError as exc:
        fail(str(exc))
    finally:
        store.close()
    if emit(rows, as_json):
        return
    from rich.table import Table

    table = Table(title=f"{len(rows)} API keys")
    cols = ("id", "tenant", "role", "user", "name", "created_at", "revoked_at")
    for col in cols:
        table.add_column(col)
    for r in rows:
        table.add_row(*(str(r[c] or "") for c in cols))
    console.print(table)


@keys_app.command("revoke")
def keys_revoke(
    ctx: typer.Context,
    key_id: Annotated[str, typer.Argument(help="The key's id.")],
    as_json: Json = False,
) -> None:
    """Revoke an API key: every later request with it gets 401."""
    store = _key_store(ctx.obj)
    try:
        key = store.revoke(key_id)
    except MemstrataError as exc:
        fail(str(exc))
    finally:
        store.close()
    if not emit(_key_row(key), as_json):
        console.print(f"key {key.id} of tenant {key.tenant} revoked")


def _vector_cache_rows(given: int | None, settings: Settings) -> int:
    """The command's own ``--vector-cache-rows``, else the global one (or its variable)."""
    if given is not None:
        return given
    return settings.vector_cache_rows or VECTOR_CACHE_ROWS


def _start_line(config: Any, command: str, listen: str, listen_text: str, workers: int) -> Any:
    """The command's start line (start_line.py), from the configuration it serves."""
    from .start_line import StartLine

    return StartLine(
        command,
        url=config.url,
        listen=listen,
        listen_text=listen_text,
        workers=workers,
        done_jobs_days=config.done_jobs_days,
        vector_cache_rows=config.vector_cache_rows,
    )


def _serve_line(config: Any, host: str, port: int, workers: int) -> Any:
    from .start_line import http_address

    address = http_address(host, port)
    paths = "docs: /docs, inspector: /ui" + (", MCP: /mcp" if config.mcp else "")
    return _start_line(config, "serve", address, f"listening on {address} ({paths})", workers)


def _serve_config(
    settings: Settings,
    *,
    rate_limit: float = 50.0,
    burst: int = 100,
    tenant_rate_limit: float = 0.0,
    tenant_burst: int = 0,
    user_quota: str = "",
    tenant_quota: str = "",
    **more: Any,
) -> Any:
    """A service command's ``ServeConfig``; a bad quota stops the command here, before any
    process starts."""
    from ..server.factory import ServeConfig, server_quotas

    if settings.done_jobs_days is not None:  # `memstrata --done-jobs-days` (or its variable)
        more.setdefault("done_jobs_days", settings.done_jobs_retention())
    config = ServeConfig(
        url=settings.url,
        embedder=settings.embedder,
        llm=settings.llm,
        openai_base_url=settings.openai_base_url,
        openai_api_key=settings.openai_api_key,
        rate=rate_limit,
        burst=burst,
        tenant_rate=tenant_rate_limit,
        tenant_burst=tenant_burst,
        user_quota=user_quota,
        tenant_quota=tenant_quota,
        **more,
    )
    try:
        server_quotas(config)
    except MemstrataError as exc:
        fail(str(exc))
    return config


def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port.")] = 8000,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            help="Server processes (use several with PostgreSQL; SQLite serialises writes).",
        ),
    ] = 1,
    rate_limit: RateLimit = 50.0,
    burst: Burst = 100,
    tenant_rate_limit: TenantRateLimit = 0.0,
    tenant_burst: TenantBurst = 0,
    redis: Annotated[
        str | None,
        typer.Option(
            help="redis://host:6379/0: hot state and the rate limits' buckets (default: the "
            "store's own counters)."
        ),
    ] = None,
    user_quota: UserQuota = "",
    tenant_quota: TenantQuota = "",
    max_body: MaxBody = MAX_BODY,
    background: Annotated[
        bool, typer.Option(help="Run background jobs in the server (else run `memstrata worker`).")
    ] = True,
    log_level: LogLevel = "info",
    mcp_endpoint: Annotated[
        bool, typer.Option("--mcp/--no-mcp", help="Serve the MCP endpoint at /mcp too.")
    ] = True,
    keep_alive: Annotated[
        int,
        typer.Option(
            min=0,
            max=MAX_TIMEOUT_S,
            help="Seconds an idle connection is kept open (longer than clients' and proxies' "
            "own idle timeouts, so they close first; 0: closed after each answer).",
        ),
    ] = KEEP_ALIVE_S,
    worker_timeout: Annotated[
        int,
        typer.Option(
            min=1,
            max=MAX_TIMEOUT_S,
            help="With --workers: seconds a process may not answer the supervisor before it "
            "is killed and replaced (a busy process is not a hung one).",
        ),
    ] = WORKER_TIMEOUT_S,
    shutdown_timeout: ShutdownTimeout = SHUTDOWN_TIMEOUT_S,
    header_timeout: HeaderTimeout = HEADER_TIMEOUT_S,
    body_timeout: BodyTimeout = BODY_TIMEOUT_S,
    min_body_rate: MinBodyRate = MIN_BODY_RATE,
    max_connections: MaxConnections = MAX_CONNECTIONS,
    max_connections_per_ip: MaxConnectionsPerIp = 0,
    max_keys: MaxKeys = MAX_KEYS,
    vector_cache_rows: VectorCacheRows = None,
    key_cache: Annotated[
        float,
        typer.Option(
            min=0.0,
            callback=_finite,
            help="Seconds a process remembers an API key it accepted: a key revoked by another "
            "process or by `memstrata keys revoke` works here that long (0: look every key up "
            "at every request).",
        ),
    ] = 1.0,
    reads_first: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Requests of the user routes a process runs at once before the others wait, "
            "searches first, then reads, then writes (0: no gate, arrival order). Default: 1 "
            "when the store (SQLite, or PostgreSQL on a socket or loopback), the embedder and "
            "Redis are on this machine, else 0.",
        ),
    ] = None,
    done_jobs: DoneJobsDays = None,
) -> None:
    """Serve the HTTP API, the MCP endpoint (/mcp), the inspector (/ui) and metrics (default
    ./memstrata.db).

    A stop on SIGTERM or SIGINT exits 0 (also when --shutdown-timeout cancelled requests);
    1 if it was forced or the shutdown failed, 3 if the server did not start."""
    from ..server import require_server_extra

    try:
        require_server_extra()
    except MemstrataError as exc:
        fail(str(exc))
    from ..server.factory import ENV_VAR, build_app, check_serve_config
    from ..server.observe import configure_logging
    from ..server.run import serve_until_stopped
    from ..server.slow_clients import TimedConfig, fit_descriptors

    settings: Settings = command_done_jobs_days(ctx.obj, done_jobs)
    config = _serve_config(
        settings,
        rate_limit=rate_limit,
        burst=burst,
        tenant_rate_limit=tenant_rate_limit,
        tenant_burst=tenant_burst,
        user_quota=user_quota,
        tenant_quota=tenant_quota,
        redis=redis,
        max_body=max_body,
        background=background,
        host=host,
        mcp=mcp_endpoint,
        key_cache_seconds=key_cache,
        reads_first=reads_first,
        max_keys=max_keys,
        vector_cache_rows=_vector_cache_rows(vector_cache_rows, settings),
    )
    configure_logging(log_level)
    max_connections = fit_descriptors(max_connections)  # inherited by --workers' processes
    if workers > 1:
        try:  # here, once, not in each process (which the supervisor would restart)
            check_serve_config(config)
        except MemstrataError as exc:
            fail(str(exc))
        os.environ[ENV_VAR] = config.to_json()
        os.environ["MEMSTRATA_LOG_LEVEL"] = log_level
        options: dict[str, Any] = {
            "factory": True,
            "host": host,
            "port": port,
            "workers": workers,
            "log_config": None,
            "access_log": False,
            "timeout_keep_alive": keep_alive,
            "timeout_worker_healthcheck": worker_timeout,
            "timeout_graceful_shutdown": shutdown_timeout,
            "header_timeout": header_timeout,
            "body_timeout": body_timeout,
            "min_body_rate": min_body_rate,
            "max_connections": max_connections,
            "max_connections_per_ip": max_connections_per_ip,
        }
        from ..server.workers import run_workers

        _serve_line(config, host, port, workers).write(as_json=True)  # once, not per process
        # a listening socket per process (Linux), else uvicorn's one shared socket
        raise typer.Exit(run_workers(TimedConfig(APP_FACTORY, **options), workers))
    try:
        app, _, _ = build_app(config)
    except MemstrataError as exc:
        fail(str(exc))
    _serve_line(config, host, port, workers).write(as_json=True)
    raise typer.Exit(
        serve_until_stopped(
            app,
            host=host,
            port=port,
            log_config=None,
            access_log=False,
            timeout_keep_alive=keep_alive,
            timeout_graceful_shutdown=shutdown_timeout,
            header_timeout=header_timeout,
            body_timeout=body_timeout,
            min_body_rate=min_body_rate,
            max_connections=max_connections,
            max_connections_per_ip=max_connections_per_ip,
        )
    )


def mcp(
    ctx: typer.Context,
    transport: Annotated[
        str, typer.Option(help="stdio or http (streamable HTTP at /mcp).")
    ] = "stdio",
    key: Annotated[
        str | None,
        typer.Option(envvar="MEMSTRATA_API_KEY", help="stdio: an API key naming the tenant."),
    ] = None,
    host: Annotated[str, typer.Option(help="http: address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="http: port.")] = 8001,
    rate_limit: RateLimit = 50.0,
    burst: Burst = 100,
    tenant_rate_limit: TenantRateLimit = 0.0,
    tenant_burst: TenantBurst = 0,
    user_quota: UserQuota = "",
    tenant_quota: TenantQuota = "",
    shutdown_timeout: ShutdownTimeout = SHUTDOWN_TIMEOUT_S,
    header_timeout: HeaderTimeout = HEADER_TIMEOUT_S,
    body_timeout: BodyTimeout = BODY_TIMEOUT_S,
    min_body_rate: MinBodyRate = MIN_BODY_RATE,
    max_connections: MaxConnections = MAX_CONNECTIONS,
    max_connections_per_ip: MaxConnectionsPerIp = 0,
    max_keys: MaxKeys = MAX_KEYS,
    vector_cache_rows: VectorCacheRows = None,
    max_body: MaxBody = MAX_BODY,
    log_level: LogLevel = "info",
    done_jobs: DoneJobsDays = None,
) -> None:
    """Serve memory tools to MCP clients (stdio for Claude Desktop/Cursor, or HTTP).

    Quotas apply on both transports; the rate limits on HTTP (a stdio server has one client).
    HTTP: a stop on SIGTERM or SIGINT exits 0, as `memstrata serve`'s."""
    from ..mcp_server import require_mcp_extra

    try:
        require_mcp_extra()
    except MemstrataError as exc:
        fail(str(exc))
    from ..mcp_server.run import run_mcp

    settings: Settings = command_done_jobs_days(ctx.obj, done_jobs)
    if transport not in ("stdio", "http"):
        fail(f"--transport {transport!r} is not one of: stdio, http")
    from ..server.observe import configure_logging

    # JSON lines on stderr at --log-level, as `serve` logs: a server's warnings (the store
    # did not answer, the driver's "error connecting" / "discarding closed connection") are
    # for its operator, and an MCP client keeps a stdio server's stderr as its log. Never
    # stdout, which is the protocol's over stdio. Before (session 31), stdio kept the CLI's
    # rule for one-shot commands (its handlers silent unless -v) and the warnings reached
    # stderr through the MCP SDK's console handler on the root logger, boxed over several
    # lines (twice with -v); --log-level did nothing.
    configure_logging(log_level)
    if transport == "http":
        from ..server.slow_clients import fit_descriptors

        max_connections = fit_descriptors(max_connections)
    config = _serve_config(
        settings,
        rate_limit=rate_limit,
        burst=burst,
        tenant_rate_limit=tenant_rate_limit,
        tenant_burst=tenant_burst,
        user_quota=user_quota,
        tenant_quota=tenant_quota,
        max_body=max_body,
        max_keys=max_keys,
        vector_cache_rows=_vector_cache_rows(vector_cache_rows, settings),
    )
    if transport == "http":
        from .start_line import http_address

        listen = http_address(host, port) + "/mcp"
        line = _start_line(config, "mcp", listen, f"listening on {listen}", 1)
    else:  # stdout is the protocol's: the line goes to stderr, as every start line does
        line = _start_line(config, "mcp", "stdio", "on stdio", 1)
    try:
        status = run_mcp(
            config,
            transport=transport,
            key=key,
            tenant=settings.tenant,
            user=settings.user,
            session=settings.session,
            agent=settings.agent,
            host=host,
            port=port,
            shutdown_timeout=shutdown_timeout,
            header_timeout=header_timeout,
            body_timeout=body_timeout,
            min_body_rate=min_body_rate,
            max_connections=max_connections,
            max_connections_per_ip=max_connections_per_ip,
            on_start=lambda: line.write(as_json=True),
        )
    except MemstrataError as exc:
        fail(str(exc))
    raise typer.Exit(status)


def register(app: typer.Typer) -> None:
    app.command()(serve)
    app.command()(mcp)
    app.add_typer(keys_app, name="keys")
