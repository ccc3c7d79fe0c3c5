"""A whole-user purge while Redis is unreachable from this process only (a partition: the
process's Redis user is disabled, other clients still reach it), on PostgreSQL. Before
session 33 the purge reported ``remaining=0`` and the user's keys (their turns in clear
text, their cached vectors) were deleted only if this same process later reached Redis
again: one that closed first (a CLI purge, a server restarted) left them in Redis, for
other processes to serve, without a word (session 33's audit)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis as redis_py

from memstrata import Memory, Scope
from servers import SharedRedis

ALICE = Scope("acme", "alice", session="s1")


@dataclass
class Partition:
    """A Redis user of this test's own: ``cut()`` disables it and drops its connections
    (the process sees Redis refuse it), ``heal()`` enables it again."""

    admin: Any  # redis-py: execute_command is untyped
    user: str
    prefix: str
    buffer: str

    def cut(self) -> None:
        self.admin.execute_command("ACL", "SETUSER", self.user, "off")
        self.admin.execute_command("CLIENT", "KILL", "USER", self.user)

    def heal(self) -> None:
        self.admin.execute_command("ACL", "SETUSER", self.user, "on")

    def user_keys(self) -> list[bytes]:
        return list(self.admin.scan_iter(match=f"{self.prefix}:acme:alice:*"))


@pytest.fixture
def partition(shared_redis: SharedRedis) -> Iterator[Partition]:
    admin: Any = redis_py.Redis.from_url(shared_redis.url)
    user = "a33_" + uuid.uuid4().hex[:10]
    admin.execute_command("ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all")
    prefix = shared_redis.prefix()
    host = shared_redis.url.split("://", 1)[1]
    try:
        yield Partition(admin, user, prefix, f"redis://{user}:pw@{host}?prefix={prefix}")
    finally:
        admin.execute_command("ACL", "DELUSER", user)
        shared_redis.drop(prefix)
        admin.close()


def _alice_in_redis(pg_url: str, partition: Partition) -> Memory:
    mem = Memory(pg_url, embedder="hashing", background=False, buffer=partition.buffer)
    for i in range(3):
        mem.add_message(ALICE, "user", f"alice's private turn {i}")
    mem.search(ALICE.user_scope, "private")
    mem.store.recent_turns(ALICE, 10)
    assert partition.user_keys()
    return mem


def test_the_report_does_not_say_nothing_remains(pg_url: str, partition: Partition) -> None:
    mem = _alice_in_redis(pg_url, partition)
    try:
        partition.cut()
        report = mem.purge(ALICE.user_scope)
        assert report.records == 3
        assert report.remaining >= 1  # the Redis copies could not be deleted nor checked
    finally:
        partition.heal()
        mem.close()


def test_close_deletes_what_the_outage_kept(pg_url: str, partition: Partition) -> None:
    """Redis is back by the time the process closes, but no call of it reached Redis
    since: the close deletes the purged user's keys."""
    mem = _alice_in_redis(pg_url, partition)
    partition.cut()
    mem.purge(ALICE.user_scope)
    partition.heal()
    mem.close()
    assert partition.user_keys() == []


def test_close_still_cut_off_says_what_is_left(
    pg_url: str, partition: Partition, caplog: pytest.LogCaptureFixture
) -> None:
    mem = _alice_in_redis(pg_url, partition)
    partition.cut()
    mem.purge(ALICE.user_scope)
    with caplog.at_level(logging.WARNING, logger="memstrata.store.redis_hot"):
        mem.close()
    partition.heal()
    said = [r.getMessage() for r in caplog.records if "closing while Redis" in r.getMessage()]
    assert said and f"{partition.prefix}:acme:alice:*" in said[0]
    assert "1 purged user" in said[0]


def test_one_record_purged_while_cut_off(pg_url: str, partition: Partition) -> None:
    """A record's purge: its turn is in the session's Redis list and its vector in the
    cache; unverified, so not reported as nothing left, and deleted at close once Redis
    answers."""
    mem = _alice_in_redis(pg_url, partition)
    turn = mem.list(ALICE, limit=1)[0]
    partition.cut()
    report = mem.purge(ALICE, [turn.id])
    assert report.records == 1 and report.remaining >= 1
    partition.heal()
    mem.close()
    left = b"".join(
        b"".join(bytes(v) for v in partition.admin.lrange(k, 0, -1))
        for k in partition.user_keys()
        if partition.admin.type(k) == b"list"
    )
    assert turn.content.raw.encode() not in left


def test_the_outage_warning_hides_the_store_password(
    pg_url: str, partition: Partition, caplog: pytest.LogCaptureFixture
) -> None:
    """The one warning of an outage named the durable store by its URL, password and all
    ("continuing on the durable store postgresql://app:<password>@...")."""
    url = pg_url.replace("postgres:@", "postgres:s3cret-pw-a33@", 1)  # the suite's trusts
    mem = Memory(url, embedder="hashing", background=False, buffer=partition.buffer)
    try:
        mem.add_message(ALICE, "user", "a turn")
        partition.cut()
        with caplog.at_level(logging.WARNING, logger="memstrata.store.redis_hot"):
            mem.add_message(ALICE, "user", "a turn while Redis is away")
    finally:
        partition.heal()
        mem.close()
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "continuing on the durable store" in said
    assert "s3cret-pw-a33" not in said
