"""Stores whose turns are indexed as memstrata indexed them before session 29, for the
tests of SQLite's schema 20 and PostgreSQL's step 27 (every turn re-termed by today's rule).

A store is written by today's code, then each turn's lexical terms are replaced through
``store.reterm`` (no new version) by the terms an older rule gave it, and the store is
marked as left by the schema before (SQLite 19, PostgreSQL 26): opening it again runs the
re-term, as opening a store written by an older memstrata does.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from memstrata import Memory, Scope
from memstrata.search.reply_terms import kept_terms
from memstrata.search.search_questions import question_terms
from memstrata.search.tokenize import tokenize
from store.reterm_files import pg_as_schema

VICTIM = Scope("acme", "victim")
SQLITE_BEFORE, PG_BEFORE = 19, 26  # the schema versions before this re-term


def stored(mem: Memory) -> dict[str, tuple[str, ...]]:
    """Every record's stored lexical terms, by id."""
    store: Any = mem.store
    return {d.record.id: tuple(d.terms) for batch in store.dump_records() for d in batch}


def kept(mem: Memory, scope: Scope = VICTIM) -> dict[str, tuple[str, ...]]:
    """Every turn's terms by today's rule (``reply_terms.kept_terms``), by id."""
    store: Any = mem.store
    return {
        d.record.id: kept_terms(mem.store, d.record)
        for batch in store.dump_records()
        for d in batch
        if (d.record.tenant, d.record.user) == (scope.tenant, scope.user)
    }


def index_under(mem: Memory, under: Mapping[str, str | None], scope: Scope = VICTIM) -> None:
    """Index each turn of ``under`` under its own terms and the questions of the text given
    (``None``: its own only), as an older rule may have."""
    texts = {d.record.id: d.record.text for b in mem.store.dump_records() for d in b}  # type: ignore[attr-defined]
    mem.store.reterm(
        scope,
        {rid: tuple(tokenize(texts[rid])) + question_terms(q) for rid, q in under.items()},
    )


def mark_old(url: str) -> None:
    """Mark the store as left by the schema before the re-term (opening it runs it)."""
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url[len("sqlite:///") :], isolation_level=None)
        try:
            conn.execute(f"PRAGMA user_version = {SQLITE_BEFORE}")
        finally:
            conn.close()
    else:
        pg_as_schema(url, PG_BEFORE)


def differing(mem: Memory, ids: Sequence[str]) -> dict[str, tuple[tuple[str, ...], ...]]:
    """The turns of ``ids`` whose stored terms are not today's: (stored, today's)."""
    have, want = stored(mem), kept(mem)
    return {rid: (have[rid], want[rid]) for rid in ids if have[rid] != want[rid]}
