"""What the Redis hot-state buffer remembers of an outage is bounded (session 29).

While Redis is down every session written is remembered, to be invalidated when Redis is
back (else its list, missing the turns written meanwhile, would be served). A long outage of
a busy server writes to millions of sessions: before, each stayed in a set until Redis came
back. Past ``DIRTY_SESSIONS_MAX`` the process now remembers only that there were more, and
invalidates every session Redis holds when it is back: still none served stale.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import memstrata.store.redis_hot as redis_hot
from memstrata import Memory, Scope
from memstrata.store.redis_hot import RedisHotStore
from servers import RedisServer

CAP = 10
SESSIONS = 3 * CAP


def test_sessions_written_during_an_outage_are_bounded_and_none_is_served_stale(
    tmp_path: Path, own_redis: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import redis

    monkeypatch.setattr(redis_hot, "DIRTY_SESSIONS_MAX", CAP, raising=False)
    scopes = [Scope("ko", f"user-{i}", session=f"s{i}") for i in range(SESSIONS)]
    with Memory(
        f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", background=False, buffer=own_redis.url
    ) as mem:
        hot = mem.store
        assert isinstance(hot, RedisHotStore)
        before = [mem.add_message(s, "user", f"before {i}").id for i, s in enumerate(scopes)]
        for s, rid in zip(scopes, before, strict=True):  # each list loaded in Redis
            assert [r.id for r in mem.store.recent_turns(s, 10)] == [rid]
        hot._health.cooldown = 600.0  # no retry during the outage
        redis.Redis.from_url(own_redis.url).execute_command("CLIENT", "PAUSE", 1500, "ALL")
        during = [mem.add_message(s, "user", f"during {i}").id for i, s in enumerate(scopes)]
        assert not hot.available
        health = hot._health
        assert len(health.dirty_sessions) <= CAP
        time.sleep(1.6)  # the pause is over: Redis holds the old lists (one turn each)
        health.cooldown = 0.0
        for s, first, second in zip(scopes, before, during, strict=True):
            assert [r.id for r in mem.store.recent_turns(s, 10)] == [first, second]
        assert hot.available
        assert not health.dirty_sessions and not health.every_session
        for s, first, second in zip(scopes, before, during, strict=True):  # served by Redis
            assert [r.id for r in mem.store.recent_turns(s, 10)] == [first, second]
