"""A PostgreSQL store purge reads the refreshed records a purged id is named in, not every
refreshed record of the user (pg32).

Before, each store purge (``_unlink_superseded``) read every record of the user holding a
refreshed note (step 29's partial index ``records_noted``: an archived version's note,
or what it cited, may name a purged id), locked it and decoded its whole history. Now it
reads those a version of which names a purged id: archived versions by step 31's
``record_past_links`` (filled by a trigger as an update archives a version, and from the
history by the step), the current one by ``records_cited``/``records_linked``.

- On random stores (tests/purge31b's: records of every type whose versions name one
  another, refreshed notes replacing earlier ones) two users are built alike and random
  records purged, one user's by today's code, the other's by the code before pg32
  (old_noted.py): every version of every record left is the same, and each report.
- A user of many refreshed summaries: a purge of a turn none of them names reads none
  of their histories (before: all of them); one named by one reads that one.
- Step 31 on a schema written before it finds the archived versions written then."""

from __future__ import annotations

import types
from typing import Any

import psycopg
from hypothesis import HealthCheck, given, settings

from memstrata import Memory, Message, Scope
from memstrata.records import Role
from memstrata.store.postgres.schema import SCHEMA_VERSION
from memstrata.store.types import RecordWrite
from purge31b.test_links_equal_scan import _build, _state, _version, purges, stores
from servers import postgres
from store.reterm_files import pg_as_schema, pg_version

from . import old_noted

BLANK: dict[str, Any] = {
    "sources": [],
    "superseded_by": None,
    "links": {},
    "members": [],
    "cluster_id": None,
    "dropped": None,
    "related": [],
}


def _check(mem: Memory, specs: list[dict[str, Any]], rounds: list[set[int]], tag: str) -> None:
    (new_owner, new_ids), (old_owner, old_ids) = (
        _build(mem, specs, f"n{tag}"),
        _build(mem, specs, f"o{tag}"),
    )
    store: Any = mem.store
    for picks in rounds:
        new_report = store.purge(new_owner, [new_ids[i % len(new_ids)] for i in sorted(picks)])
        store._unlink_superseded = types.MethodType(old_noted.noted_all, store)
        try:
            old_report = store.purge(old_owner, [old_ids[i % len(old_ids)] for i in sorted(picks)])
        finally:
            del store._unlink_superseded
        assert new_report == old_report
        assert _state(mem, new_owner, new_ids) == _state(mem, old_owner, old_ids)


def test_a_purge_rewrites_what_it_rewrote_reading_every_note(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        n = iter(range(10**6))

        @settings(
            max_examples=10,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(stores, purges)
        def check(specs: list[dict[str, Any]], rounds: list[set[int]]) -> None:
            _check(mem, specs, rounds, str(next(n)))

        check()


def _refreshed_user(mem: Memory, user: str, summaries: int) -> tuple[Scope, list[str]]:
    """``summaries`` summaries of two turns each, each refreshed twice (its first note,
    archived, dropped its first turn; its current one names nothing of this user)."""
    scope = Scope("acme", user, session="s1")
    owner = scope.user_scope
    turns = mem.add_messages(
        scope, [Message(Role.USER, f"turn {i}") for i in range(2 * summaries + 1)]
    )
    ids = [t.id for t in turns]
    for k in range(summaries):
        r = mem.add(owner, f"summary {k}", type="summary", dedup=False, importance=0.5)
        at = len(ids)
        ids.append(r.id)
        for spec in (
            {**BLANK, "sources": [2 * k, 2 * k + 1]},
            {**BLANK, "sources": [2 * k + 1], "dropped": [2 * k]},
            {**BLANK, "sources": [2 * k + 1], "dropped": [at]},  # a note naming itself
        ):
            r = mem.store.get(owner, r.id, include_deleted=True)
            mem.store.replace(
                owner, RecordWrite(_version(r, spec, ids), None, ()), expected_version=r.version
            )
    return owner, ids


def _histories_read(mem: Memory, owner: Scope, ids: list[str]) -> int:
    """How many records' histories the purge of ``ids`` read (the store's own method,
    counted)."""
    store: Any = mem.store
    inner = store._rewrite_versions
    calls = 0

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return inner(*args, **kwargs)

    store._rewrite_versions = counted
    try:
        store.purge(owner, ids)
    finally:
        del store._rewrite_versions
    return calls


def test_a_purge_reads_the_notes_naming_what_it_purges(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        owner, ids = _refreshed_user(mem, "many", 12)
        unnamed = ids[24]  # the last turn: no summary cites it or names it
        assert _histories_read(mem, owner, [unnamed]) == 0  # before pg32: 12
        named = ids[4]  # summary 2's first turn: its archived note and first version
        assert _histories_read(mem, owner, [named]) == 1
        summary = ids[25 + 2]
        versions = mem.store.history(owner, summary)
        assert {"dropped_sources": ["[purged]"]} in [v.metadata.get("refreshed") for v in versions]
        assert all(named not in v.source_ids for v in versions)
        with psycopg.connect(postgres().admin_url) as conn:  # the purged id is named nowhere
            schema = pg_url.split("schema=")[1].split("&")[0]
            row = conn.execute(
                f'SELECT count(*) FROM "{schema}".record_past_links WHERE id = %s', (named,)
            ).fetchone()
            assert row == (0,)


def test_step_31_reads_the_versions_archived_before_it(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        owner, ids = _refreshed_user(mem, "older", 3)
    schema = pg_url.split("schema=")[1].split("&")[0]
    with psycopg.connect(postgres().admin_url, autocommit=True) as conn:  # as step 30 left it
        conn.execute(f'DROP TABLE "{schema}".record_past_links CASCADE')
        conn.execute(f'DROP FUNCTION "{schema}".record_past_links_keep CASCADE')
    pg_as_schema(pg_url, 30)
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        assert pg_version(pg_url) == SCHEMA_VERSION
        named = ids[2]  # summary 1's first turn: named by its archived versions only
        assert _histories_read(mem, owner, [named]) == 1
        versions = mem.store.history(owner, ids[7 + 1])
        assert all(named not in v.source_ids for v in versions)
        assert {"dropped_sources": ["[purged]"]} in [v.metadata.get("refreshed") for v in versions]


def test_a_copied_store_knows_its_archived_versions(tmp_path: Any, pg_url: str) -> None:
    """A store copied into PostgreSQL (``memstrata migrate``: its history written as rows,
    which no update archives) finds the archived versions naming a purged id too."""
    from memstrata.store.migrate import copy_store

    source = f"sqlite:///{tmp_path / 'm.db'}"
    with Memory(source, embedder="hashing", background=False) as mem:
        owner, ids = _refreshed_user(mem, "copied", 3)
    assert copy_store(source, pg_url).ok
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        named = ids[2]  # summary 1's first turn: named by its archived versions only
        assert _histories_read(mem, owner, [named]) == 1
        versions = mem.store.history(owner, ids[7 + 1])
        assert all(named not in v.source_ids for v in versions)
        assert {"dropped_sources": ["[purged]"]} in [v.metadata.get("refreshed") for v in versions]
