"""What one server process holds: the memory backend, the key store and the rate limits."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from fastapi import FastAPI

from .backend import MemoryBackend
from .keys import KeyStore
from .limits import Limiter

__all__ = ["ServerState", "state_of"]


@dataclass(slots=True)
class ServerState:
    backend: MemoryBackend
    keys: KeyStore
    limiter: Limiter  # per API key
    job_counts: Callable[[], Mapping[str, int] | None]
    tenant_limiter: Limiter | None = None  # per tenant, over all its keys (None: no limit)
    # The key lookup waits on I/O: it runs on a worker thread (a key that a CachedKeys
    # remembers needs no lookup).
    blocking_keys: bool = False
    # Counts what no status can tell (an export cut after its 200); set by create_app.
    cut_exports: Callable[[str], None] = lambda code: None


def state_of(app: FastAPI) -> ServerState:
    state: ServerState = app.state.memstrata
    return state
