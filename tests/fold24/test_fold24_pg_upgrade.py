"""Schema 17 on PostgreSQL: records whose ``lex_tokens`` or text hold accented Latin or
Greek letters (918f2db's terms, ``tokenize_v14``) are re-termed on upgrade, to exactly
the tokens a fresh write makes now; ASCII rows and their hits stay bit-equal and an ASCII
schema is not rewritten (no row sent to Python); the statistics equal a recount; a
failure leaves the schema at version 16, whole."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest
from psycopg import sql
from test_fold24_upgrade import EN, QUERIES, TURNS, _hits, _writes

import servers
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize, tokenize_v14
from memstrata.store import open_store
from memstrata.store.postgres.schema import SCHEMA_VERSION
from store.conftest import Maker
from store.test_lexical_tenant_statistics import _recount, _statistics


def _schema(url: str) -> str:
    return url.rsplit("schema=", 1)[1].split("&")[0]


def _fill(url: str, terms: Callable[[str], list[str]], only: Scope | None = None) -> None:
    store = open_store(url)
    try:
        for w in _writes(Maker(), terms):
            if only is None or (w.record.tenant, w.record.user) == (only.tenant, only.user):
                store.insert([w])
    finally:
        store.close()


def _query(url: str, query: str, *args: object) -> list[tuple[object, ...]]:
    with psycopg.connect(servers.postgres().admin_url) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(_schema(url))))
        return conn.execute(query.encode(), args).fetchall()


def _rows(url: str) -> dict[str, tuple[list[str], int]]:
    return {
        str(raw): (list(toks), int(n))  # type: ignore[call-overload]
        for raw, toks, n in _query(url, "SELECT raw, lex_tokens, lex_len FROM records")
    }


def _lexical(url: str) -> list[object]:
    return [
        sorted(_query(url, f"SELECT * FROM {t}"))  # type: ignore[type-var]
        for t in ("lex_postings", "lex_df", "lex_stats")
    ] + [sorted(_query(url, "SELECT seq, lex_tokens, lex_len FROM records"))]  # type: ignore[type-var]


def _version(url: str) -> object:
    return _query(url, "SELECT max(version) FROM schema_migrations")[0][0]


def _as_schema_16(url: str) -> None:
    with psycopg.connect(servers.postgres().admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(_schema(url))))
        conn.execute("DELETE FROM schema_migrations WHERE version >= 17")


def _id(url: str, text: str) -> str:
    return str(_query(url, "SELECT id FROM records WHERE raw = %s", text)[0][0])


def test_a_postgres_schema_16_is_re_termed_like_a_fresh_write() -> None:
    server = servers.postgres()
    url, fresh = server.url(), server.url()
    try:
        _fill(url, tokenize_v14)
        _fill(fresh, tokenize)
        store = open_store(url)
        try:
            old, stale = _hits(store, tokenize_v14), _hits(store, tokenize)
        finally:
            store.close()
        before = _rows(url)
        _as_schema_16(url)
        store = open_store(url)
        try:
            after = _hits(store, tokenize)
        finally:
            store.close()
        assert _version(url) == SCHEMA_VERSION == 17
        got = _rows(url)
        assert got == _rows(fresh)
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
            assert after[f"globex {q}"][0] == _id(url, text), q
            assert _id(url, text) not in old[f"globex {q}"], q
        cafe = _id(url, "Did you order a café au lait with José?")
        assert cafe in old["globex café"] and cafe not in stale["globex café"]
        assert cafe in after["globex café"] and cafe in after["globex cafe"]
    finally:
        server.drop(_schema(url))
        server.drop(_schema(fresh))


def test_an_ascii_schema_is_not_rewritten(monkeypatch: pytest.MonkeyPatch) -> None:
    import memstrata.search.scripts as scripts

    server = servers.postgres()
    url = server.url()
    try:
        _fill(url, tokenize_v14, only=EN)
        _as_schema_16(url)
        want = _lexical(url)
        calls: list[str] = []
        may_fold = scripts.may_fold

        def counted(text: str) -> bool:
            calls.append(text)
            return may_fold(text)

        monkeypatch.setattr(scripts, "may_fold", counted)
        open_store(url).close()
        assert calls == []  # the server passed over every ASCII row
        assert _version(url) == SCHEMA_VERSION
        assert _lexical(url) == want
    finally:
        server.drop(_schema(url))


def test_a_failing_re_term_leaves_schema_16_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    from memstrata.store.postgres import lexical

    server = servers.postgres()
    url = server.url()
    try:
        _fill(url, tokenize_v14)
        _as_schema_16(url)
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
        assert _version(url) == 16
        open_store(url).close()
        assert _statistics(url) == _recount(url)
    finally:
        server.drop(_schema(url))
