"""A server process's memory of the keys it has just checked (``memstrata serve``).

Without it every request looks its key up in the store: on PostgreSQL a round trip made on
a worker thread, about 0.5 ms of the server's CPU per request (``GET /v1/whoami``, 8
clients, 2026-11-26) besides PostgreSQL's own. :class:`CachedKeys` answers a key it
accepted less than ``ttl`` seconds ago from memory, on the event loop. What that costs:

- a key revoked through this process (``DELETE /v1/keys/{id}``, or a user's purge, which
  deletes the user's keys) is forgotten at once: its next request here is a 401;
- a key revoked elsewhere (``memstrata keys revoke``, another ``--workers`` process or
  host) keeps working here for at most ``ttl`` seconds (``memstrata serve``: 1 s).

Only accepted keys are kept, and only by their SHA-256: an unknown key is looked up at
each request (a key created a moment ago works at once) and no secret stays in memory.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

import anyio.to_thread

from .keys import ApiKey, KeyStore, NewKey, hash_key

__all__ = ["CachedKeys", "lookup"]

_MAX_ENTRIES = 10_000  # keys accepted within one ttl; past that the oldest half goes


class CachedKeys:
    """:class:`~memstrata.server.keys.KeyStore` over ``keys``, remembering accepted keys
    for ``ttl`` seconds (see the module's docstring for what a revocation then means)."""

    def __init__(
        self, keys: KeyStore, ttl: float, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.keys = keys
        self.ttl = ttl
        self._clock = clock
        self._known: dict[str, tuple[ApiKey, float]] = {}  # sha256(secret) -> key, expiry
        self._lock = threading.Lock()
        self._forgets = 0  # a lookup that overlapped a revocation is not remembered

    def remembered(self, secret: str) -> ApiKey | None:
        """The key ``secret`` names when it was accepted less than ``ttl`` ago (no I/O),
        else None: then :meth:`authenticate` asks the store."""
        found = self._known.get(hash_key(secret))
        if found is None or found[1] <= self._clock():
            return None
        return found[0]

    def authenticate(self, secret: str) -> ApiKey | None:
        key = self.remembered(secret)
        if key is not None:
            return key
        forgets = self._forgets
        key = self.keys.authenticate(secret)
        if key is not None:
            with self._lock:
                if forgets != self._forgets:
                    return key
                if len(self._known) >= _MAX_ENTRIES:
                    self._drop_oldest()
                self._known[hash_key(secret)] = (key, self._clock() + self.ttl)
        return key

    def _drop_oldest(self) -> None:
        by_expiry = sorted(self._known.items(), key=lambda kv: kv[1][1])
        for digest, _ in by_expiry[: len(by_expiry) // 2]:
            del self._known[digest]

    def _forget(self, gone: Callable[[ApiKey], bool]) -> None:
        with self._lock:
            self._forgets += 1
            for digest in [d for d, (k, _) in self._known.items() if gone(k)]:
                del self._known[digest]

    def create(
        self,
        tenant: str,
        *,
        role: str = "member",
        name: str = "",
        user: str | None = None,
        roles: Iterable[str] = (),
    ) -> NewKey:
        return self.keys.create(tenant, role=role, name=name, user=user, roles=roles)

    def list(self, tenant: str | None = None) -> list[ApiKey]:
        return self.keys.list(tenant)

    def revoke(self, key_id: str) -> ApiKey:
        try:
            return self.keys.revoke(key_id)
        finally:
            self._forget(lambda k: k.id == key_id)

    def purge_user(self, tenant: str, user: str) -> int:
        try:
            return self.keys.purge_user(tenant, user)
        finally:
            self._forget(lambda k: (k.tenant, k.user) == (tenant, user))

    def close(self) -> None:
        self.keys.close()


async def lookup(keys: KeyStore, secret: str, *, blocking: bool = True) -> ApiKey | None:
    """The key ``secret`` names: from ``keys``' memory when it accepted it a moment ago (no
    I/O), else from the store — on a worker thread when ``blocking`` (a lookup over the
    network must not stall the event loop and every other request of the process)."""
    known = keys.remembered(secret) if isinstance(keys, CachedKeys) else None
    if known is not None:
        return known
    if blocking:
        return await anyio.to_thread.run_sync(keys.authenticate, secret)
    return keys.authenticate(secret)
