"""Redis for hot state in front of a durable store: ``Memory(url, buffer="redis://...")``.

:class:`AsyncRedisHotStore` wraps a durable
:class:`~memstrata._async.store.base.AsyncStore` (SQLite or PostgreSQL) and answers two hot
reads from Redis: the recent turns of a session (:meth:`recent_turns`) and cached embedding
vectors (:meth:`cached_vectors`). Everything else goes straight to the durable store.

**Write-through.** The durable store is always written first, in its own transaction; Redis
is updated only after that commit, so Redis is never the only copy of an acknowledged turn.

**Never stale.** A write that touches a session's turns first leaves an in-flight marker
(``p:<id>`` with a deadline) in the session's meta hash, then commits to the durable store,
then appends the turns to the Redis list and removes its marker in one Lua call. A read
serves a session from Redis only when the list is loaded and no marker is in flight; a
marker past its deadline (a writer that died between its commit and its Redis update)
invalidates the session. Loading a session from the durable store runs under ``WATCH`` of
the meta hash, so a write that begins meanwhile aborts the load. Edits, status changes and
purges of turns invalidate the session instead of patching it. Turns are de-duplicated by
id on read, so an append replayed twice is harmless.

**Outages.** Any Redis error marks Redis down: one ``WARNING`` is logged per outage and
every call goes to the durable store, which holds everything. After a cool-down the next
call tries Redis again; before it is used, every session written and every user purged
while it was away is invalidated (their keys deleted), so turns Redis missed are never
served. The sessions are remembered one by one up to :data:`DIRTY_SESSIONS_MAX` (a long
outage of a busy server writes to millions); past that the process remembers only that
there were more, and every session Redis holds under the prefix is invalidated when it is
back (each loaded again from the durable store at its next read). Limitation: a process
that dies *during* an outage cannot do that clean-up; its markers (set before the outage)
or the key TTL bound the staleness.

**Keys** are ``<prefix>:<tenant>:<user>:...`` with tenant and user percent-encoded (so no
glob character survives), which lets :meth:`purge_user` delete all of a user's keys.
"""

from __future__ import annotations

import asyncio  # async-only
import builtins
import json
import logging
import secrets

# sync: import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import quote

import numpy as np

from memstrata._async.store.base import AsyncStore, AsyncUnitOfWork
from memstrata._async.store.quota_counters import AsyncQuotaCounters, Refusal, Take
from memstrata.codec import record_from_dict, record_to_dict
from memstrata.errors import MissingDependencyError, NotFoundError, StoreError, ValidationError
from memstrata.jobs import current_fence
from memstrata.records import MemoryRecord, RecordStatus, RecordType
from memstrata.scope import Scope
from memstrata.store.counter_types import SWEEP_BATCH
from memstrata.store.redis_common import (
    DEFAULT_PREFIX,
    INSTALL,
    MIRROR_SECONDS,
    buffer_prefix,
    split_prefix,
)
from memstrata.store.types import PurgeReport, RecordWrite, Vector
from memstrata.store.url import redact_url

__all__ = [
    "DEFAULT_PREFIX",
    "DIRTY_SESSIONS_MAX",
    "INSTALL",
    "MIRROR_SECONDS",
    "AsyncRedisHotStore",
    "buffer_prefix",
    "open_redis",
]


log = logging.getLogger(__name__)
T = TypeVar("T")

# Append the turns (JSON) if the session is loaded, then drop the writer's marker.
# KEYS: list, meta. ARGV: marker, cap, oldest observed (µs), ttl, items...
_PUSH = """
local loaded = redis.call('HGET', KEYS[2], 'loaded')
if loaded == '1' then
  local complete = redis.call('HGET', KEYS[2], 'complete')
  local floor = tonumber(redis.call('HGET', KEYS[2], 'floor') or '0')
  local n = #ARGV - 4
  if (complete ~= '1' and tonumber(ARGV[3]) < floor)
     or redis.call('LLEN', KEYS[1]) + n > tonumber(ARGV[2]) then
    redis.call('DEL', KEYS[1])
    redis.call('HDEL', KEYS[2], 'loaded', 'complete', 'floor')
  elseif n > 0 then
    redis.call('RPUSH', KEYS[1], unpack(ARGV, 5))
    redis.call('EXPIRE', KEYS[1], tonumber(ARGV[4]))
  end
end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HINCRBY', KEYS[2], 'v', 1)
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[4]))
return 1
"""


