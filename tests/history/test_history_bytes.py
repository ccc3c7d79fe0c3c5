"""Issue 7 item 7: a version stores what changed, on SQLite and PostgreSQL.

Byte counts, not times: each bound is far below what a whole copy of the field takes, and
does not grow with the length of the provenance."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import psycopg
import pytest

import servers
from memstrata.records import MemoryRecord
from memstrata.scope import Scope
from memstrata.store import RecordWrite, Store, open_store
from memstrata.store.sqlite.codec import COLUMNS, encode_record
from memstrata.store.sqlite.history import apply_delta, decode_delta, encode_delta, reverse_delta
from memstrata.text import content_hash

from .kit import cluster_versions, fact_versions

ME = Scope("t1", "u1")


def _delta_bytes(versions: Sequence[MemoryRecord]) -> list[int]:
    rows = [dict(zip(COLUMNS, encode_record(v), strict=True)) for v in versions]
    return [
        len(encode_delta(reverse_delta(old, new)))
        for old, new in zip(rows[:-1], rows[1:], strict=True)
    ]


def _write_all(store: Store, versions: Sequence[MemoryRecord]) -> None:
    store.insert([RecordWrite(versions[0], None, ())])
    for old, new in zip(versions[:-1], versions[1:], strict=True):
        store.replace(ME, RecordWrite(new, None, ()), expected_version=old.version)


def test_a_cluster_version_stores_the_turns_it_absorbed_not_its_window() -> None:
    """A sliding window of 200 member ids (in ``source_ids`` and ``structured``), a centroid
    of 384 floats and a rewritten digest: a version took ~6 kB when every changed field was
    kept whole; now it keeps the ids that fell out, the centroid's steps, the new words."""
    sizes = _delta_bytes(cluster_versions(120))
    late = sizes[60:]  # the window is full from version 40 on: it slides
    assert max(late) < 2_600, max(late)
    assert sum(late) / len(late) < 2_000, sum(late) / len(late)


def test_a_fact_version_does_not_grow_with_its_mentions() -> None:
    sizes = _delta_bytes(fact_versions(1_000))
    assert max(sizes) < 140, max(sizes)
    assert max(sizes[-100:]) <= max(sizes[:100]) + 4


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[Store]:
    store = open_store(pg_url)
    yield store
    store.close()


def _pg_history_bytes(store: Store, pg_url: str) -> int:
    schema = store.options.schema  # type: ignore[attr-defined]
    with psycopg.connect(servers.postgres().admin_url, autocommit=True) as conn:
        row = conn.execute(
            f'SELECT coalesce(sum(octet_length(delta)), 0), count(*) FROM "{schema}".record_history'
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_postgresql_history_keeps_deltas_not_copies(pg_store: Store, pg_url: str) -> None:
    """PostgreSQL kept a full copy of the record per version (a 1,000-mention fact: ~17 MB)."""
    versions = fact_versions(300)
    _write_all(pg_store, versions)
    assert pg_store.history(ME, versions[-1].id) == versions
    # a full copy of version n holds n ids of 32 characters: 300 versions ~ 1.5 MB
    assert _pg_history_bytes(pg_store, pg_url) < 300 * 140


def test_sqlite_history_bytes_per_cluster_version(tmp_path: Path) -> None:
    versions = cluster_versions(80)
    store = open_store(f"sqlite:///{tmp_path / 'c.db'}")
    try:
        _write_all(store, versions)
        assert store.history(ME, versions[-1].id) == versions
    finally:
        store.close()
    conn = sqlite3.connect(tmp_path / "c.db")
    total = conn.execute("SELECT sum(length(delta)) FROM record_history").fetchone()[0]
    conn.close()
    assert total < 79 * 2_000, total


def test_the_stored_delta_format_is_pinned() -> None:
    """Deltas on disk were deflated against the preset dictionary: changing it (or the
    format byte) would make every stored history unreadable. This blob was written once."""
    golden = bytes.fromhex(
        "01c3a90bbb43089886ee49031d63a0600030e9e4eb81d316fea0cb35042902ea328a052bc61a90d8e2"
        "c4d04847d73816ec6a842f4c626b8122a88164185b0b00"
    )
    assert decode_delta(golden) == {
        "access_count": ["=", 0],
        "content_hash": ["hash"],
        "last_accessed_at": ["=", None],
        "raw": ["text", [[0, 3], "Porto."]],
        "source_ids": ["splice", [["+", ["m1"]], [0, 2]]],
        "structured": ["dict", {"centroid": ["num", 7, [12, -3]], "count": ["=", 4]}],
        "version": ["=", 1],
    }
    new = {c: None for c in COLUMNS} | {
        "raw": "Porto is lovely.",
        "source_ids": '["a","b"]',
        "access_count": 3,
        "structured": '{"centroid":[0.5,0.25],"count":9,"model":"m"}',
        "version": 2,
    }
    old = apply_delta(new, decode_delta(golden))
    assert old["raw"] == "Porto is lovely.Porto."
    assert old["content_hash"] == content_hash("Porto is lovely.Porto.")
    assert old["source_ids"] == '["m1","a","b"]'
    assert old["structured"] == '{"centroid":[0.5000012,0.2499997],"count":4,"model":"m"}'
    assert (old["version"], old["access_count"]) == (1, 0)
