"""With ``buffer=`` (Redis keeps sessions' recent turns): a turn another user shared with
the purged user is not read from Redis with its old readers after the purge."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata import Memory, Scope
from memstrata.errors import NotFoundError
from servers import redis_server_process

BOB = Scope("acme", "bob", session="s1")
CAROL_ID = "carol.smith@example.com"
CAROL = Scope("acme", CAROL_ID)


@pytest.fixture
def mem(pg_url: str, redis_buffer_url: str) -> Iterator[Memory]:
    m = Memory(pg_url, embedder="hashing", background=False, buffer=redis_buffer_url)
    yield m
    m.close()


def test_a_cached_turn_loses_the_purged_reader(mem: Memory) -> None:
    mem.add(CAROL, "carol's own note")
    turns = mem.add_messages(BOB, [{"role": "user", "content": f"bob says {i}"} for i in range(3)])
    mem.set_access(BOB, turns[1].id, visibility="shared", allowed_users=[CAROL_ID, "dave"])
    as_carol = BOB.as_caller(CAROL_ID)
    assert [t.id for t in mem.store.recent_turns(as_carol, 10)] == [turns[1].id]  # cached now
    mem.purge(CAROL.user_scope)
    assert mem.store.recent_turns(as_carol, 10) == []
    with pytest.raises(NotFoundError):
        mem.get(as_carol, turns[1].id)
    assert [t.id for t in mem.store.recent_turns(BOB.as_caller("dave"), 10)] == [turns[1].id]
    kept = mem.store.recent_turns(BOB, 10)
    assert [t.access.allowed_users for t in kept] == [(), ("dave",), ()]


@pytest.fixture
def own_redis() -> Iterator[Any]:
    """A redis-server of this test alone (it is paused)."""
    server = redis_server_process()
    yield server
    server.kill()


def test_a_purge_while_redis_is_away_drops_the_sessions_when_it_is_back(
    tmp_path: Path, own_redis: Any
) -> None:
    import redis

    m = Memory(
        f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", background=False, buffer=own_redis.url
    )
    try:
        hot: Any = m.store
        hot._health.cooldown = 0.2
        m.add(CAROL, "carol's own note")
        turns = m.add_messages(
            BOB, [{"role": "user", "content": f"bob says {i}"} for i in range(2)]
        )
        m.set_access(BOB, turns[1].id, visibility="shared", allowed_users=[CAROL_ID])
        as_carol = BOB.as_caller(CAROL_ID)
        assert [t.id for t in m.store.recent_turns(as_carol, 10)] == [turns[1].id]  # cached
        redis.Redis.from_url(own_redis.url).execute_command("CLIENT", "PAUSE", 1500, "ALL")
        m.purge(CAROL.user_scope)  # Redis times out: what it holds is dealt with later
        assert not hot.available
        time.sleep(1.6)
        assert m.store.recent_turns(as_carol, 10) == []
        assert hot.available
        assert m.store.recent_turns(as_carol, 10) == []
    finally:
        m.close()