# Quota counters mirrored in Redis (see RedisHotStore.take_counters). KEYS: one per take.
# ARGV: mode ('take' | 'seed' | 'add'), then amount, limit (-1: none), ttl per take, then (mode
# 'seed') the durable value of each take's counter. Returns {1} taken, {0, i, used} refused
# by take i, {-1} a counter is not loaded (mode 'take'; the caller seeds it).
_TAKE = """
local mode = ARGV[1]
local n = #KEYS
local after = {}
local before = {}
for i = 1, n do
  local k = KEYS[i]
  if before[k] == nil then
    local v = redis.call('GET', k)
    if not v then
      if mode == 'seed' then
        v = ARGV[1 + 3 * n + i]
        redis.call('SET', k, v, 'EX', tonumber(ARGV[3 * i + 1]))
      elseif mode == 'add' then v = false
      else return {-1} end
    end
    before[k] = v and tonumber(v) or false
  end
end
for i = 1, n do
  local k = KEYS[i]
  if before[k] then
    local cur = after[k] or before[k]
    local amount = tonumber(ARGV[3 * i - 1])
    local limit = tonumber(ARGV[3 * i])
    if limit >= 0 and cur + amount > limit then return {0, i - 1, before[k]} end
    after[k] = math.max(0, cur + amount)
  end
end
for i = 1, n do
  local k = KEYS[i]
  if after[k] ~= nil then
    local ttl = tonumber(ARGV[3 * i + 1])
    redis.call('SET', k, after[k], 'EX', ttl)
    after[k] = nil
  end
end
return {1}
"""


def _micros(at: datetime) -> int:
    return int(at.timestamp() * 1_000_000)


def _enc(value: str) -> str:
    return quote(value, safe="")


def _is_turn(record: MemoryRecord) -> bool:
    return record.type is RecordType.MESSAGE and record.session is not None


SessionKey = tuple[str, str, str]  # tenant, user, session


def _session_of(record: MemoryRecord) -> SessionKey | None:
    if not _is_turn(record) or record.session is None:
        return None
    return (record.tenant, record.user, record.session)


# Sessions written during an outage remembered one by one; past that, all are invalidated.
DIRTY_SESSIONS_MAX = 100_000


@dataclass
class _Health:
    """Whether Redis is usable now, and what it missed while it was not."""

    cooldown: float
    down_since: float | None = None
    dirty_sessions: set[SessionKey] = field(default_factory=set)
    every_session: bool = False  # more than DIRTY_SESSIONS_MAX: invalidate them all when back
    overflows: int = 0  # times every_session was set (one set during a recovery outlives it)
    purged_users: set[tuple[str, str]] = field(default_factory=set)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


async def open_redis(url: str, *, timeout: float = 1.0) -> Any:
    """A connected client for ``url``; a clear error if the package or server is missing.

    ``?prefix=name`` in the URL is memstrata's key prefix (see :func:`buffer_prefix`), so
    several applications can share one Redis without sharing keys."""
    url, _ = split_prefix(url)
    shown = redact_url(url)  # messages reach logs and consoles: never the password
    try:
        import redis.asyncio
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff
    except ImportError as exc:
        raise MissingDependencyError(
            f"buffer={shown!r} needs the redis package: {INSTALL}"
        ) from exc
    try:
        client = redis.asyncio.Redis.from_url(
            url,
            socket_connect_timeout=timeout,
            socket_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
            retry_on_timeout=False,
        )
    except ValueError as exc:
        raise StoreError(
            f"buffer URL {shown!r} is not a valid Redis URL ({exc}); use "
            "redis://host:6379/0 or rediss://... for TLS"
        ) from exc
    try:
        await client.ping()
    except TypeError as exc:  # redis-py passes a URL's unknown ?name= on to its connection
        await client.aclose()
        raise ValidationError(
            f"buffer URL {shown!r} has an option Redis's client does not take ({exc}); "
            "remove it (memstrata's own is ?prefix=; redis-py's are its connection's "
            "arguments, such as socket_timeout)"
        ) from None
    except redis.RedisError as exc:
        await client.aclose()
        raise StoreError(
            f"Redis at {shown!r} refused the connection ({type(exc).__name__}: {exc}): start "
            "redis-server there, fix the buffer URL, or open Memory without buffer= to use "
            "the durable store alone"
        ) from exc
    return client


