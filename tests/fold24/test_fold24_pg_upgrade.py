"""Schema 17 on PostgreSQL: records whose ``lex_tokens`` or text hold accented Latin or
Greek letters (918f2db's terms, ``tokenize_v14``) are re-termed on upgrade, to exactly
the tokens a fresh write makes now; ASCII rows and their hits stay bit-equal and an ASCII
schema is not rewritten (no row sent to Python); the statistics equal a recount; a
failure leaves the schema at version 16, whole."""

from __future__ import annotations

import pytest
from test_fold24_upgrade import EN, QUERIES, TURNS, _hits

import servers
from memstrata.search.tokenize import tokenize, tokenize_v14
from memstrata.store import open_store
from memstrata.store.postgres.schema import SCHEMA_VERSION
from store.reterm_files import (
    check_a_failing_pg_re_term_leaves_it_whole,
    indexed_store,
    pg_as_schema,
    pg_id,
    pg_lexical,
    pg_rows,
    pg_schema,
    pg_version,
)
from store.test_lexical_tenant_statistics import _recount, _statistics


def test_a_postgres_schema_16_is_re_termed_like_a_fresh_write() -> None:
    server = servers.postgres()
    url, fresh = server.url(), server.url()
    try:
        indexed_store(url, TURNS, tokenize_v14)
        indexed_store(fresh, TURNS, tokenize)
        store = open_store(url)
        try:
            old, stale = _hits(store, tokenize_v14), _hits(store, tokenize)
        finally:
            store.close()
        before = pg_rows(url)
        pg_as_schema(url, 16)
        store = open_store(url)
        try:
            after = _hits(store, tokenize)
        finally:
            store.close()
        assert pg_version(url) == SCHEMA_VERSION >= 17
        got = pg_rows(url)
        assert got == pg_rows(fresh)
        assert _statistics(url) == _recount(url)
        changed = {t for t in before if before[t] != got[t]}
        assert changed == {t for _, _, t in TURNS[4:] if t != "the monthly report is due on Friday"}
        for q in QUERIES[EN]:
            assert after[f"acme {q}"] == old[f"acme {q}"] != [], q
        for q, text in [
            ("zoe", "The meeting with Zoë went well"),
            ("istanbul", "We flew home from İstanbul"),
            ("ΑΘΗΝΑ", "Αθήνα ήταν υπέροχη"),
        ]:
            assert after[f"globex {q}"][0] == pg_id(url, text), q
            assert pg_id(url, text) not in old[f"globex {q}"], q
        cafe = pg_id(url, "Did you order a café au lait with José?")
        assert cafe in old["globex café"] and cafe not in stale["globex café"]
        assert cafe in after["globex café"] and cafe in after["globex cafe"]
    finally:
        server.drop(pg_schema(url))
        server.drop(pg_schema(fresh))


def test_an_ascii_schema_is_not_rewritten(monkeypatch: pytest.MonkeyPatch) -> None:
    import memstrata.search.scripts as scripts

    server = servers.postgres()
    url = server.url()
    try:
        indexed_store(url, TURNS, tokenize_v14, only=EN)
        pg_as_schema(url, 16)
        want = pg_lexical(url)
        calls: list[str] = []
        may_fold = scripts.may_fold

        def counted(text: str) -> bool:
            calls.append(text)
            return may_fold(text)

        monkeypatch.setattr(scripts, "may_fold", counted)
        open_store(url).close()
        assert calls == []  # the server passed over every ASCII row
        assert pg_version(url) == SCHEMA_VERSION
        assert pg_lexical(url) == want
    finally:
        server.drop(pg_schema(url))


def test_a_failing_re_term_leaves_schema_16_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    check_a_failing_pg_re_term_leaves_it_whole(monkeypatch, TURNS, tokenize_v14, 16)
