"""The quota counter contract (``memstrata.store.quota_counters``) on every store kind,
Redis tiers included: all-or-nothing takes, give-backs, leases; and the Redis mirror never
admits what the durable counters refuse."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

import servers
from memstrata.store import Store
from memstrata.store.quota_counters import QuotaCounters, Refusal, Take
from memstrata.store.redis_hot import RedisHotStore
from store.conftest import STORE_KINDS, make_store


@pytest.fixture(params=STORE_KINDS)
def counters(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[QuotaCounters]:
    s = make_store(request.param, tmp_path)
    assert isinstance(s, QuotaCounters)
    yield s
    s.close()
    if request.param.startswith("postgresql"):
        servers.postgres().drop(s.options.schema)  # type: ignore[attr-defined]


def test_takes_are_all_or_nothing(counters: QuotaCounters) -> None:
    assert counters.counter_values(["a", "b"]) == {"a": 0, "b": 0}
    assert counters.take_counters([Take("a", 3, 5), Take("b", 2, 2)]) is None
    assert counters.counter_values(["a", "b"]) == {"a": 3, "b": 2}
    # b would pass its limit: a does not grow either
    assert counters.take_counters([Take("a", 1, 5), Take("b", 1, 2)]) == Refusal(1, 2)
    assert counters.counter_values(["a", "b"]) == {"a": 3, "b": 2}
    assert counters.take_counters([Take("a", 3, 5)]) == Refusal(0, 3)
    assert counters.take_counters([Take("a", 2, 5)]) is None  # exactly the limit
    assert counters.take_counters([Take("a", 1, 5)]) == Refusal(0, 5)
    # one key twice in a call counts twice
    assert counters.take_counters([Take("c", 2, 3), Take("c", 2, 3)]) == Refusal(1, 0)
    assert counters.take_counters([Take("c", 1, None), Take("c", 1, 3)]) is None
    assert counters.counter_values(["c"]) == {"c": 2}


def test_give_back_and_forget(counters: QuotaCounters) -> None:
    counters.take_counters([Take("k", 4, 4, 60)])
    counters.add_counters([Take("k", -3)])
    assert counters.counter_values(["k"]) == {"k": 1}
    assert counters.take_counters([Take("k", 3, 4, 60)]) is None
    counters.add_counters([Take("k", -10)])
    assert counters.counter_values(["k"]) == {"k": 0}  # never below zero
    counters.add_counters([Take("k", 2)])
    counters.forget_counters(["k", "never-set"])
    assert counters.counter_values(["k"]) == {"k": 0}
    assert counters.take_counters([Take("k", 4, 4)]) is None


def test_a_lease_has_one_holder_until_it_ends(counters: QuotaCounters) -> None:
    assert counters.lease("L", "t1", 1_000, 2_000)
    assert not counters.lease("L", "t2", 1_500, 3_000)
    assert counters.lease("L", "t1", 1_500, 2_500)  # the holder renews
    counters.release("L", "t2")  # not the holder: nothing happens
    assert not counters.lease("L", "t2", 2_000, 3_000)
    assert counters.lease("L", "t2", 2_500, 3_500)  # t1's lease ended (it died)
    counters.release("L", "t2")
    assert counters.lease("L", "t3", 2_600, 3_600)


def test_bad_takes_are_validation_errors() -> None:
    from memstrata.errors import ValidationError

    for bad in (lambda: Take("", 1), lambda: Take("k", 1.5), lambda: Take("k", True)):  # type: ignore[arg-type]
        with pytest.raises(ValidationError):
            bad()


@pytest.fixture
def hot(tmp_path: Path) -> Iterator[RedisHotStore]:
    s = make_store("sqlite+redis", tmp_path)
    assert isinstance(s, RedisHotStore)
    yield s
    s.close()


def _mirror(hot: RedisHotStore, key: str) -> Any:
    return hot._redis.get(hot._mirror(key))


def test_the_redis_mirror_never_admits_what_the_durable_counters_refuse(
    hot: RedisHotStore,
) -> None:
    durable = cast(QuotaCounters, hot.durable)
    assert hot.take_counters([Take("q", 2, 5, 3600)]) is None
    assert int(_mirror(hot, "q")) == 2 and durable.counter_values(["q"]) == {"q": 2}
    # another process counted on the durable store alone (Redis was down for it)
    durable.add_counters([Take("q", 3)])
    assert hot.take_counters([Take("q", 1, 5, 3600)]) == Refusal(0, 5)
    assert durable.counter_values(["q"]) == {"q": 5}
    assert _mirror(hot, "q") is None  # reloaded on the next take
    assert hot.take_counters([Take("q", 1, 5, 3600)]) == Refusal(0, 5)
    assert int(_mirror(hot, "q")) == 5  # loaded from the durable counter, and refused there


def test_redis_refuses_without_a_durable_write_and_expires_its_mirror(hot: RedisHotStore) -> None:
    assert hot.take_counters([Take("r", 3, 3, 3600)]) is None
    store = cast(Store, hot.durable)
    before = store.get_meta("r")
    assert hot.take_counters([Take("r", 1, 3, 3600)]) == Refusal(0, 3)
    assert store.get_meta("r") == before == "3"
    assert 0 < hot._redis.ttl(hot._mirror("r")) <= 60  # a stale mirror lives a minute at most


def test_a_purge_deletes_the_users_counter_mirrors(
    tmp_path: Path, shared_redis: servers.SharedRedis
) -> None:
    from datetime import UTC, datetime

    from memstrata import Memory, Scope
    from memstrata.quotas import Quota, Quotas, day_key

    shared = shared_redis
    prefix = shared.prefix()
    buffer = shared.buffer_url(prefix)
    try:
        with Memory(
            f"sqlite:///{tmp_path / 'p.db'}",
            embedder="hashing",
            background=False,
            buffer=buffer,
            quotas=Quotas(per_user=Quota(embeddings_per_day=9)),
        ) as mem:
            a, b = Scope("acme", "ann", session="s"), Scope("acme", "ben", session="s")
            mem.add_message(a, "user", "count me")
            mem.add_message(b, "user", "and me")
            hot = cast(RedisHotStore, mem.store)
            now = datetime.now(UTC)
            ka, kb = (day_key("emb", "acme", u, now) for u in ("ann", "ben"))
            assert _mirror(hot, ka) is not None and _mirror(hot, kb) is not None
            mem.purge(a.user_scope)
            assert _mirror(hot, ka) is None and _mirror(hot, kb) is not None
            assert hot.counter_values([ka, kb]) == {ka: 0, kb: 1}
    finally:
        shared.drop(prefix)