class AsyncRedisHotStore:
    """A :class:`AsyncStore` whose session buffer and embedding cache sit in Redis.

    Every method not defined here is the durable store's own (``__getattr__``).
    """

    # A take goes through the Redis mirror (take_counters): never carried by the durable
    # store's next write instead (memstrata.store.counted_writes), which Redis would miss.
    counts_home = None

    def __init__(
        self,
        durable: AsyncStore,
        client: Any,
        *,
        prefix: str = "memstrata",
        cap: int = 256,
        ttl_seconds: int = 86_400,
        cooldown: float = 2.0,
        marker_seconds: float = 30.0,
    ) -> None:
        import redis

        self.durable = durable
        self.url = durable.url
        self._redis = client
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError,)
        self._prefix = prefix
        self._cap = cap
        self._ttl = ttl_seconds
        self._marker_ms = int(marker_seconds * 1000)
        self._health = _Health(cooldown)
        self._push = client.register_script(_PUSH)
        self._seen_models: set[str] = set()
        self._take = client.register_script(_TAKE)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.durable, name)

    # --- keys ------------------------------------------------------------------------------
    def _user_prefix(self, tenant: str, user: str) -> str:
        return f"{self._prefix}:{_enc(tenant)}:{_enc(user)}:"

    def _session_keys(self, key: SessionKey) -> tuple[str, str]:
        base = f"{self._user_prefix(key[0], key[1])}s:{_enc(key[2])}"
        return base + ":turns", base + ":meta"

    def _vector_key(self, scope: Scope, model_id: str, key: str) -> str:
        return f"{self._user_prefix(scope.tenant, scope.user)}e:{_enc(model_id)}:{_enc(key)}"

    # --- health ----------------------------------------------------------------------------
    @property
    def available(self) -> bool:
        """Whether the last Redis call succeeded (no outage in progress)."""
        return self._health.down_since is None

    async def _call(self, fn: Callable[[], Awaitable[T]]) -> T | None:
        """Run a Redis operation; ``None`` when Redis is down (the caller falls back)."""
        h = self._health
        if h.down_since is not None:
            if time.monotonic() - h.down_since < h.cooldown:
                return None
            try:
                await self._recover()
            except self._errors:
                async with h.lock:
                    h.down_since = time.monotonic()
                return None
        try:
            return await fn()
        except self._errors as exc:
            await self._mark_down(exc)
            return None

    async def _mark_down(self, exc: BaseException) -> None:
        h = self._health
        async with h.lock:
            first = h.down_since is None
            h.down_since = time.monotonic()
        if first:
            log.warning(
                "Redis hot-state buffer unavailable (%s: %s); continuing on the durable "
                "store %s, nothing is lost; retrying Redis every %.1f s",
                type(exc).__name__,
                exc,
                redact_url(self.durable.url),
                h.cooldown,
            )

    async def _recover(self) -> None:
        """Redis answers again: delete what it missed, then mark it up."""
        h = self._health
        await self._redis.ping()
        async with h.lock:
            sessions, users = set(h.dirty_sessions), set(h.purged_users)
            every, overflows = h.every_session, h.overflows
        for tenant, user in users:
            await self._delete_user_keys(tenant, user)
            await self._drop_sessions_naming(tenant, user)  # their readers' too
        if every:  # too many to remember: every session Redis holds goes
            for part in ("turns", "meta"):
                await self._delete_matching(f"{self._prefix}:*:s:*:{part}")
        for key in sessions:
            await self._invalidate_now(key)
        async with h.lock:
            h.dirty_sessions -= sessions
            h.purged_users -= users
            if every and h.overflows == overflows:
                h.every_session = False
            h.down_since = None
        log.info(
            "Redis hot-state buffer is back; invalidated %s session(s) and %d purged "
            "user(s) written while it was away",
            "every" if every else len(sessions),
            len(users),
        )

    async def _dirty(
        self, sessions: Sequence[SessionKey] = (), users: Sequence[tuple[str, str]] = ()
    ) -> None:
        h = self._health
        async with h.lock:
            if not h.every_session:
                h.dirty_sessions.update(sessions)
                if len(h.dirty_sessions) > DIRTY_SESSIONS_MAX:
                    h.dirty_sessions.clear()
                    h.every_session = True
                    h.overflows += 1
            # not bounded: a purge during an outage is rare, and its keys must go
            h.purged_users.update(users)

    # --- session writes --------------------------------------------------------------------
    async def _begin(self, sessions: Sequence[SessionKey], marker: str | None = None) -> str | None:
        """Leave an in-flight marker on each session before the durable write; ``None``
        if Redis is down (the sessions are then invalidated when it is back)."""
        if not sessions:
            return None
        marker = marker or "p:" + secrets.token_hex(16)
        deadline = str(int(time.time() * 1000) + self._marker_ms)

        async def run() -> str:
            pipe = self._redis.pipeline(transaction=True)
            for key in sessions:
                meta = self._session_keys(key)[1]
                pipe.hset(meta, marker, deadline)
                pipe.expire(meta, self._ttl)
            await pipe.execute()
            return marker

        done = await self._call(run)
        if done is None:
            await self._dirty(sessions)
        return done

    async def _finish(
        self,
        marker: str | None,
        groups: Mapping[SessionKey, Sequence[MemoryRecord]],
        invalidated: Sequence[SessionKey],
    ) -> None:
        """After the durable commit: append turns (``groups``: a session's new turns) /
        invalidate sessions, drop the marker."""
        touched = list(dict.fromkeys([*groups, *invalidated]))
        if not touched:
            return
        if marker is None:  # the marker never reached Redis: clean up on reconnect
            await self._dirty(touched)
            return
        gone = set(invalidated)

        async def run() -> bool:
            for key in touched:
                turns, meta = self._session_keys(key)
                if key in gone:
                    pipe = self._redis.pipeline(transaction=True)
                    pipe.delete(turns)
                    pipe.hdel(meta, "loaded", "complete", "floor", marker)
                    pipe.hincrby(meta, "v", 1)
                    await pipe.execute()
                    continue
                records = groups[key]
                oldest = min(_micros(r.observed_at) for r in records)
                items = [json.dumps(record_to_dict(r)) for r in records]
                await self._push(
                    keys=[turns, meta], args=[marker, self._cap * 2, oldest, self._ttl, *items]
                )
            return True

        if await self._call(run) is None:  # Redis missed it: clean up on reconnect
            await self._dirty(touched)

    async def _invalidate_now(self, key: SessionKey) -> None:
        turns, meta = self._session_keys(key)
        pipe = self._redis.pipeline(transaction=True)
        pipe.delete(turns, meta)
        await pipe.execute()

    async def _sessions_of_ids(self, scope: Scope, ids: Sequence[str]) -> list[SessionKey]:
        found = await self.durable.get_many(scope, list(ids))
        return list(dict.fromkeys(k for r in found if (k := _session_of(r)) is not None))

    async def append_turns(self, writes: Sequence[RecordWrite]) -> None:
        async with self.transaction() as tx:
            await tx.append_turns(writes)

    async def insert(self, writes: Sequence[RecordWrite]) -> None:
        async with self.transaction() as tx:
            await tx.insert(writes)

    async def replace(self, scope: Scope, write: RecordWrite, *, expected_version: int) -> None:
        async with self.transaction() as tx:
            await tx.replace(scope, write, expected_version=expected_version)

    async def set_status(
        self, scope: Scope, ids: Sequence[str], status: RecordStatus, at: datetime
    ) -> builtins.list[str]:
        async with self.transaction() as tx:
            return await tx.set_status(scope, ids, status, at)

    async def purge(
        self,
        scope: Scope,
        ids: Sequence[str],
        *,
        reterm: Mapping[str, Sequence[str]] | None = None,
    ) -> PurgeReport:
        """The durable purge (``reterm`` included: Redis holds no lexical terms), then the
        Redis copies: the sessions holding the records are
        invalidated and the cached passage embeddings of every version's text are deleted
        (for every embedding model this store has used), so no value in Redis keeps them."""
        sessions = await self._sessions_of_ids(scope, ids)
        hashes = await self._version_hashes(scope, ids)
        marker = await self._begin(sessions)
        report = await self.durable.purge(scope, ids, reterm=reterm)
        await self._finish(marker, {}, sessions)
        if report.records and hashes:
            uscope = Scope(scope.tenant, scope.user)
            names = [self._vector_key(uscope, m, h) for m in await self._models() for h in hashes]

            async def run() -> int:
                if not names:  # no model used yet: no cached vector (DEL with no key is
                    return 0  # Redis's error, which read as an outage: remaining 1)
                await self._redis.delete(*names)
                return int(await self._redis.exists(*names))

            left = await self._call(run)
            if left is None:  # Redis is down: the user's keys go before it is used again
                await self._dirty(users=[(scope.tenant, scope.user)])
                report = replace(report, remaining=report.remaining + 1)  # unverified
            elif left:
                report = replace(report, remaining=report.remaining + left)
        return report

    async def _version_hashes(self, scope: Scope, ids: Sequence[str]) -> builtins.list[str]:
        """The text hashes of every version of these records (their embedding-cache keys)."""
        out: dict[str, None] = {}
        for versions in (await self.durable.histories(scope, ids)).values():
            out.update(dict.fromkeys(v.content_hash for v in versions if v.content_hash))
        return list(out)

    async def _models(self) -> builtins.list[str]:
        """Embedding models whose vectors this store may cache: the store's own and any this
        process cached vectors for (a re-embedding changes the model)."""
        stored = await self.durable.get_meta("embedding_model")
        return sorted(self._seen_models | ({stored} if stored else set()))

    async def set_vectors(
        self, items: Sequence[tuple[MemoryRecord, Vector]], model_id: str, dims: int
    ) -> None:
        sessions = list(dict.fromkeys(k for r, _ in items if (k := _session_of(r)) is not None))
        marker = await self._begin(sessions)
        await self.durable.set_vectors(items, model_id, dims)
        await self._finish(marker, {}, sessions)

    async def _abort(self, marker: str, sessions: Sequence[SessionKey]) -> None:
        """A rolled-back write: drop its markers, leave the turns as they are."""

        async def run() -> None:
            pipe = self._redis.pipeline(transaction=False)
            for key in sessions:
                pipe.hdel(self._session_keys(key)[1], marker)
            await pipe.execute()

        if sessions:
            await self._call(run)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncUnitOfWork]:
        hot: _AsyncHotTransaction | None = None
        try:
            async with self.durable.transaction() as tx:
                hot = _AsyncHotTransaction(tx, self)
                yield hot
        except BaseException:
            if hot is not None:
                await self._abort(hot.marker, list(hot.marked))
            raise
        assert hot is not None
        await self._finish(hot.marker if hot.ok else None, hot.appended, list(hot.invalidated))

    # --- session reads ---------------------------------------------------------------------
    async def recent_turns(self, scope: Scope, n: int) -> builtins.list[MemoryRecord]:
        if scope.session is None or n < 1:
            return []
        key = (scope.tenant, scope.user, scope.session)
        cached = await self._call(lambda: self._read_session(key))
        if cached is None:
            return await self.durable.recent_turns(scope, n)
        records, complete = cached
        visible = [r for r in records if r.is_active and r.visible_in(scope)]
        if len(visible) < n and not complete:
            return await self.durable.recent_turns(scope, n)
        return visible[-n:]

    async def _read_session(self, key: SessionKey) -> tuple[list[MemoryRecord], bool] | None:
        """The cached turns (sorted, unique) and whether they are the whole session, or
        ``None`` when Redis cannot answer safely (then loads the session for next time)."""
        turns, meta = self._session_keys(key)
        pipe = self._redis.pipeline(transaction=True)
        pipe.hgetall(meta)
        pipe.lrange(turns, 0, -1)
        info_raw, items = await pipe.execute()
        info = {k.decode(): v.decode() for k, v in info_raw.items()}
        now_ms = int(time.time() * 1000)
        markers = [int(v) for k, v in info.items() if k.startswith("p:")]
        if any(m < now_ms for m in markers):  # a writer died after its commit: stale
            await self._invalidate_now(key)
            return None
        if markers:
            return None
        if info.get("loaded") != "1":
            await self._load_session(key)
            return None
        seen: dict[str, tuple[int, MemoryRecord]] = {}
        for i, raw in enumerate(items):
            r = record_from_dict(json.loads(raw))
            seen.setdefault(r.id, (i, r))  # a replayed append is harmless
        ranked = [r for _, r in sorted(seen.values(), key=lambda e: (e[1].observed_at, e[0]))]
        return ranked, info.get("complete") == "1"

    async def _load_session(self, key: SessionKey) -> None:
        """Copy the newest turns of a session from the durable store, unless a write began
        meanwhile (``WATCH``)."""
        import redis

        turns, meta = self._session_keys(key)
        scope = Scope(key[0], key[1], session=key[2])
        async with self._redis.pipeline(transaction=True) as pipe:
            try:
                await pipe.watch(meta)
                if any(k.startswith(b"p:") for k in await pipe.hkeys(meta)):
                    return
                records = await self.durable.recent_turns(scope, self._cap + 1)
                complete = len(records) <= self._cap
                records = records[-self._cap :]
                pipe.multi()
                pipe.delete(turns)
                if records:
                    pipe.rpush(turns, *[json.dumps(record_to_dict(r)) for r in records])
                    pipe.expire(turns, self._ttl)
                pipe.hset(
                    meta,
                    mapping={
                        "loaded": "1",
                        "complete": "1" if complete else "0",
                        "floor": str(_micros(records[0].observed_at)) if records else "0",
                    },
                )
                pipe.expire(meta, self._ttl)
                await pipe.execute()
            except redis.WatchError:
                return

    # --- embedding cache -------------------------------------------------------------------
    async def cached_vectors(
        self, scope: Scope, model_id: str, keys: Sequence[str]
    ) -> dict[str, Vector]:
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        names = [self._vector_key(scope, model_id, k) for k in wanted]
        raw = await self._call(lambda: self._redis.mget(names))
        found: dict[str, Vector] = {}
        if raw is not None:
            for k, blob in zip(wanted, raw, strict=True):
                if blob is not None and len(blob) % 4 == 0 and blob:
                    found[k] = np.frombuffer(blob, dtype=np.float32).copy()
        missing = [k for k in wanted if k not in found]
        if missing:
            stored = await self.durable.cached_vectors(scope, model_id, missing)
            if stored and raw is not None:
                await self._store_vectors(scope, model_id, stored)
            found.update(stored)
        return found

    async def cache_vectors(
        self, scope: Scope, model_id: str, vectors: Mapping[str, Vector]
    ) -> None:
        await self.durable.cache_vectors(scope, model_id, vectors)  # validates, durable first
        await self._store_vectors(scope, model_id, vectors)

    async def _store_vectors(
        self, scope: Scope, model_id: str, vectors: Mapping[str, Vector]
    ) -> None:
        if current_fence() is not None:
            # A job's entries stay in the durable store, written under its claim (jobs.Fence):
            # a key set here after a purge of the user would name them again.
            return
        self._seen_models.add(model_id)

        async def run() -> None:
            pipe = self._redis.pipeline(transaction=False)
            for k, vec in vectors.items():
                blob = np.asarray(vec, dtype=np.float32).reshape(-1).tobytes()
                pipe.set(self._vector_key(scope, model_id, k), blob, ex=self._ttl)
            await pipe.execute()

        await self._call(run)

    # --- quota counters --------------------------------------------------------------------
    @property
    def _counters(self) -> AsyncQuotaCounters:
        if not isinstance(self.durable, AsyncQuotaCounters):
            raise StoreError(f"the store {redact_url(self.durable.url)} keeps no quota counters")
        return self.durable

    def _mirror(self, key: str) -> str:
        return f"{self._prefix}:quota:{key}"

    async def _run_take(self, mode: str, takes: Sequence[Take], seeds: Sequence[int] = ()) -> Any:
        args: list[object] = [mode]
        for t in takes:
            ttl = min(t.ttl_seconds or MIRROR_SECONDS, MIRROR_SECONDS)
            args += [t.amount, -1 if t.limit is None else t.limit, max(1, ttl)]
        return await self._take(keys=[self._mirror(t.key) for t in takes], args=[*args, *seeds])

    async def take_counters(self, takes: Sequence[Take]) -> Refusal | None:
        """Refused by the Redis mirror at once; admitted ones are then taken from the durable
        counters too, which stay the authority: a Redis that is down, restarted empty or
        behind can never admit what the durable counters refuse.

        The mirror counts takes in flight, so a take Redis refuses would be refused by the
        durable store once those commit. A mirror key expires after ``MIRROR_SECONDS`` (at
        most) and is loaded again from the durable counter."""
        if not takes:
            return None
        counters = self._counters

        async def gate() -> Any:
            got = await self._run_take("take", takes)
            if int(got[0]) == -1:  # not loaded: seed from the durable counters
                values = await counters.counter_values([t.key for t in takes])
                got = await self._run_take("seed", takes, [values[t.key] for t in takes])
            return got

        got = await self._call(gate)
        if got is None:  # Redis is down: the durable counters alone
            return await counters.take_counters(takes)
        if int(got[0]) == 0:
            return Refusal(int(got[1]), int(got[2]))
        try:
            refused = await counters.take_counters(takes)
        except BaseException:
            await self._give_back_mirror(takes)
            raise
        if refused is not None:  # the mirror was behind the durable counters: reload it
            await self._call(lambda: self._redis.delete(*[self._mirror(t.key) for t in takes]))
        return refused

    async def _give_back_mirror(self, takes: Sequence[Take]) -> None:
        back = [Take(t.key, -t.amount, None, t.ttl_seconds) for t in takes]
        await self._call(lambda: self._run_take("add", back))

    async def add_counters(self, takes: Sequence[Take]) -> None:
        await self._counters.add_counters(takes)
        if takes:
            await self._call(lambda: self._run_take("add", takes))

    async def counter_values(self, keys: Sequence[str]) -> dict[str, int]:
        return await self._counters.counter_values(keys)

    async def sweep_counters(self, now_us: int, limit: int = SWEEP_BATCH) -> int:
        # the mirror's keys expire on their own (a day's at its end)
        return await self._counters.sweep_counters(now_us, limit)

    async def forget_counters(self, keys: Sequence[str]) -> None:
        await self._counters.forget_counters(keys)
        if keys:
            await self._call(lambda: self._redis.delete(*[self._mirror(k) for k in keys]))

    # --- purge -----------------------------------------------------------------------------
    async def purge_user(self, tenant: str, user: str) -> PurgeReport:
        report = await self.durable.purge_user(tenant, user)

        async def run() -> tuple[int, int]:
            deleted = await self._delete_user_keys(tenant, user)
            await self._drop_sessions_naming(tenant, user)
            left = 0
            async for _ in self._redis.scan_iter(
                match=self._user_prefix(tenant, user) + "*", count=500
            ):
                left += 1
            return deleted, left

        result = await self._call(run)
        if result is None:  # deleted when Redis is back, before it is used again
            await self._dirty(users=[(tenant, user)])
            log.warning(
                "purged user's Redis keys (%s*) not deleted yet: Redis is unreachable from "
                "this process; they are deleted when it reaches Redis again (or at close)",
                self._user_prefix(tenant, user),
            )
            # Unverified, not 0: the user's turns and cached vectors are still in Redis
            # (another process may reach it and serve them) until they are deleted.
            return replace(report, remaining=report.remaining + 1)
        _, left = result
        # The Redis keys are copies of what the durable report already counts (turns, cache
        # entries): only what survives there is added, to ``remaining``.
        return replace(report, remaining=report.remaining + left)

    async def _drop_sessions_naming(self, tenant: str, user: str) -> None:
        """Other users' cached sessions with a turn naming ``user`` (a reader the durable
        purge took out of it: store/purged_reader.py) are dropped, loaded again from the
        durable store when next read."""
        needle = json.dumps(user).encode()
        async for name in self._redis.scan_iter(
            match=f"{self._prefix}:{_enc(tenant)}:*:turns", count=500
        ):
            if any(needle in item for item in await self._redis.lrange(name, 0, -1)):
                await self._redis.delete(name, name[: -len(b"turns")] + b"meta")

    async def _delete_user_keys(self, tenant: str, user: str) -> int:
        from memstrata.quotas import subject_hash  # quotas imports the store package

        quota = f"{self._prefix}:quota:*:{subject_hash(tenant, user)}:*"
        return await self._delete_matching(self._user_prefix(tenant, user) + "*") + (
            await self._delete_matching(quota)
        )

    async def _delete_matching(self, pattern: str) -> int:
        deleted = 0
        batch: list[bytes] = []
        async for name in self._redis.scan_iter(match=pattern, count=500):
            batch.append(name)
            if len(batch) >= 500:
                deleted += int(await self._redis.delete(*batch))
                batch = []
        if batch:
            deleted += int(await self._redis.delete(*batch))
        return deleted

    # --- lifecycle -------------------------------------------------------------------------
    async def aclose(self) -> None:
        try:
            await self._settle_missed()
            await self.durable.aclose()
        finally:
            await self._redis.aclose()

    async def _settle_missed(self) -> None:
        """Before closing, delete what Redis missed during an outage (purged users' keys,
        sessions written meanwhile): no later call of this process would, so a purged
        user's turns stayed in Redis, for other processes to serve, until they expired."""
        h = self._health
        if h.down_since is None or not (h.purged_users or h.dirty_sessions or h.every_session):
            return
        try:
            await self._recover()
        except self._errors as exc:
            if not h.purged_users:  # sessions only: a cache behind the store, which the
                return  # outage's one warning named; no user's erased words are in it
            log.warning(
                "closing while Redis is unreachable (%s: %s): the Redis keys of %d purged "
                "user(s) (%s) are left in Redis, their turns included; delete them there "
                "(redis-cli --scan --pattern '<pattern>' | xargs redis-cli del)",
                type(exc).__name__,
                exc,
                len(h.purged_users),
                ", ".join(sorted(f"{self._user_prefix(t, u)}*" for t, u in h.purged_users)),
            )


