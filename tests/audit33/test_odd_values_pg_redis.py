"""Odd values through the library on PostgreSQL with Redis in front, against SQLite, the
reference: NUL in metadata keys and values, lone surrogates, integers past int64, floats at
their edges (-0.0, 5e-324, 1e308), NaN/inf, times at years 1 and 9999 at odd offsets,
naive times. The same input gets the same answer on both stores: a ``MemstrataError`` and
nothing written, or a record that reads back equal (session 33's audit; a guard, it held)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Filters, Memory, Scope
from memstrata.errors import MemstrataError

ME = Scope("acme", "alice")

odd_text = st.text(
    alphabet=st.sampled_from(
        ["a", " ", "\x00", "\ud800", "\u2028", "\ufeff", "é", "中", "\U0001f600", "\\"]
    ),
    min_size=0,
    max_size=12,
)
odd_number = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([-0.0, 5e-324, 1e308, -1e308, math.nan, math.inf, 2**63, -(2**63) - 1]),
    st.floats(allow_nan=True, allow_infinity=True),
)
json_leaf = st.one_of(st.none(), st.booleans(), odd_number, odd_text)
metadata = st.dictionaries(
    odd_text, st.one_of(json_leaf, st.lists(json_leaf, max_size=3)), max_size=3
)
offsets = st.sampled_from(
    [UTC, timezone(timedelta(hours=14)), timezone(timedelta(hours=-12, minutes=-30)), None]
)
times = st.builds(
    lambda d, tz: d.replace(tzinfo=tz),
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),
    offsets,
)


@pytest.fixture(scope="module")
def stores(
    tmp_path_factory: pytest.TempPathFactory, pg_server: Any, shared_redis: Any
) -> Iterator[tuple[Memory, Memory]]:
    folder: Path = tmp_path_factory.mktemp("odd")
    schema = "a33_odd_" + folder.name[-6:].replace("-", "_")
    prefix = shared_redis.prefix()
    pg = Memory(
        pg_server.url(schema),
        embedder="hashing",
        background=False,
        buffer=shared_redis.buffer_url(prefix),
    )
    lite = Memory(f"sqlite:///{folder / 'm.db'}", embedder="hashing", background=False)
    yield pg, lite
    pg.close()
    lite.close()
    pg_server.drop(schema)
    shared_redis.drop(prefix)


def _answer(mem: Memory, content: str, meta: dict[str, Any], when: datetime) -> Any:
    before = mem.store.count(ME, Filters(include_deleted=True))
    try:
        rec = mem.add(ME, content, metadata=meta, observed_at=when, dedup=False)
    except MemstrataError as exc:
        assert mem.store.count(ME, Filters(include_deleted=True)) == before  # nothing written
        return ("refused", type(exc).__name__)
    back = mem.get(ME, rec.id)
    assert back.content.raw == content
    # -0.0 and big integers kept (repr tells -0.0 from 0.0); a JSON object's key order is
    # not kept by every store (a JSON object has none)
    assert _shown(back.metadata) == _shown(rec.metadata)
    assert back.observed_at == rec.observed_at
    return ("stored", _shown(rec.metadata), rec.observed_at)


def _shown(meta: Mapping[str, Any]) -> str:
    return repr(sorted(meta.items()))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(content=odd_text, meta=metadata, when=times)
def test_same_answer_on_postgresql_with_redis_as_on_sqlite(
    stores: tuple[Memory, Memory], content: str, meta: dict[str, Any], when: datetime
) -> None:
    pg, lite = stores
    assert _answer(pg, content, meta, when) == _answer(lite, content, meta, when)
