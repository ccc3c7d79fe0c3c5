"""Redis hot state in front of SQLite, against a real redis-server (``tests/servers.py``):
write-through, same recent turns and contexts as without Redis, purge reaches Redis, and a
Redis killed or paused mid-run loses nothing and serves nothing stale."""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.codec import record_to_dict
from memstrata.errors import MissingDependencyError, StoreError, ValidationError
from memstrata.records import MemoryRecord
from memstrata.store.redis_hot import RedisHotStore
from servers import RedisServer, redis_server_process, unavailable

LOGGER = "memstrata.store.redis_hot"
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@dataclass
class _External:
    url: str


@pytest.fixture(scope="session")
def redis_server() -> RedisServer | _External:
    """The session's redis-server (``MEMSTRATA_TEST_REDIS_URL`` names your own)."""
    if os.environ.get("MEMSTRATA_TEST_REDIS_URL"):
        return _External(os.environ["MEMSTRATA_TEST_REDIS_URL"])
    try:
        return redis_server_process()
    except RuntimeError as exc:
        unavailable("redis-server", str(exc))
        raise


def _client(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url)


def _mem(tmp_path: Path, name: str, buffer: str | None, clock: FixedClock) -> Memory:
    return Memory(
        f"sqlite:///{tmp_path / name}",
        embedder="hashing",
        clock=clock,
        background=False,
        buffer=buffer,
    )


def _hot(mem: Memory) -> RedisHotStore:
    store = mem.store
    assert isinstance(store, RedisHotStore)
    return store


def _ids(records: list[MemoryRecord]) -> list[str]:
    return [r.id for r in records]


def _texts(records: list[MemoryRecord]) -> list[str]:
    return [r.content.raw for r in records]


