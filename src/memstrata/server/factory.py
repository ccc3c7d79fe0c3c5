"""Build the server from a configuration: in-process, or in each ``--workers`` process.

Worker processes are started by uvicorn and cannot be handed Python objects, so the CLI puts
the configuration (JSON) in ``MEMSTRATA_SERVE_CONFIG`` and each worker calls
:func:`app_from_env`. This module and the CLI are the only places that read the environment.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any

from fastapi import FastAPI

from ..aio import AsyncMemory
from ..errors import ValidationError
from ..gc_tuning import tune_gc_setting
from ..maintenance_types import Retention
from ..quotas import Quotas, parse_quota
from ..ratelimit_state import MAX_KEYS
from ..store.vector_bound import VECTOR_CACHE_ROWS
from .app import Limits, create_app
from .key_cache import CachedKeys
from .keys import KeyStore, open_key_store
from .priority import default_slots

__all__ = [
    "ENV_VAR",
    "ServeConfig",
    "app_from_env",
    "build_app",
    "check_serve_config",
    "open_server_memory",
    "server_quotas",
]

ENV_VAR = "MEMSTRATA_SERVE_CONFIG"


@dataclass(frozen=True, slots=True)
class ServeConfig:
    url: str = "sqlite:///memstrata.db"
    embedder: str | None = None
    llm: str | None = None
    openai_base_url: str | None = None
    openai_api_key: str | None = None
    rate: float = 50.0
    burst: int = 100
    max_body: int = 1024 * 1024
    max_import_body: int = 64 * 1024 * 1024
    background: bool = True
    host: str = "127.0.0.1"  # the address served (the MCP endpoint's rebinding protection)
    mcp: bool = True  # serve the MCP endpoint at /mcp too
    redis: str | None = None  # hot state (Memory(buffer=)) and the shared rate limits
    tenant_rate: float = 0.0
    tenant_burst: int = 0
    shared_batch: int = 0  # 0: a tenth of the burst (see Limits)
    user_quota: str = ""  # quotas.parse_quota: "records=1000,embeddings_per_day=5000,..."
    tenant_quota: str = ""  # the same, for each tenant's total
    # How long a process answers an accepted API key from memory (server/key_cache.py): a
    # key revoked by another process or `memstrata keys revoke` works here that long at
    # most. 0: every request looks its key up.
    key_cache_seconds: float = 1.0
    reads_first: int | None = None  # see Limits.reads_first; None: by deployment
    max_keys: int = MAX_KEYS  # see Limits.max_keys (`serve --max-keys`)
    # the store's vector cache, rows (Memory(vector_cache_rows=), `serve --vector-cache-rows`)
    vector_cache_rows: int = VECTOR_CACHE_ROWS
    # days a finished job is kept before maintenance deletes it (Retention.done_jobs_days,
    # `memstrata --done-jobs-days`; None: every one kept)
    done_jobs_days: float | None = Retention().done_jobs_days

    def limits(self) -> Limits:
        return Limits(
            rate=self.rate,
            burst=self.burst,
            max_body=self.max_body,
            max_import_body=self.max_import_body,
            tenant_rate=self.tenant_rate,
            tenant_burst=self.tenant_burst,
            shared_batch=self.shared_batch,
            reads_first=(
                default_slots(self.url, self.embedder, self.redis)
                if self.reads_first is None
                else self.reads_first
            ),
            max_keys=self.max_keys,
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ServeConfig:
        try:
            return cls(**json.loads(text))
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"{ENV_VAR} is not a serve configuration: {exc}") from None


def open_server_memory(config: ServeConfig) -> AsyncMemory:
    """The server's ``AsyncMemory``, not opened yet: the server opens it on its own event
    loop (``await memory.open()``, see :func:`create_app`), where its background task and
    its connection pools then live, and closes it (``await memory.aclose()``, which also
    closes the OpenAI clients made here) when it stops."""
    from ..aio.providers import make_async_embedder, make_async_llm

    keys = {"base_url": config.openai_base_url, "api_key": config.openai_api_key}
    # Made here, not by the memory: a bad spec is refused before the server starts, and the
    # OpenAI ones get the configured endpoint and key.
    embedder = make_async_embedder(config.embedder, **keys)
    llm = make_async_llm(config.llm, **keys) if config.llm is not None else None
    memory = AsyncMemory(
        config.url,
        embedder=embedder,
        llm=llm,
        background=config.background,
        buffer=config.redis,
        quotas=server_quotas(config),
        vector_cache_rows=config.vector_cache_rows,
        retention=Retention(done_jobs_days=config.done_jobs_days),
    )
    # The memory closes the providers it makes from a spec, not instances it is given:
    # these were made for it, so they join its own (closed by aclose, after the store).
    made: list[Any] = [embedder, llm]
    memory._owned.extend(p.aclose for p in made if hasattr(p, "aclose"))
    return memory


def server_quotas(config: ServeConfig) -> Quotas | None:
    """The store-wide quotas every server process enforces (None: no quota configured;
    overrides set with ``Memory.set_quota`` are then not enforced by the server either)."""
    if not config.user_quota.strip() and not config.tenant_quota.strip():
        return None
    return Quotas(
        per_user=parse_quota(config.user_quota), per_tenant=parse_quota(config.tenant_quota)
    )


def build_app(config: ServeConfig) -> tuple[FastAPI, AsyncMemory, KeyStore]:
    """The app, its memory (opened by the app's lifespan, on the server's event loop, and
    closed when it stops) and its key store."""
    memory = open_server_memory(config)
    redis: Any = None
    keys: KeyStore = open_key_store(config.url)
    if config.key_cache_seconds > 0:
        keys = CachedKeys(keys, config.key_cache_seconds)
    if config.redis is not None:  # a client of its own for the rate limits
        from ..store.redis_hot import open_redis

        try:
            redis = open_redis(config.redis)
        except BaseException:
            keys.close()
            raise

    async def close() -> None:
        try:
            await memory.aclose()
        finally:
            keys.close()
            if redis is not None:
                redis.close()

    limits = config.limits()
    prefix = "memstrata"
    async_redis: Callable[[], Awaitable[Any]] | None = None
    if config.redis is not None:
        from .._async.store.redis_hot import open_redis as open_async_redis
        from ..store.redis_hot import buffer_prefix

        prefix = buffer_prefix(config.redis)
        async_redis = functools.partial(open_async_redis, config.redis)
    app = create_app(
        memory,
        keys,
        limits=limits,
        on_close=close,
        mcp=config.mcp,
        host=config.host,
        redis=redis,
        redis_prefix=prefix,
        async_redis=async_redis,
    )
    return app, memory, keys


def check_serve_config(config: ServeConfig) -> ServeConfig:
    """What each ``serve --workers`` process makes of ``config`` before it serves (its
    memory, not opened; its key store; its Redis client; its limits), made once here and
    closed: the supervisor calls this before it starts any process. A bad setting (an
    unknown embedder or LLM, a ``vector_cache_rows`` below 1, a store whose API keys cannot
    be kept, a Redis URL refused) is then one ``MemstrataError`` in the parent; before
    (session 31), every process died of it with a traceback in :func:`app_from_env`, and the
    supervisor started another, forever. The configuration goes through the same JSON the
    processes read. Returns what they will read."""
    config = ServeConfig.from_json(config.to_json())
    memory = open_server_memory(config)
    try:
        open_key_store(config.url).close()
        if config.redis is not None:
            from ..store.redis_hot import open_redis

            open_redis(config.redis).close()
        config.limits()
    finally:
        import asyncio

        asyncio.run(memory.aclose())  # closes the providers made for it; no store opened
    return config


def app_from_env() -> FastAPI:
    """The uvicorn factory each worker process calls (``--workers N``)."""
    from .observe import configure_logging

    configure_logging(os.environ.get("MEMSTRATA_LOG_LEVEL", "info"))
    tune_gc_setting(os.environ.get("MEMSTRATA_GC_THRESHOLD"))  # this process is the server's
    app, _, _ = build_app(ServeConfig.from_json(os.environ.get(ENV_VAR, "{}")))
    return app
