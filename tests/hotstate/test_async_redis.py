"""The async Redis hot tier (``memstrata._async.store.redis_hot``: ``AsyncRedisHotStore`` on a
``redis.asyncio`` client, over an ``AsyncStore``) against a real redis-server
(``tests/servers.py``): the same answers, and the same keys and values in Redis, as its
generated sync twin (``RedisHotStore``) on the same operations — with Redis up, and through
an outage — and the Redis calls of two coroutines interleave on one event loop."""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import numpy as np
import pytest

from memstrata._async.store.base import AsyncStore
from memstrata._async.store.redis_hot import AsyncRedisHotStore
from memstrata._async.store.redis_hot import open_redis as open_async_redis
from memstrata.codec import record_to_dict
from memstrata.errors import StoreError
from memstrata.records import Content, MemoryRecord, RecordStatus, RecordType
from memstrata.scope import Scope
from memstrata.store.base import RecordWrite, Store
from memstrata.store.memory import InMemoryStore
from memstrata.store.quota_counters import Refusal, Take
from memstrata.store.redis_hot import RedisHotStore, open_redis
from servers import RedisServer, SharedRedis

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
MODEL = "test-model"


# --- a sync store presented as an AsyncStore, every call inline (test only) -----------------
class _Inline:
    """The sync object's methods as coroutines, run inline on the loop's thread; its
    ``transaction()`` as an async context manager. Used for the durable in-memory store (until
    the lead's ``memstrata.aio.threaded`` is there) and to drive the sync twin through the one
    async script below."""

    def __init__(self, sync: Any) -> None:
        self.sync = sync

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.sync, name)
        if not callable(target):
            return target

        async def call(*args: Any, **kwargs: Any) -> Any:
            return target(*args, **kwargs)

        return call

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Any]:
        with self.sync.transaction() as tx:
            yield _Inline(tx)

    async def aclose(self) -> None:
        self.sync.close()


def _async_durable(store: Store) -> AsyncStore:
    """The in-memory store as an ``AsyncStore``: the lead's thread adapter when it is there."""
    adapter: Any
    try:
        from memstrata.aio.threaded import threaded  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        adapter = _Inline(store)
    else:
        adapter = threaded(store)
    return cast(AsyncStore, adapter)


# --- records ---------------------------------------------------------------------------------
def _record(rid: str, text: str, minute: int, *, session: str | None = "s1") -> MemoryRecord:
    when = T0 + timedelta(minutes=minute)
    return MemoryRecord(
        id=rid,
        tenant="t1",
        user="u1",
        session=session,
        type=RecordType.MESSAGE if session else RecordType.NOTE,
        content=Content(text),
        created_at=when,
        updated_at=when,
        observed_at=when,
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
    )


def _write(record: MemoryRecord) -> RecordWrite:
    return RecordWrite(record, None, tuple(record.text.lower().split()))


