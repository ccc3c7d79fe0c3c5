"""Store and buffer URLs a user may write, on the suite's real PostgreSQL and Redis: each is
either used as written or refused with a ``MemstrataError`` naming the fix, before anything
is written (session 33's audit)."""

from __future__ import annotations

import pytest

from memstrata import Memory, Scope
from memstrata.errors import ValidationError
from servers import PgServer, SharedRedis

ME = Scope("acme", "alice", session="s1")


def test_a_libpq_option_with_a_space_reaches_the_server(pg_url: str) -> None:
    """``options=-c%20statement_timeout%3D4321`` is libpq's own form; memstrata re-encoded
    the space as ``+``, which libpq keeps, so the server refused "+statement_timeout"."""
    url = pg_url + "&options=-c%20statement_timeout%3D4321&application_name=my%20app"
    with Memory(url, embedder="hashing", background=False) as mem:
        mem.add(ME, "a note about herons")
        store = mem.store
        with store._pool.connection() as conn:  # type: ignore[attr-defined]
            timeout = conn.execute("SHOW statement_timeout").fetchone()
            name = conn.execute("SHOW application_name").fetchone()
    assert timeout == {"statement_timeout": "4321ms"}
    assert name == {"application_name": "my app"}


@pytest.mark.parametrize("option", ["schema", "pool_max", "exact_below"])
def test_a_store_option_given_twice_is_refused(pg_server: PgServer, option: str) -> None:
    """``schema=a&schema=b``: the last one won, so the store written was not the one the
    first names, without a word."""
    url = pg_server.url("a33_twice_a") if option != "schema" else pg_server.admin_url
    value = {"schema": "a33_twice_b", "pool_max": "4", "exact_below": "10"}[option]
    first = {"schema": "a33_twice_a", "pool_max": "2", "exact_below": "5"}[option]
    sep = "&" if "?" in url else "?"
    url += f"{sep}{option}={first}&{option}={value}"
    with pytest.raises(ValidationError, match=rf"{option}= is given twice"):
        Memory(url, embedder="hashing", background=False)


def test_a_buffer_prefix_given_twice_is_refused(shared_redis: SharedRedis) -> None:
    url = f"{shared_redis.url}?prefix=app1&prefix=app2"
    with pytest.raises(ValidationError, match=r"prefix= is given twice \('app1' and 'app2'\)"):
        Memory("memory://", embedder="hashing", background=False, buffer=url)


def test_a_buffer_option_redis_does_not_take(shared_redis: SharedRedis) -> None:
    """``?socket_timout=1`` (misspelt): redis-py passes it on to its connection, which
    raised a bare ``TypeError`` out of ``Memory(...)``; the password is never shown."""
    url = shared_redis.url.replace("redis://", "redis://:hunter2@") + "?socket_timout=1"
    with pytest.raises(ValidationError, match="socket_timout") as caught:
        Memory("memory://", embedder="hashing", background=False, buffer=url)
    assert "hunter2" not in str(caught.value)
    assert "remove it" in str(caught.value)


@pytest.mark.parametrize("db", ["abc", "0x1", "1/2", "-1"])
def test_a_buffer_database_that_is_no_number(shared_redis: SharedRedis, db: str) -> None:
    """``redis://host:port/abc``: redis-py ignores a database it cannot read as a number
    and uses database 0, another application's keys perhaps, without a word."""
    url = shared_redis.url.rsplit("/", 1)[0] + f"/{db}"
    with pytest.raises(ValidationError, match="a Redis database is a number"):
        Memory("memory://", embedder="hashing", background=False, buffer=url)


def test_a_buffer_database_by_number_is_used(shared_redis: SharedRedis) -> None:
    import redis as redis_py

    base = shared_redis.url.rsplit("/", 1)[0]
    prefix = shared_redis.prefix()
    with Memory(
        "memory://", embedder="hashing", background=False, buffer=f"{base}/3?prefix={prefix}"
    ) as mem:
        mem.add_message(ME, "user", "hello there")
    client = redis_py.Redis.from_url(f"{base}/3")
    try:
        keys = list(client.scan_iter(match=f"{prefix}:*"))
        assert keys
        client.delete(*keys)
    finally:
        client.close()
