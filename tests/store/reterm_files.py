"""Store files indexed by an older tokenizer, for the upgrade tests that re-term them
(schema 11: tok17's scripts, ``store/test_tok17_reterm_upgrade.py``; schema 15: fold24's
accents, ``fold24/test_fold24_upgrade.py``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

import servers
from memstrata.records import RecordType
from memstrata.scope import Scope
from memstrata.search.search_questions import question_terms
from memstrata.store import RecordWrite, open_store

from .conftest import Maker

Turn = tuple[Scope, str | None, str]  # (scope, session, text), in the order said


def writes(
    maker: Maker, turns: Sequence[Turn], terms: Callable[[str], list[str]]
) -> list[RecordWrite]:
    """The turns as the store was given them, with terms made by ``terms`` (and, for a turn
    after a question in the same session, the question's terms by the same tokenizer)."""
    out: list[RecordWrite] = []
    last: dict[tuple[Scope, str | None], str] = {}
    for scope, session, text in turns:
        w = maker.write(
            text=text,
            tenant=scope.tenant,
            user=scope.user,
            session=session,
            type=RecordType.MESSAGE,
        )
        before = last.get((scope, session)) if session is not None else None
        out.append(
            RecordWrite(w.record, w.vector, tuple(terms(text)) + question_terms(before, terms))
        )
        last[scope, session] = text
    return out


def indexed_store(
    url: str,
    turns: Sequence[Turn],
    terms: Callable[[str], list[str]],
    only: Scope | None = None,
) -> None:
    """The store at ``url`` given ``turns`` (of ``only``'s user, if given) indexed under
    ``terms``."""
    store = open_store(url)
    try:
        for w in writes(Maker(), turns, terms):
            if only is None or (w.record.tenant, w.record.user) == (only.tenant, only.user):
                store.insert([w])
    finally:
        store.close()


def indexed_file(
    path: Path,
    turns: Sequence[Turn],
    terms: Callable[[str], list[str]],
    only: Scope | None = None,
) -> None:
    """:func:`indexed_store` of a SQLite file at ``path``."""
    indexed_store(f"sqlite:///{path}", turns, terms, only)


def lex_tables(path: Path) -> list[object]:
    """The file's schema version, then every row of its lexical tables, sorted."""
    conn = sqlite3.connect(path)
    try:
        out: list[object] = [int(conn.execute("PRAGMA user_version").fetchone()[0])]
        for t in ("lex_tenants", "lex_scopes", "lex_postings", "lex_df", "lex_docs"):
            out.append(sorted(conn.execute(f"SELECT * FROM {t}").fetchall()))
        return out
    finally:
        conn.close()


# PostgreSQL: a store's schema, read through the test server's admin connection.


def pg_schema(url: str) -> str:
    return url.rsplit("schema=", 1)[1].split("&")[0]


@contextmanager
def _pg(url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(servers.postgres().admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(pg_schema(url))))
        yield conn


def pg_query(url: str, query: str, *args: object) -> list[tuple[Any, ...]]:
    with _pg(url) as conn:
        return conn.execute(query.encode(), args).fetchall()


def pg_rows(url: str) -> dict[str, tuple[list[str], int]]:
    """Each record's lexical tokens and length, by its text."""
    return {
        str(raw): (list(toks), int(n))
        for raw, toks, n in pg_query(url, "SELECT raw, lex_tokens, lex_len FROM records")
    }


def pg_lexical(url: str) -> list[object]:
    """Every row of the lexical tables and columns, sorted."""
    return [
        sorted(pg_query(url, f"SELECT * FROM {t}")) for t in ("lex_postings", "lex_df", "lex_stats")
    ] + [sorted(pg_query(url, "SELECT seq, lex_tokens, lex_len FROM records"))]


def pg_version(url: str) -> object:
    return pg_query(url, "SELECT max(version) FROM schema_migrations")[0][0]


def pg_as_schema(url: str, version: int) -> None:
    """Mark the store as left by schema ``version`` (its later migrations run again)."""
    with _pg(url) as conn:
        conn.execute("DELETE FROM schema_migrations WHERE version > %s", (version,))


def pg_id(url: str, text: str) -> str:
    return str(pg_query(url, "SELECT id FROM records WHERE raw = %s", text)[0][0])


def check_a_failing_pg_re_term_leaves_it_whole(
    monkeypatch: pytest.MonkeyPatch,
    turns: Sequence[Turn],
    old_terms: Callable[[str], list[str]],
    version: int,
) -> None:
    """A PostgreSQL store indexed by ``old_terms`` and marked as left by schema ``version``:
    a failure in the middle of its upgrade's re-term leaves every lexical row and the schema
    version as they were, and the next open upgrades it (statistics equal a recount)."""
    from memstrata.store.postgres import lexical

    from .test_lexical_tenant_statistics import _recount, _statistics

    server = servers.postgres()
    url = server.url()
    try:
        indexed_store(url, turns, old_terms)
        pg_as_schema(url, version)
        want = pg_lexical(url)

        def index_then_fail(*args: object, **kw: object) -> None:
            index(*args, **kw)  # type: ignore[arg-type]
            raise RuntimeError("killed mid-migration")

        index = lexical.index
        monkeypatch.setattr(lexical, "index", index_then_fail)
        with pytest.raises(RuntimeError, match="killed mid-migration"):
            open_store(url)
        monkeypatch.undo()
        assert pg_lexical(url) == want
        assert pg_version(url) == version
        open_store(url).close()
        assert _statistics(url) == _recount(url)
    finally:
        server.drop(pg_schema(url))
