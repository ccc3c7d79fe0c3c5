"""Schema 11 on PostgreSQL: records whose ``lex_tokens`` hold the old terms of Korean,
Japanese, Hindi, Thai … are re-termed on upgrade, to exactly the tokens a fresh write
makes now; English and Chinese rows and their hits stay bit-equal; the statistics equal
a recount; the step is part of the migration's one transaction (a failure leaves the
schema at version 10, whole)."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest
from psycopg import sql

import servers
from memstrata.search.tokenize import tokenize, tokenize_v10
from memstrata.store import open_store

from .conftest import Maker
from .test_lexical_tenant_statistics import _recount, _statistics
from .test_tok17_reterm_upgrade import EN, MIX, _hits, _writes


def _schema(url: str) -> str:
    return url.rsplit("schema=", 1)[1].split("&")[0]


def _fill(url: str, terms: Callable[[str], list[str]]) -> None:
    store = open_store(url)
    try:
        for w in _writes(Maker(), terms):
            store.insert([w])
    finally:
        store.close()


def _rows(url: str) -> dict[str, tuple[list[str], int]]:
    with psycopg.connect(servers.postgres().admin_url) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(_schema(url))))
        return {
            str(raw): (list(toks), int(n))
            for raw, toks, n in conn.execute("SELECT raw, lex_tokens, lex_len FROM records")
        }


def _id(url: str, text: str) -> str:
    with psycopg.connect(servers.postgres().admin_url) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(_schema(url))))
        row = conn.execute("SELECT id FROM records WHERE raw = %s", (text,)).fetchone()
        assert row is not None
        return str(row[0])


def _lexical(url: str) -> list[object]:
    with psycopg.connect(servers.postgres().admin_url) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(_schema(url))))
        return [
            sorted(conn.execute(f"SELECT * FROM {t}").fetchall())
            for t in ("lex_postings", "lex_df", "lex_stats")
        ] + [sorted(conn.execute("SELECT seq, lex_tokens, lex_len FROM records").fetchall())]


def _as_schema_10(url: str) -> None:
    with psycopg.connect(servers.postgres().admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(_schema(url))))
        conn.execute("DELETE FROM schema_migrations WHERE version >= 11")


def test_a_postgres_schema_10_is_re_termed_like_a_fresh_write() -> None:
    server = servers.postgres()
    url, fresh = server.url(), server.url()
    try:
        _fill(url, tokenize_v10)
        _fill(fresh, tokenize)
        store = open_store(url)
        try:
            before = _hits(store)
        finally:
            store.close()
        old = _rows(url)
        _as_schema_10(url)
        store = open_store(url)
        try:
            after = _hits(store)
        finally:
            store.close()
        got = _rows(url)
        assert got == _rows(fresh)
        assert _statistics(url) == _recount(url)
        changed = {t for t in old if old[t] != got[t]}
        assert "Biscuit. My niece picked it." not in changed and "五个，很甜。" not in changed
        assert "A history book." in changed and "어제 서울에서 오랜 친구를 만났어요." in changed
        for key in before:
            if key.startswith(f"{EN.tenant} "):
                assert after[key] == before[key] and after[key], key
        thai = _id(url, "ฉันไปตลาดเมื่อวานนี้กับแม่ของฉัน")
        assert thai in [i for i, _ in after[f"{MIX.tenant} ตลาด"]]
        assert thai not in [i for i, _ in before[f"{MIX.tenant} ตลาด"]]
    finally:
        server.drop(_schema(url))
        server.drop(_schema(fresh))


def test_a_failing_re_term_leaves_schema_10_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    from memstrata.store.postgres import lexical

    server = servers.postgres()
    url = server.url()
    try:
        _fill(url, tokenize_v10)
        _as_schema_10(url)
        want = _lexical(url)

        def index_then_fail(*args: object, **kw: object) -> None:
            index(*args, **kw)  # type: ignore[arg-type]
            raise RuntimeError("killed mid-migration")

        index = lexical.index
        monkeypatch.setattr(lexical, "index", index_then_fail)
        with pytest.raises(RuntimeError, match="killed mid-migration"):
            open_store(url)
        monkeypatch.undo()
        assert _lexical(url) == want
        with psycopg.connect(server.admin_url) as conn:
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(_schema(url))))
            assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone() == (10,)
        open_store(url).close()
        assert _statistics(url) == _recount(url)
    finally:
        server.drop(_schema(url))
