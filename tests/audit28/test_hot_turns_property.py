"""Redis's hot copy of a session's turns against the store it fronts (session 28's audit).

Hypothesis drives turns through the public API — added with observation times that tie,
go back in time, sit at the calendar's ends or carry odd offsets; edited, deleted,
restored, purged; read under another agent — on SQLite (the reference) and on PostgreSQL
with the Redis buffer, and after every step the session's recent turns (what contexts show
as history) must be the same on both."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import FixedClock, Memory, MemstrataError, Scope

CLOCK = FixedClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))
TIMES = st.sampled_from(
    [
        None,
        datetime(2026, 3, 1, 11, 0, tzinfo=UTC),
        datetime(2026, 3, 1, 13, 0, tzinfo=timezone(timedelta(hours=1))),  # = 12:00 UTC
        datetime(2026, 3, 1, 12, 0),  # naive: UTC
        datetime(1, 1, 1, 0, 0, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2026, 3, 29, 1, 30, tzinfo=timezone(timedelta(hours=-14))),
        "2026-03-01T12:00:00Z",
    ]
)
TURN = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant"]),
        "content": st.sampled_from(["hi", "I moved to Oslo", "hi", "ok \u202e tnaw I", "e\u0301"]),
        "observed_at": TIMES,
    }
)
OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("add"), st.lists(TURN, min_size=1, max_size=3), st.sampled_from([None, "a1"])
        ),
        st.tuples(st.sampled_from(["update", "delete", "restore", "purge"]), st.integers(0, 20)),
    ),
    min_size=1,
    max_size=12,
)
_users = itertools.count()


@pytest.fixture(scope="module")
def pair(
    tmp_path_factory: pytest.TempPathFactory, pg_server: Any, shared_redis: Any
) -> Iterator[tuple[Memory, Memory]]:
    prefix = shared_redis.prefix()
    ref = Memory(
        f"sqlite:///{tmp_path_factory.mktemp('ref') / 'm.db'}",
        embedder="hashing",
        clock=CLOCK,
        background=False,
    )
    hot = Memory(
        pg_server.url(),
        embedder="hashing",
        clock=CLOCK,
        background=False,
        buffer=shared_redis.buffer_url(prefix),
    )
    yield ref, hot
    ref.close()
    hot.close()
    shared_redis.drop(prefix)


def _turns(mem: Memory, scope: Scope, n: int) -> list[tuple[str, str, int]]:
    return [
        (r.role, r.content.raw, r.version, r.observed_at, r.agent)
        for r in mem.store.recent_turns(scope, n)
    ]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
def test_hot_turns_match_the_durable_store(pair: tuple[Memory, Memory], ops: list[Any]) -> None:
    ref, hot = pair
    user = f"u{next(_users)}"
    ids: dict[int, list[str]] = {id(ref): [], id(hot): []}
    for op in ops:
        outcome = []
        for mem in (ref, hot):
            scope = Scope("t", user, session="s1")
            try:
                if op[0] == "add":
                    scope = scope.with_agent(op[2]) if op[2] else scope
                    got = mem.add_messages(scope, op[1])
                    ids[id(mem)].extend(r.id for r in got)
                    outcome.append(len(got))
                elif not ids[id(mem)]:
                    continue
                else:
                    rid = ids[id(mem)][op[1] % len(ids[id(mem)])]
                    if op[0] == "update":
                        v = mem.get(scope, rid, include_deleted=True).version
                        mem.update(scope, rid, expected_version=v, content=f"edited {v}")
                    elif op[0] == "delete":
                        mem.delete(scope, rid)
                    elif op[0] == "restore":
                        mem.restore(scope, rid)
                    else:
                        mem.purge(scope, [rid])
                    outcome.append("ok")
            except MemstrataError as exc:
                outcome.append(type(exc).__name__)
        assert len(set(map(str, outcome))) <= 1, (op, outcome)
        for reader in (
            Scope("t", user, session="s1"),
            Scope("t", user, "a1", "s1"),
            Scope("t", user, "a2", "s1"),
        ):
            for n in (1, 3, 50):
                assert _turns(hot, reader, n) == _turns(ref, reader, n), (reader, n, ops)
