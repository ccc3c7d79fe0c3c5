"""PostgreSQL's public part (schema 24, ``store/postgres/lexical.py``): after every kind of
write its docs are exactly the active public records (a message by its own words), their
postings and statistics a recount; a purged user's part is gone; a database at schema 22
gets it built. New structure: these checks are of it (the cost it removes is measured in
docs/measurements.md, session 29; the caller's scores are tests/caller28's and
test_reply_length's)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from memstrata import Memory, Scope
from memstrata.search.tokenize import tokenize
from memstrata.store import fts5
from memstrata.store.postgres.lexical import public_tok

from .test_public_part import CAROL, every_write

DAVE = Scope("acme", "dave")


@pytest.fixture
def pg(pg_url: str) -> Iterator[tuple[Memory, str]]:
    m = Memory(pg_url, embedder="hashing", background=False)
    yield m, pg_url
    m.close()


def _conn(url: str) -> psycopg.Connection[dict[str, Any]]:
    from memstrata.store.postgres.connection import parse_url

    opts = parse_url(url)
    conn = psycopg.connect(opts.conninfo, row_factory=dict_row, autocommit=True)
    conn.execute(f'SET search_path TO "{opts.schema}"')
    return conn


def _checker(url: str) -> Any:
    def check(_mem: Memory) -> None:
        with _conn(url) as c:
            got = {
                (int(r["seq"]), str(r["owner_tok"]), tuple(r["tokens"]))
                for r in c.execute("SELECT * FROM lex_public")
            }
            expected = set()
            for r in c.execute(
                'SELECT seq, tenant, "user", type, raw, status, visibility, lex_tokens FROM records'
            ):
                if r["status"] != "active" or r["visibility"] != "public":
                    continue
                doc = (
                    fts5.document_tokens(tokenize(r["raw"]))
                    if r["type"] == "message"
                    else list(r["lex_tokens"])
                )
                expected.add((int(r["seq"]), public_tok(r["tenant"], r["user"]), tuple(doc)))
            assert got == expected
            postings = {
                (str(r["scope_tok"]), str(r["token"]), int(r["seq"]), int(r["tf"]), int(r["len"]))
                for r in c.execute("SELECT * FROM lex_postings WHERE seq < 0")
            }
            assert postings == {
                (owner, t, -seq, n, len(doc) + 1)
                for seq, owner, doc in got
                for t, n in Counter(doc).items()
            }
            df: Counter[tuple[str, str]] = Counter()
            totals: Counter[tuple[str, str]] = Counter()
            for _seq, owner, doc in got:
                df.update((owner, t) for t in set(doc))
                totals[owner, "docs"] += 1
                totals[owner, "tokens"] += len(doc) + 1
            stored_df = Counter(
                {
                    (str(r["owner_tok"]), str(r["token"])): int(r["n"])
                    for r in c.execute(
                        "SELECT owner_tok, token, sum(df) AS n FROM lex_public_df "
                        "GROUP BY owner_tok, token"
                    )
                }
            )
            assert +stored_df == df and all(n > 0 for n in stored_df.values())
            stored: Counter[tuple[str, str]] = Counter()
            for r in c.execute(
                "SELECT owner_tok, sum(docs) AS d, sum(tokens) AS t FROM lex_public_stats "
                "GROUP BY owner_tok"
            ):
                stored[str(r["owner_tok"]), "docs"] += int(r["d"])
                stored[str(r["owner_tok"]), "tokens"] += int(r["t"])
            assert +stored == totals

    return check


def test_every_write_keeps_the_public_part(pg: tuple[Memory, str]) -> None:
    mem, url = pg
    every_write(mem, _checker(url))
    with _conn(url) as c:
        dave = public_tok("acme", "dave")
        for table in ("lex_public", "lex_public_df", "lex_public_stats"):
            assert not c.execute(f"SELECT 1 FROM {table} WHERE owner_tok = %s", (dave,)).fetchall()
        assert not c.execute("SELECT 1 FROM lex_postings WHERE scope_tok = %s", (dave,)).fetchall()


def test_an_upgraded_database_gets_its_public_part(pg: tuple[Memory, str]) -> None:
    mem, url = pg
    mem.add(Scope("acme", "bob"), "alpha harbour", visibility="public")
    mem.add(Scope("acme", "bob"), "alpha private")
    expected = [(h.record.id, h.score) for h in mem.search(CAROL, "alpha", mode="lexical")]
    assert expected
    mem.close()
    with _conn(url) as c:
        c.execute("DELETE FROM lex_postings WHERE seq < 0")
        c.execute("DROP TABLE lex_public, lex_public_df, lex_public_stats")
        c.execute("DELETE FROM schema_migrations WHERE version >= 24")  # and the steps after
    again = Memory(url, embedder="hashing", background=False)
    try:
        _checker(url)(again)
        assert [(h.record.id, h.score) for h in again.search(CAROL, "alpha", mode="lexical")] == (
            expected
        )
    finally:
        again.close()