class _AsyncHotTransaction:
    """The durable store's unit of work, noting which sessions' turns it changes.

    It keeps the new turns of each session to push after the commit, at most what the
    session's cache holds (``cap * 2``): a session given more in one transaction (an
    import) is invalidated instead and reloads on its next read. Records of no session are
    not kept at all, so an import's unit of work holds no more than the store's does."""

    def __init__(self, tx: AsyncUnitOfWork, hot: AsyncRedisHotStore) -> None:
        self._tx = tx
        self._hot = hot
        self.marker = "p:" + secrets.token_hex(16)
        self.ok = True  # every marker reached Redis
        self.marked: set[SessionKey] = set()
        self.appended: dict[SessionKey, list[MemoryRecord]] = {}
        self.invalidated: dict[SessionKey, None] = {}

    def _note(self, writes: Sequence[RecordWrite]) -> None:
        """Keep the new turns to push after the commit (see the class)."""
        for w in writes:
            key = _session_of(w.record)
            if key is None or key in self.invalidated:
                continue
            turns = self.appended.setdefault(key, [])
            turns.append(w.record)
            if len(turns) > self._hot._cap * 2:
                del self.appended[key]
                self.invalidated[key] = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)

    async def _mark(self, sessions: Sequence[SessionKey]) -> None:
        new = list(dict.fromkeys(s for s in sessions if s not in self.marked))
        if not new:
            return
        self.marked.update(new)
        if await self._hot._begin(new, self.marker) is None:
            self.ok = False

    async def append_turns(self, writes: Sequence[RecordWrite]) -> None:
        await self._mark([k for w in writes if (k := _session_of(w.record)) is not None])
        await self._tx.append_turns(writes)
        self._note(writes)

    async def insert(self, writes: Sequence[RecordWrite]) -> None:
        await self._mark([k for w in writes if (k := _session_of(w.record)) is not None])
        await self._tx.insert(writes)
        self._note(writes)

    async def replace(self, scope: Scope, write: RecordWrite, *, expected_version: int) -> None:
        key = _session_of(write.record)
        if key is not None:
            await self._mark([key])
            self.invalidated[key] = None
        await self._tx.replace(scope, write, expected_version=expected_version)

    async def set_status(
        self, scope: Scope, ids: Sequence[str], status: RecordStatus, at: datetime
    ) -> builtins.list[str]:
        sessions: list[SessionKey] = []
        for record_id in dict.fromkeys(ids):
            try:
                record = await self._tx.get(scope, record_id, include_deleted=True)
            except NotFoundError:  # missing/foreign ids are no-ops, as in set_status
                continue
            if (k := _session_of(record)) is not None:
                sessions.append(k)
        await self._mark(sessions)
        self.invalidated.update(dict.fromkeys(sessions))
        return await self._tx.set_status(scope, ids, status, at)