def _user_keys(url: str, tenant: str, user: str) -> list[bytes]:
    return sorted(_client(url).scan_iter(match=f"memstrata:{tenant}:{user}:*"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- opening ---------------------------------------------------------------------------------
def test_refusing_redis_is_a_clear_error_before_anything_is_written(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{_free_port()}/0"
    with pytest.raises(StoreError, match="refused the connection.*redis-server"):
        Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", buffer=url)
    assert not (tmp_path / "m.db").exists()


@pytest.mark.parametrize("buffer", ["http://x", "nourl", "postgresql://u@h/db"])
def test_buffer_must_be_a_redis_url(tmp_path: Path, buffer: str) -> None:
    with pytest.raises(ValidationError, match="not a Redis URL"):
        Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", buffer=buffer)
    assert not (tmp_path / "m.db").exists()


def test_missing_redis_package_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'memstrata\[redis\]'"):
        Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", buffer="redis://127.0.0.1:1/0")
    assert not (tmp_path / "m.db").exists()


# --- write-through and reads -----------------------------------------------------------------
def test_write_through_and_reads_served_by_redis(
    tmp_path: Path, redis_server: RedisServer | _External
) -> None:
    clock = FixedClock(T0)
    alice = Scope("wt", "alice", session="s1")
    with _mem(tmp_path, "m.db", redis_server.url, clock) as mem:
        hot = _hot(mem)
        first = mem.add_messages(
            alice, [{"role": "user", "content": f"turn {i}"} for i in range(3)]
        )
        # the durable store has every acknowledged turn, whatever Redis holds
        assert _ids(hot.durable.recent_turns(alice, 10)) == _ids(first)
        assert _ids(mem.store.recent_turns(alice, 10)) == _ids(first)  # loads the session
        r = _client(redis_server.url)
        turns_key = "memstrata:wt:alice:s:s1:turns"
        assert r.llen(turns_key) == 3
        more = mem.add_message(alice, "assistant", "turn 3")
        assert r.llen(turns_key) == 4  # appended after the durable commit
        assert _ids(hot.durable.recent_turns(alice, 10)) == _ids([*first, more])
        # reads come from Redis: a record planted only there is what recent_turns returns
        planted = record_to_dict(more)
        planted["id"], planted["content"]["raw"] = "planted", "only in redis"
        r.rpush(turns_key, json.dumps(planted))
        assert mem.store.recent_turns(alice, 1)[0].content.raw == "only in redis"
        assert "planted" not in _ids(hot.durable.recent_turns(alice, 10))


@pytest.mark.parametrize("durable", ["sqlite", "postgresql"])
def test_same_recent_turns_and_contexts_with_and_without_redis(
    tmp_path: Path,
    redis_server: RedisServer | _External,
    durable: str,
    request: pytest.FixtureRequest,
) -> None:
    scope = Scope("eq", "bob", session="s1")
    other = Scope("eq", "bob", session="s2")
    results = []
    for name, buffer in (("plain.db", None), ("hot.db", redis_server.url)):
        clock = FixedClock(T0)
        if durable == "postgresql":  # a fresh schema each, on the session's server
            url = request.getfixturevalue("pg_server").url()
        else:
            url = f"sqlite:///{tmp_path / name}"
        scope = Scope("eq", f"bob-{durable}", session="s1")
        other = scope.with_session("s2")
        with Memory(url, embedder="hashing", clock=clock, background=False, buffer=buffer) as mem:
            snapshots = []
            for i in range(12):
                clock.advance(minutes=1)
                mem.add_message(
                    scope,
                    "user" if i % 2 == 0 else "assistant",
                    f"message {i} about Lisbon and coffee {i * 7}",
                )
                snapshots.append(_texts(mem.store.recent_turns(scope, 5)))
            mem.add_message(other, "user", "another session entirely")
            # an import with an old timestamp lands in the middle, a delete, an edit
            mem.add_message(scope, "user", "an old one", observed_at=T0 - timedelta(days=1))
            turns = mem.store.recent_turns(scope, 50)
            mem.delete(scope, turns[3].id)
            mem.flush()
            snapshots.append(_texts(mem.store.recent_turns(scope, 50)))
            snapshots.append(_texts(mem.store.recent_turns(scope.with_agent("a1"), 4)))
            ctx = mem.build_context(scope, "where is the coffee?", token_budget=2000)
            results.append(
                (
                    snapshots,
                    [r.content.raw for r in mem.store.recent_turns(scope, 50)],
                    ctx.messages,
                )
            )
    assert results[0] == results[1]
    assert results[1][1][0] == "an old one"
    assert len(results[1][0][-2]) == 12  # 14 turns, one deleted, one in another session


def test_embedding_cache_in_redis_is_per_user_and_write_through(
    tmp_path: Path, redis_server: RedisServer | _External
) -> None:
    with _mem(tmp_path, "m.db", redis_server.url, FixedClock(T0)) as mem:
        hot = _hot(mem)
        carol = Scope("ec", "carol")
        dave = Scope("ec", "dave")
        mem.add(carol, "the cat sleeps on the red sofa")
        mem.search(carol, "sofa")
        keys = _user_keys(redis_server.url, "ec", "carol")
        assert any(b":e:" in k for k in keys)
        model = mem.embedder.model_id
        names = [k.decode().rsplit(":", 1)[1].replace("%3A", ":") for k in keys if b":e:" in k]
        durable = hot.durable.cached_vectors(carol, model, names)
        assert set(durable) == set(names)  # every Redis entry is also in the durable store
        from_redis = hot.cached_vectors(carol, model, names)
        for name in names:
            assert from_redis[name].tolist() == durable[name].tolist()
        assert hot.cached_vectors(dave, model, names) == {}


def test_purge_user_deletes_their_redis_keys_only(
    tmp_path: Path, redis_server: RedisServer | _External
) -> None:
    alice = Scope("pg", "alice", session="s1")
    bob = Scope("pg", "bob", session="s1")
    with _mem(tmp_path, "m.db", redis_server.url, FixedClock(T0)) as mem:
        for who in (alice, bob):
            mem.add_message(who, "user", f"hello from {who.user}, I like tea")
            mem.store.recent_turns(who, 5)
            mem.search(who.user_scope, "tea")
        assert _user_keys(redis_server.url, "pg", "alice")
        bob_keys = _user_keys(redis_server.url, "pg", "bob")
        report = mem.purge(alice.user_scope)
        assert report.remaining == 0
        assert _user_keys(redis_server.url, "pg", "alice") == []
        assert _user_keys(redis_server.url, "pg", "bob") == bob_keys
        assert mem.store.recent_turns(alice, 5) == []


def test_tenant_and_user_with_glob_characters_stay_apart(
    tmp_path: Path, redis_server: RedisServer | _External
) -> None:
    star = Scope("gl", "*", session="s")
    plain = Scope("gl", "x", session="s")
    with _mem(tmp_path, "m.db", redis_server.url, FixedClock(T0)) as mem:
        mem.add_message(star, "user", "star user")
        mem.add_message(plain, "user", "plain user")
        mem.store.recent_turns(star, 5)
        mem.store.recent_turns(plain, 5)
        mem.purge(star.user_scope)
        assert [r.content.raw for r in mem.store.recent_turns(plain, 5)] == ["plain user"]
        assert _user_keys(redis_server.url, "gl", "x")


# --- outages ---------------------------------------------------------------------------------
def test_redis_killed_mid_run_then_restarted(
    tmp_path: Path, own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FixedClock(T0)
    scope = Scope("ko", "erin", session="s1")
    with _mem(tmp_path, "m.db", own_redis.url, clock) as mem:
        hot = _hot(mem)
        hot._health.cooldown = 0.2
        acknowledged = [
            r.id
            for r in mem.add_messages(
                scope, [{"role": "user", "content": f"before {i}"} for i in range(3)]
            )
        ]
        assert _ids(mem.store.recent_turns(scope, 10)) == acknowledged
        own_redis.kill()  # SIGKILL
        caplog.set_level(logging.INFO, logger=LOGGER)
        for i in range(5):
            clock.advance(seconds=1)
            acknowledged.append(mem.add_message(scope, "user", f"during {i}").id)
            assert _ids(mem.store.recent_turns(scope, 50)) == acknowledged
            mem.search(scope.user_scope, f"during {i}")
            mem.build_context(scope, "what happened?", token_budget=1000)
            time.sleep(0.25)  # past the cool-down: every call retries a dead Redis
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING and r.name == LOGGER]
        assert len(warnings) == 1 and "durable store" in warnings[0].getMessage()
        assert not hot.available
        own_redis.start()  # same port, empty
        time.sleep(0.3)
        acknowledged.append(mem.add_message(scope, "user", "after").id)
        assert hot.available
        assert _ids(mem.store.recent_turns(scope, 50)) == acknowledged
        assert _client(own_redis.url).llen("memstrata:ko:erin:s:s1:turns") == len(acknowledged)
        assert _ids(hot.durable.recent_turns(scope, 50)) == acknowledged
        assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


def test_paused_redis_keeps_its_stale_list_which_is_never_served(
    tmp_path: Path, own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis keeps its data through the outage (paused, not killed): the turns written
    meanwhile are missing from its list, and must not be hidden after it comes back."""
    scope = Scope("pa", "finn", session="s1")
    with _mem(tmp_path, "m.db", own_redis.url, FixedClock(T0)) as mem:
        hot = _hot(mem)
        hot._health.cooldown = 0.2
        first = mem.add_message(scope, "user", "before the pause")
        assert _ids(mem.store.recent_turns(scope, 10)) == [first.id]
        _client(own_redis.url).execute_command("CLIENT", "PAUSE", 1500, "ALL")
        caplog.set_level(logging.WARNING, logger=LOGGER)
        during = mem.add_message(scope, "user", "during the pause")  # times out on Redis
        assert not hot.available
        assert _ids(mem.store.recent_turns(scope, 10)) == [first.id, during.id]
        time.sleep(1.6)
        # Redis is back with the old list (one turn); the session is invalidated first
        assert _ids(mem.store.recent_turns(scope, 10)) == [first.id, during.id]
        assert hot.available
        assert _ids(mem.store.recent_turns(scope, 10)) == [first.id, during.id]
        assert len(caplog.records) == 1


def test_writer_dying_after_its_commit_never_hides_its_turn(
    tmp_path: Path, redis_server: RedisServer | _External
) -> None:
    scope = Scope("wd", "gus", session="s1")
    with _mem(tmp_path, "m.db", redis_server.url, FixedClock(T0)) as mem:
        hot = _hot(mem)
        hot._marker_ms = 200
        first = mem.add_message(scope, "user", "first")
        assert _ids(mem.store.recent_turns(scope, 10)) == [first.id]
        # a writer marks the session, commits durably, then dies before updating Redis
        other = Memory(hot.durable.url, embedder="hashing", background=False)
        key = ("wd", "gus", "s1")
        assert hot._begin([key]) is not None
        lost = other.add_message(scope, "user", "committed, then the writer died")
        other.close()
        assert _ids(mem.store.recent_turns(scope, 10)) == [first.id, lost.id]  # marker live
        time.sleep(0.3)
        assert _ids(mem.store.recent_turns(scope, 10)) == [first.id, lost.id]  # invalidated
        assert _ids(mem.store.recent_turns(scope, 10)) == [first.id, lost.id]  # reloaded


def test_rolled_back_transaction_leaves_no_marker(
    tmp_path: Path, redis_server: RedisServer | _External
) -> None:
    scope = Scope("rb", "hal", session="s1")
    with _mem(tmp_path, "m.db", redis_server.url, FixedClock(T0)) as mem:
        first = mem.add_message(scope, "user", "first")
        mem.store.recent_turns(scope, 5)
        with pytest.raises(ValidationError):  # the same id twice: nothing is written
            mem.store.append_turns(mem._ctx.writes([first]))
        meta = _client(redis_server.url).hgetall("memstrata:rb:hal:s:s1:meta")
        assert not [k for k in meta if k.startswith(b"p:")]
        assert _ids(mem.store.recent_turns(scope, 5)) == [first.id]


def test_concurrent_writers_and_readers_never_see_a_stale_session(
    tmp_path: Path, redis_server: RedisServer | _External
) -> None:
    """Two Memory objects (as two processes would) append to one session on one SQLite
    file and one Redis while a third reads: every read from Redis contains every turn
    acknowledged before it began, and at the end Redis and the store agree."""
    import threading

    scope = Scope("cc", "ivy", session="s1")
    url = f"sqlite:///{tmp_path / 'm.db'}"
    mems = [
        Memory(url, embedder="hashing", background=False, buffer=redis_server.url) for _ in range(3)
    ]
    acked: list[str] = []
    lock = threading.Lock()
    errors: list[str] = []

    def write(mem: Memory, who: int) -> None:
        for i in range(25):
            rid = mem.add_message(scope, "user", f"writer {who} turn {i}").id
            with lock:
                acked.append(rid)

    def read(mem: Memory) -> None:
        for _ in range(60):
            with lock:
                before = set(acked)
            seen = {r.id for r in mem.store.recent_turns(scope, 500)}
            if not before <= seen:
                errors.append(f"missing {len(before - seen)} acknowledged turn(s)")

    calls = [0]
    reader = _hot(mems[2]).durable
    original = reader.recent_turns

    def counted(*a: Any, **k: Any) -> list[MemoryRecord]:
        calls[0] += 1
        return original(*a, **k)

    reader.recent_turns = counted  # type: ignore[method-assign]
    threads = [threading.Thread(target=write, args=(mems[i], i)) for i in range(2)]
    threads.append(threading.Thread(target=read, args=(mems[2],)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        hot = _hot(mems[2])
        durable = _ids(original(scope, 500))
        assert sorted(durable) == sorted(acked)
        assert _ids(hot.recent_turns(scope, 500)) == durable  # may load the session
        loaded = calls[0]
        for _ in range(3):  # once loaded, and with no writer left, Redis answers alone
            assert _ids(hot.recent_turns(scope, 500)) == durable
        assert calls[0] == loaded
    finally:
        for m in mems:
            m.close()
