"""A purge leaves no trace in Redis (issue 10 §6, "Redis keys"): after ``purge`` no key and no
value of the whole Redis server holds the purged words, stemmed terms, record ids or vector
(and, for a whole user, the user id, the scope token or the quota subject hash), while the
other user's keys stay. The test runs on a redis-server of its own so it can scan every key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from memstrata import FixedClock, Memory, Scope
from memstrata.quotas import Quota, Quotas, subject_hash
from memstrata.search.tokenize import tokenize
from memstrata.store.sqlite.codec import scope_token
from servers import RedisServer, redis_bytes

VICTIM = Scope("acme", "victim-7731", session="sv")
OTHER = Scope("acme", "bystander-4242", session="so")
SECRET = "Flumblewick keeps the quarzanite ledger under locker 88231957"
KEPT = "the weather in Porto is mild in spring"


def _found(blobs: list[bytes], needles: set[bytes]) -> list[bytes]:
    return sorted(n for n in needles if any(n in b.lower() or n in b for b in blobs))


def _vector_bytes(mem: Memory, text: str) -> bytes:
    vec = mem.embedder.embed_batch([text])[0]
    return np.asarray(vec, dtype=np.float32).reshape(-1).tobytes()


def _words(text: str) -> set[bytes]:
    out = {w.lower() for w in text.split() if len(w) > 6}
    out |= {t for t in tokenize(text) if len(t) > 6}
    return {w.encode() for w in out}


def _mem(tmp_path: Path, server: RedisServer, clock: FixedClock, **kw: Any) -> Memory:
    return Memory(
        f"sqlite:///{tmp_path / 'hot.db'}",
        embedder="hashing",
        clock=clock,
        background=False,
        buffer=server.url,
        **kw,
    )


def _fill(mem: Memory) -> str:
    mem.add_message(OTHER, "user", KEPT)
    mem.add_message(VICTIM, "user", "we talked about gardening and tomatoes")
    victim = mem.add_message(VICTIM, "user", SECRET)
    mem.add_message(VICTIM, "assistant", "noted, the weather is nice")
    for who in (VICTIM, OTHER):
        mem.store.recent_turns(who, 10)  # load the sessions into Redis
        mem.search(who.user_scope, "where is the ledger kept")
    return victim.id


def test_single_record_purge_leaves_nothing_in_redis(
    tmp_path: Path, own_redis: RedisServer, clock: FixedClock
) -> None:
    mem = _mem(tmp_path, own_redis, clock)
    try:
        rid = _fill(mem)
        vector = _vector_bytes(mem, SECRET)
        needles = _words(SECRET) | {rid.encode(), vector}
        assert vector in redis_bytes(own_redis.url)  # the cache held it
        report = mem.purge(VICTIM, [rid])
        assert report.records >= 1 and report.remaining == 0
        left = _found(redis_bytes(own_redis.url), needles)
        assert left == [], f"purged record still in Redis: {left!r}"
        # the rest of the user and the other user are still served from Redis
        assert [r.text for r in mem.store.recent_turns(OTHER, 10)] == [KEPT]
        texts = [r.text for r in mem.store.recent_turns(VICTIM, 10)]
        assert SECRET not in texts and "noted, the weather is nice" in texts
        keys = redis_bytes(own_redis.url)
        assert any(k.startswith(b"memstrata:acme:victim-7731:e:") for k in keys)  # not wiped
    finally:
        mem.close()


def test_whole_user_purge_leaves_nothing_in_redis(
    tmp_path: Path, own_redis: RedisServer, clock: FixedClock
) -> None:
    quotas = Quotas(per_user=Quota(embeddings_per_day=1000), per_tenant=Quota(max_records=1000))
    mem = _mem(tmp_path, own_redis, clock, quotas=quotas)
    try:
        ids = [_fill(mem)]
        ids += [r.id for r in mem.list(VICTIM.user_scope, limit=1000)]
        mem.end_session(VICTIM)
        ids += [r.id for r in mem.list(VICTIM.user_scope, limit=1000)]
        needles = _words(SECRET) | {i.encode() for i in ids}
        needles |= {
            b"victim-7731",
            _vector_bytes(mem, SECRET),
            scope_token(VICTIM.tenant, VICTIM.user).encode(),
            subject_hash(VICTIM.tenant, VICTIM.user).encode(),
        }
        assert _found(redis_bytes(own_redis.url), needles)  # the scan sees them before
        report = mem.purge(VICTIM.user_scope)
        assert report.remaining == 0
        left = _found(redis_bytes(own_redis.url), needles)
        assert left == [], f"purged user still in Redis: {left!r}"
        assert b"bystander-4242" in b"".join(redis_bytes(own_redis.url))
    finally:
        mem.close()
