"""Schema 11 on PostgreSQL: records whose ``lex_tokens`` hold the old terms of Korean,
Japanese, Hindi, Thai … are re-termed on upgrade, to exactly the tokens a fresh write
makes now; English and Chinese rows and their hits stay bit-equal; the statistics equal
a recount; the step is part of the migration's one transaction (a failure leaves the
schema at version 10, whole)."""

from __future__ import annotations

import pytest

import servers
from memstrata.search.tokenize import tokenize, tokenize_v10
from memstrata.store import open_store

from .reterm_files import (
    check_a_failing_pg_re_term_leaves_it_whole,
    indexed_store,
    pg_as_schema,
    pg_id,
    pg_rows,
    pg_schema,
)
from .test_lexical_tenant_statistics import _recount, _statistics
from .test_tok17_reterm_upgrade import EN, MIX, TURNS, _hits


def test_a_postgres_schema_10_is_re_termed_like_a_fresh_write() -> None:
    server = servers.postgres()
    url, fresh = server.url(), server.url()
    try:
        indexed_store(url, TURNS, tokenize_v10)
        indexed_store(fresh, TURNS, tokenize)
        store = open_store(url)
        try:
            before = _hits(store)
        finally:
            store.close()
        old = pg_rows(url)
        pg_as_schema(url, 10)
        store = open_store(url)
        try:
            after = _hits(store)
        finally:
            store.close()
        got = pg_rows(url)
        assert got == pg_rows(fresh)
        assert _statistics(url) == _recount(url)
        changed = {t for t in old if old[t] != got[t]}
        assert "Biscuit. My niece picked it." not in changed and "五个，很甜。" not in changed
        assert "A history book." in changed and "어제 서울에서 오랜 친구를 만났어요." in changed
        for key in before:
            if key.startswith(f"{EN.tenant} "):
                assert after[key] == before[key] and after[key], key
        thai = pg_id(url, "ฉันไปตลาดเมื่อวานนี้กับแม่ของฉัน")
        assert thai in [i for i, _ in after[f"{MIX.tenant} ตลาด"]]
        assert thai not in [i for i, _ in before[f"{MIX.tenant} ตลาด"]]
    finally:
        server.drop(pg_schema(url))
        server.drop(pg_schema(fresh))


def test_a_failing_re_term_leaves_schema_10_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    check_a_failing_pg_re_term_leaves_it_whole(monkeypatch, TURNS, tokenize_v10, 10)
