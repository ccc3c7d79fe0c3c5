"""Issue 7 item 3 / issue 8 §1: ids are unique per (tenant, user), never globally.

Inserting or importing an id that exists only under another tenant or user behaves exactly
like a fresh id: it neither fails (which would reveal that the id exists) nor touches the
other record, and nobody can block another tenant's deterministic ids (summary ids).
"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.errors import ValidationError
from memstrata.filters import Filters
from memstrata.layers.summaries import summary_id
from memstrata.records import RecordStatus
from memstrata.search.tokenize import tokenize
from memstrata.store import RecordWrite, Store

from .conftest import T0, Maker

ME = Scope("t1", "u1")


@pytest.mark.parametrize("tenant,user", [("t2", "u1"), ("t1", "u2")])
def test_foreign_id_inserts_like_a_fresh_one(
    store: Store, maker: Maker, tenant: str, user: str
) -> None:
    mine = maker.write(text="alice's secret tea recipe")
    store.insert([mine])
    theirs = maker.write(
        maker.record("mallory's note", tenant=tenant, user=user, id=mine.record.id)
    )
    fresh = maker.write(
        maker.record("mallory's other note", tenant=tenant, user=user, id="never-used")
    )
    store.insert([theirs])  # no error: the same answer as for ``fresh``
    store.insert([fresh])
    other = Scope(tenant, user)
    rid = mine.record.id
    assert store.get(ME, rid) == mine.record
    assert store.get(other, rid) == theirs.record
    # each copy has its own versions, status, index entries and purge
    store.replace(
        other,
        RecordWrite(replace(theirs.record, version=2), None, theirs.terms),
        expected_version=1,
    )
    assert [r.version for r in store.history(ME, rid)] == [1]
    assert [r.version for r in store.history(other, rid)] == [1, 2]
    store.set_status(other, [rid], RecordStatus.DELETED, T0)
    assert store.get(ME, rid).status is RecordStatus.ACTIVE
    assert [c.id for c in store.lexical_search(ME, tokenize("tea"), 5, Filters())] == [rid]
    assert store.lexical_search(other, tokenize("tea"), 5, Filters()) == []
    assert store.vector_search(ME, mine.vector, 1, Filters())[0].id == rid  # type: ignore[arg-type]
    store.add_counts(other, "hits", {rid: 2})
    assert store.counts(ME, "hits", [rid]) == {rid: 0}
    assert store.purge(other, [rid]).records == 1
    assert store.get(ME, rid) == mine.record
    # a second insert of the same id in the same user is still refused
    with pytest.raises(ValidationError, match="exists already"):
        store.insert([maker.write(maker.record("again", id=rid))])


def test_purge_user_leaves_the_same_ids_of_other_users(store: Store, maker: Maker) -> None:
    mine = maker.write(text="mine")
    twin = maker.write(maker.record("twin", tenant="t2", id=mine.record.id))
    store.insert([mine, twin])
    report = store.purge_user("t2", "u1")
    assert (report.records, report.remaining) == (1, 0)
    assert store.get(ME, mine.record.id) == mine.record
    assert store.history(ME, mine.record.id) == [mine.record]


@pytest.fixture(params=["sqlite", "memory"])
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Memory:
    url = f"sqlite:///{tmp_path / 'm.db'}" if request.param == "sqlite" else "memory://"
    return Memory(url, embedder="hashing", background=False)


def _lines_with_id(mem: Memory, scope: Scope, text: str, record_id: str) -> str:
    """An export of one record of ``scope`` rewritten to carry ``record_id``."""
    rec = mem.add(scope, text, dedup=False)
    buf = io.StringIO()
    mem.export_records(scope, buf)
    mem.purge(scope, [rec.id])
    header, *rows = buf.getvalue().splitlines()
    row = json.loads(rows[0])
    row["record"]["id"] = record_id
    end = {"end": "complete", "count": 1}
    return header + "\n" + json.dumps(row) + "\n" + json.dumps(end) + "\n"


def test_import_of_a_foreign_id_answers_as_for_a_fresh_id(mem: Memory) -> None:
    alice = Scope("acme", "alice")
    mallory = Scope("evil", "mallory")
    secret = mem.add(alice, "Alice's bank PIN hint is her cat's name")
    foreign = mem.import_records(io.StringIO(_lines_with_id(mem, mallory, "probe one", secret.id)))
    fresh = mem.import_records(io.StringIO(_lines_with_id(mem, mallory, "probe two", "a-fresh-id")))
    assert (foreign.imported, foreign.skipped) == (fresh.imported, fresh.skipped) == (1, 0)
    assert mem.get(alice, secret.id) == secret
    assert mem.get(mallory, secret.id).text == "probe one"
    # importing it again is skipped in mallory's own scope, like any id she already has
    again = mem.import_records(io.StringIO(_lines_with_id(mem, mallory, "probe one", secret.id)))
    assert (again.imported, again.skipped) == (0, 1)


def test_a_tenant_cannot_block_another_tenants_summary_ids(mem: Memory) -> None:
    alice = Scope("acme", "alice", session="s1")
    mallory = Scope("evil", "mallory")
    # mallory plants records under every deterministic summary id alice's session will use
    planted = [summary_id(alice, "rolling")] + [
        summary_id(alice, "range", start, end)
        for start in (1, 11)
        for end in range(start, start + 10)
    ]
    for n, rid in enumerate(planted):
        mem.import_records(io.StringIO(_lines_with_id(mem, mallory, f"planted {n}", rid)))
    for i in range(12):
        mem.add_message(
            alice,
            "user" if i % 2 == 0 else "assistant",
            f"turn {i}: we talked about the trip to Lisbon and the hotel booking",
        )
    mem.flush(alice)
    report = mem.end_session(alice)
    assert (report.failed, report.retried) == (0, 0), report.errors
    jobs = mem.store.list_jobs("acme", "alice")
    assert jobs and all(j.status.value == "done" for j in jobs), [
        (j.kind, j.status, j.last_error) for j in jobs
    ]
    assert mem.list(alice, filters={"types": ["summary"]})
