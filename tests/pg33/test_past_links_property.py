"""``record_past_links`` against the histories it indexes (pg33, step 33).

Step 31's trigger inserted every id of the version an update archives: a cluster's every
member at each of its updates. Step 33's inserts only the ids the update drops from the
record's current version (one it keeps is found by the current version's indexes, which a
purge reads too; a turn's current version is in none, so a turn's are all kept). What
holds, on random stores of records of every type whose versions name one another
(tests/purge31b's): a record's rows name only ids an archived version names, and every id
an archived version names is in its rows or named by its current version (a turn's: in
its rows). A purge rewrites what it rewrote reading every note: tests/pg32's property."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings

from memstrata import Memory, Message, Scope
from memstrata.records import Content, RecordType, Role
from memstrata.store.citations import cited, linked
from memstrata.store.types import RecordWrite
from purge31b.test_links_equal_scan import _build, stores
from store.reterm_files import _pg


def _rows(url: str) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    with _pg(url) as conn:
        for i, seq in conn.execute("SELECT id, seq FROM record_past_links"):
            out.setdefault(int(seq), set()).add(str(i))
    return out


def _seqs(url: str) -> dict[str, int]:
    with _pg(url) as conn:
        return {str(i): int(s) for i, s in conn.execute("SELECT id, seq FROM records")}


def _check(mem: Memory, url: str, owner: Scope, ids: list[str]) -> None:
    rows, seqs = _rows(url), _seqs(url)
    for rid in dict.fromkeys(ids):
        current = mem.store.get(owner, rid, include_deleted=True)
        assert current is not None
        archived = {i for v in mem.store.history(owner, rid) for i in linked(v)} - {rid}
        kept = rows.get(seqs[rid], set())
        named = (
            set() if current.type is RecordType.MESSAGE else set(linked(current) + cited(current))
        )
        assert kept <= archived, (rid, kept - archived)
        assert archived <= kept | named, (rid, archived - kept - named)


def test_past_links_hold_what_archived_versions_name(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        n = iter(range(10**6))

        @settings(
            max_examples=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(stores)
        def check(specs: list[dict[str, Any]]) -> None:
            owner, ids = _build(mem, specs, f"u{next(n)}")
            _check(mem, pg_url, owner, ids)

        check()


def test_a_growing_cluster_adds_no_row_until_a_member_is_dropped(pg_url: str) -> None:
    """A cluster gaining a member at each update: no row (before step 33: its every member
    at each update, 19 rows here); an update dropping two members: those two."""
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        scope = Scope("acme", "alice", session="s1")
        owner = scope.user_scope
        said = [Message(Role.USER, f"turn {i}") for i in range(20)]
        turns = [t.id for t in mem.add_messages(scope, said)]
        rid = mem.add(owner, "a cluster", type="cluster", dedup=False).id

        def members(ms: list[str]) -> None:
            r = mem.store.get(owner, rid, include_deleted=True)
            new = replace(r, version=r.version + 1, content=Content(r.text, None, {"members": ms}))
            mem.store.replace(owner, RecordWrite(new, None, ()), expected_version=r.version)

        for k in range(1, 21):
            members(turns[:k])
        assert _rows(pg_url) == {}
        members(turns[2:])
        assert _rows(pg_url) == {_seqs(pg_url)[rid]: set(turns[:2])}
        _check(mem, pg_url, owner, [rid, *turns])
