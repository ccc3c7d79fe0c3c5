"""The postings are vacuumed after 1% of new rows, not autovacuum's 20%.

A lexical search reads the postings by an index-only scan, which reads the heap for each
posting on a page not yet marked all-visible (migration 10, schema.py: 1,852 heap fetches
for 4,608 postings, 7.7 ms, at 10k records).
"""

from __future__ import annotations

import psycopg

from memstrata.store import open_store
from memstrata.store.postgres import PostgresStore
from servers import PgServer


def test_postings_are_vacuumed_after_few_inserts(pg_url: str, pg_server: PgServer) -> None:
    store = open_store(pg_url)
    assert isinstance(store, PostgresStore)
    schema = store.options.schema
    store.close()
    with psycopg.connect(pg_server.admin_url) as conn:
        row = conn.execute(
            "SELECT c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = 'lex_postings'",
            (schema,),
        ).fetchone()
    assert row is not None
    options = dict(o.split("=", 1) for o in row[0] or [])
    assert options == {
        "autovacuum_vacuum_insert_threshold": "1000",
        "autovacuum_vacuum_insert_scale_factor": "0.01",
    }
