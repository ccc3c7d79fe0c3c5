"""PostgreSQL lexical search reads its kept hits' records by ``seq``, whatever their number.

A context asks the lexical leg for hundreds of hits (432 at a 2,000-token budget). Joined
to ``records`` as a plain join, the planner hashed them against a sequential scan of the
user's records (10k rows read, 11 ms of PostgreSQL per statement at 10k records); the
records are now read one index probe per kept hit, as for a search's few.
"""

from __future__ import annotations

import numpy as np
import psycopg
from psycopg.rows import dict_row

from memstrata.search.tokenize import tokenize
from memstrata.store import RecordWrite, open_store
from memstrata.store.postgres import PostgresStore
from memstrata.store.postgres import lexical as pg_lexical
from memstrata.store.sqlite.codec import scope_token
from servers import PgServer
from store.conftest import DIMS, Maker, unit

TENANT, USER = "t1", "u1"


def _fill(store: PostgresStore, n: int) -> None:
    maker = Maker(rng=np.random.default_rng(5))
    writes = []
    for i in range(n):
        # a small vocabulary: the planner expects every kept hit to match (as a context's
        # common words do), which is when it chose to scan the records
        r = maker.record(f"tea river stone note w{i % 7} v{i % 11}", tenant=TENANT, user=USER)
        writes.append(RecordWrite(r, unit(maker.rng, DIMS), tuple(tokenize(r.text))))
    for i in range(0, n, 500):
        store.insert(writes[i : i + 500])


def test_many_hits_read_only_their_records(pg_url: str, pg_server: PgServer) -> None:
    store = open_store(pg_url)
    assert isinstance(store, PostgresStore)
    schema = store.options.schema
    try:
        _fill(store, 3000)
        store.wait_for_statistics()
    finally:
        store.close()
    k = 400
    with psycopg.connect(pg_server.admin_url, row_factory=dict_row, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}", public')
        conn.execute("ANALYZE records, lex_postings, lex_df, lex_stats")  # the planner's view
        with conn.transaction():
            rows = pg_lexical.search_rows(
                conn,
                TENANT,
                scope_token(TENANT, USER),
                ["tea", "river"],
                'r.tenant = %s AND r."user" = %s AND r.status = %s',
                [TENANT, USER, "active"],
                k,
                columns="r.id, r.seq",
            )
            stats = conn.execute(
                "SELECT coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0) AS n, "
                "coalesce(seq_scan, 0) AS scans FROM pg_stat_xact_user_tables "
                "WHERE relname = 'records' AND schemaname = %s",
                (schema,),
            ).fetchone()
    assert len(rows) == k
    assert stats is not None
    assert stats["scans"] == 0  # no sequential scan of the user's records
    assert stats["n"] <= k + pg_lexical._SLACK  # 3,000 matches: the kept ones are read
