"""PostgreSQL keeps an HNSW graph only for users searched through it (``exact_below`` or
more vectors): inserts of every other user write no graph (the ingest cost it was), and a
large user's index holds their rows only. Searches give the same answers either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from memstrata.filters import Filters
from memstrata.scope import Scope
from memstrata.store import open_store
from memstrata.store.postgres.vectors import hnsw_name
from servers import PgServer
from store.conftest import DIMS, Maker

BIG, SMALL = Scope("t1", "big"), Scope("t1", "small")


def _hnsw_indexes(store: Any) -> dict[str, str]:
    import psycopg

    with psycopg.connect(store.options.conninfo) as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s AND "
            "indexdef LIKE '%%USING hnsw%%'",
            (store.options.schema,),
        ).fetchall()
    return {str(r[0]): str(r[1]) for r in rows}


def test_only_a_user_past_exact_below_gets_an_index_of_their_own(
    pg_server: PgServer, tmp_path: Path
) -> None:
    schema = "t_hnsw_users"
    store: Any = open_store(pg_server.url(schema, exact_below=40))
    maker = Maker()
    try:
        small = [maker.write(text=f"small {n}", user="small") for n in range(30)]
        store.insert(small)
        assert _hnsw_indexes(store) == {}  # nobody is searched through HNSW yet
        big = [maker.write(text=f"big {n}", user="big") for n in range(60)]
        for i in range(0, 60, 20):  # crosses 40 on the third batch
            store.insert(big[i : i + 20])
        indexes = _hnsw_indexes(store)
        assert list(indexes) == [hnsw_name("t1", "big", DIMS)]
        assert "'big'" in indexes[hnsw_name("t1", "big", DIMS)]
        # The large user's searches use their index and find true neighbours; the small
        # user is still searched exactly.
        for w in big[:5]:
            query = np.asarray(w.vector, dtype=np.float32)
            assert store.vector_search(BIG, query, 3, Filters())[0].id == w.record.id
        for w in small[:5]:
            query = np.asarray(w.vector, dtype=np.float32)
            assert store.vector_search(SMALL, query, 3, Filters())[0].id == w.record.id
    finally:
        store.close()
        pg_server.drop(schema)


def test_a_search_builds_a_missing_index_of_a_large_user(pg_server: PgServer) -> None:
    """Rows written by a process with a higher threshold (or before this version)."""
    schema = "t_hnsw_late"
    writer: Any = open_store(pg_server.url(schema))
    maker = Maker()
    try:
        writes = [maker.write(text=f"note {n}", user="big") for n in range(50)]
        writer.insert(writes)
        assert _hnsw_indexes(writer) == {}
        reader: Any = open_store(pg_server.url(schema, exact_below=10))
        try:
            query = np.asarray(writes[7].vector, dtype=np.float32)
            assert reader.vector_search(BIG, query, 3, Filters())[0].id == writes[7].record.id
            assert list(_hnsw_indexes(reader)) == [hnsw_name("t1", "big", DIMS)]
        finally:
            reader.close()
    finally:
        writer.close()
        pg_server.drop(schema)