def _vec(seed: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    v = np.random.default_rng(seed).standard_normal(8).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


# --- what Redis holds under a prefix, comparable across prefixes ---------------------------
def _keyspace(client: Any, prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for raw in client.scan_iter(match=f"{prefix}:*", count=500):
        name = raw.decode()[len(prefix) :]
        kind = client.type(raw).decode()
        if kind == "list":
            out[name] = [x.decode() for x in client.lrange(raw, 0, -1)]
        elif kind == "hash":
            fields = {k.decode(): v.decode() for k, v in client.hgetall(raw).items()}
            out[name] = {("p:*" if k.startswith("p:") else k): v for k, v in fields.items()}
        else:
            out[name] = client.get(raw)
    return out


def _turns(records: list[MemoryRecord]) -> list[dict[str, Any]]:
    return [record_to_dict(r) for r in records]


# --- one script, run on the async tier and on the sync twin ----------------------------------
Snapshot = Callable[[], dict[str, Any]]


async def _script(hot: Any, snapshot: Snapshot, between: Callable[[int], None]) -> list[Any]:
    """Every kind of operation of the hot tier; what each returns and what Redis then holds.
    ``between(step)`` runs between steps (the outage test kills and restarts Redis there)."""
    s1 = Scope("t1", "u1", session="s1")
    user = Scope("t1", "u1")
    seen: list[Any] = []

    def note(value: Any) -> None:
        seen.append(value)
        seen.append(snapshot())

    async with hot.transaction() as tx:
        await tx.append_turns([_write(_record(f"m{i}", f"turn {i}", i)) for i in range(3)])
        await tx.insert([_write(_record("n1", "a note", 3, session=None))])
    note("tx")
    between(1)
    note(_turns(await hot.recent_turns(s1, 2)))  # loads the session into Redis
    note(_turns(await hot.recent_turns(s1, 5)))  # served from Redis
    await hot.append_turns([_write(_record(f"m{i}", f"turn {i}", i)) for i in (3, 4)])
    note(_turns(await hot.recent_turns(s1, 10)))
    between(2)
    new = replace(_record("m1", "turn 1", 1), content=Content("turn 1, edited"), version=2)
    await hot.replace(user, _write(new), expected_version=1)
    note(_turns(await hot.recent_turns(s1, 10)))
    note(await hot.set_status(user, ["m2", "nope"], RecordStatus.DELETED, T0))
    note(_turns(await hot.recent_turns(s1, 10)))
    with pytest.raises(RuntimeError):
        async with hot.transaction() as tx:
            await tx.append_turns([_write(_record("m9", "rolled back", 9))])
            raise RuntimeError("abort")
    note(_turns(await hot.recent_turns(s1, 10)))
    between(3)
    await hot.cache_vectors(user, MODEL, {"h1": _vec(1), "h2": _vec(2)})
    got = await hot.cached_vectors(user, MODEL, ["h1", "h2", "h3"])
    note({k: v.tolist() for k, v in sorted(got.items())})
    note(await hot.take_counters([Take("q:a", 2, 3, 30), Take("q:b", 1, None, 30)]))
    note(await hot.take_counters([Take("q:a", 2, 3, 30)]))
    await hot.add_counters([Take("q:a", -1, None, 30)])
    note(await hot.counter_values(["q:a", "q:b", "q:c"]))
    note(await hot.take_counters([Take("q:a", 2, 3, 30)]))
    await hot.forget_counters(["q:b"])
    note(await hot.counter_values(["q:a", "q:b"]))
    between(4)
    note(await hot.purge(user, ["m0"]))
    note(_turns(await hot.recent_turns(s1, 10)))
    note(await hot.purge_user("t1", "u1"))
    note(_turns(await hot.recent_turns(s1, 10)))
    return seen


def _keyspace_or_down(client: Any, prefix: str) -> dict[str, Any]:
    import redis

    try:
        return _keyspace(client, prefix)
    except redis.RedisError:
        return {"down": True}


def _run_both(
    url: str,
    prefixes: tuple[str, str],
    *,
    between: Callable[[int], None] = lambda _step: None,
    cooldown: float = 2.0,
) -> tuple[list[Any], list[Any]]:
    """The script on the sync twin, then on the async tier (each over a fresh in-memory
    store, on a key prefix of its own): what each saw."""
    import redis

    sync_prefix, async_prefix = prefixes
    inspect = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5)

    async def run_sync() -> list[Any]:
        hot = RedisHotStore(InMemoryStore(), open_redis(url), prefix=sync_prefix, cooldown=cooldown)
        try:
            return await _script(
                _Inline(hot), lambda: _keyspace_or_down(inspect, sync_prefix), between
            )
        finally:
            hot.close()

    async def run_async() -> list[Any]:
        hot = AsyncRedisHotStore(
            _async_durable(InMemoryStore()),
            await open_async_redis(url),
            prefix=async_prefix,
            cooldown=cooldown,
        )
        try:
            return await _script(hot, lambda: _keyspace_or_down(inspect, async_prefix), between)
        finally:
            await hot.aclose()

    try:
        return asyncio.run(run_sync()), asyncio.run(run_async())
    finally:
        inspect.close()


def _assert_same(got: list[Any], expected: list[Any]) -> None:
    assert len(got) == len(expected)
    for i, (a, b) in enumerate(zip(got, expected, strict=True)):
        assert a == b, f"step {i // 2}: the {'answers' if i % 2 == 0 else 'Redis contents'} differ"


@pytest.fixture
def prefixes(shared_redis: SharedRedis) -> Iterator[tuple[str, str]]:
    """Two key prefixes on the session's Redis: the sync twin's and the async tier's."""
    pair = (shared_redis.prefix(), shared_redis.prefix())
    yield pair
    for prefix in pair:
        shared_redis.drop(prefix)


def test_same_answers_and_same_redis_contents_as_the_sync_twin(
    shared_redis: SharedRedis, prefixes: tuple[str, str]
) -> None:
    expected, got = _run_both(shared_redis.url, prefixes)
    _assert_same(got, expected)
    # the script did exercise Redis: turns, vectors and quota mirrors were there mid-way
    snapshots = got[1::2]
    assert any(k.endswith(":turns") for snap in snapshots for k in snap)
    assert any(":e:" in k for snap in snapshots for k in snap)
    assert any(k.startswith(":quota:") for snap in snapshots for k in snap)
    assert Refusal(0, 2) in got
    assert not [k for k in snapshots[-2] if k.startswith(":t1:u1:")]  # purge_user


def test_sessions_written_while_redis_is_up_are_not_kept_for_clean_up(
    shared_redis: SharedRedis, prefixes: tuple[str, str]
) -> None:
    """Only sessions Redis missed wait for the clean-up after an outage: with Redis up, the
    set stays empty (it used to keep every session ever written, in both tiers)."""
    writes = [_write(_record(f"m{i}", f"turn {i}", i, session=f"s{i}")) for i in range(3)]
    sync_hot = RedisHotStore(InMemoryStore(), open_redis(shared_redis.url), prefix=prefixes[0])
    try:
        sync_hot.append_turns(writes)
        assert sync_hot.available and not sync_hot._health.dirty_sessions
    finally:
        sync_hot.close()

    async def run() -> None:
        hot = AsyncRedisHotStore(
            _async_durable(InMemoryStore()),
            await open_async_redis(shared_redis.url),
            prefix=prefixes[1],
        )
        try:
            await hot.append_turns(writes)
            assert hot.available and not hot._health.dirty_sessions
        finally:
            await hot.aclose()

    asyncio.run(run())


def test_same_answers_as_the_sync_twin_through_a_redis_outage(own_redis: RedisServer) -> None:
    """In each run Redis is killed after step 1 and restarted empty after step 2: both tiers
    go on on the durable store, then clean up and use Redis again, identically."""

    def between(step: int) -> None:
        if step == 1:
            own_redis.kill()
        elif step == 2:
            own_redis.start()
            time.sleep(0.15)  # past the cool-down: the next call tries Redis again

    expected, got = _run_both(own_redis.url, ("ps", "pa"), between=between, cooldown=0.1)
    _assert_same(got, expected)
    snapshots = got[1::2]
    assert {"down": True} in snapshots  # the outage was real
    assert any(k.endswith(":turns") for snap in snapshots for k in snap)  # Redis used again


def test_two_coroutines_redis_calls_interleave_on_one_event_loop(own_redis: RedisServer) -> None:
    """Redis holds every command for 0.4 s (``CLIENT PAUSE``): two coroutines reading the
    embedding cache each start their Redis call before either one's ends, and both finish in
    one pause, not two — the event loop ran the second while the first waited on Redis."""
    import redis

    who: contextvars.ContextVar[str] = contextvars.ContextVar("who")
    events: list[tuple[str, str]] = []

    class Spy:
        """The async client, noting when each ``MGET`` starts and ends, and for whom."""

        def __init__(self, client: Any) -> None:
            self._client = client

        def __getattr__(self, name: str) -> Any:
            return getattr(self._client, name)

        async def mget(self, *args: Any, **kwargs: Any) -> Any:
            events.append(("start", who.get()))
            try:
                return await self._client.mget(*args, **kwargs)
            finally:
                events.append(("end", who.get()))

    async def main() -> tuple[float, list[Any]]:
        client = await open_async_redis(own_redis.url, timeout=5.0)
        hot = AsyncRedisHotStore(_async_durable(InMemoryStore()), Spy(client), prefix="p")
        alice, bob = Scope("t1", "alice"), Scope("t1", "bob")
        await hot.cache_vectors(alice, MODEL, {"h": _vec(1)})
        await hot.cache_vectors(bob, MODEL, {"h": _vec(2)})
        # both connections exist before the pause (the pool opens one per concurrent call)
        await asyncio.gather(client.ping(), client.ping())

        async def read(name: str, scope: Scope) -> Any:
            who.set(name)
            return await hot.cached_vectors(scope, MODEL, ["h"])

        pauser = redis.Redis.from_url(own_redis.url)
        try:
            pauser.client_pause(400, all=True)
            started = time.monotonic()
            got = await asyncio.gather(read("alice", alice), read("bob", bob))
            elapsed = time.monotonic() - started
        finally:
            pauser.close()
            await hot.aclose()
        return elapsed, list(got)

    elapsed, (a, b) = asyncio.run(main())
    assert a["h"].tolist() == _vec(1).tolist() and b["h"].tolist() == _vec(2).tolist()
    assert [e[0] for e in events[:2]] == ["start", "start"], events
    assert {e[1] for e in events[:2]} == {"alice", "bob"}, events
    assert 0.3 < elapsed < 0.75, elapsed  # one pause for both, not one each


def test_unreachable_redis_is_the_same_clear_error_as_the_sync_twin(own_redis: RedisServer) -> None:
    url = own_redis.url
    own_redis.kill()
    with pytest.raises(StoreError) as sync_error:
        open_redis(url)
    with pytest.raises(StoreError) as async_error:
        asyncio.run(open_async_redis(url))
    assert "refused the connection" in str(async_error.value)
    assert str(async_error.value).split(" (")[0] == str(sync_error.value).split(" (")[0]
