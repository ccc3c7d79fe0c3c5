"""What one server process holds: the memory backend, the key store and the limits."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from fastapi import FastAPI

from .backend import MemoryBackend
from .keys import KeyStore
from .limits import RateLimiter

__all__ = ["ServerState", "state_of"]


@dataclass(slots=True)
class ServerState:
    backend: MemoryBackend
    keys: KeyStore
    limiter: RateLimiter
    job_counts: Callable[[], Mapping[str, int] | None]


def state_of(app: FastAPI) -> ServerState:
    state: ServerState = app.state.memstrata
    return state
