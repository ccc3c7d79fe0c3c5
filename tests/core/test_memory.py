"""The Memory façade end to end on real stores (SQLite file and in-memory)."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import pytest

from memstrata import (
    ConflictError,
    ImportFormatError,
    Memory,
    Message,
    NotFoundError,
    Scope,
    ValidationError,
)


def test_add_message_then_search_finds_it_with_provenance(mem: Memory, alice: Scope) -> None:
    rec = mem.add_message(
        alice,
        "user",
        "I adopted a tabby cat named Byte",
        observed_at=datetime(2025, 5, 1, tzinfo=UTC),
        metadata={"k": 1},
    )
    mem.add_message(alice, "user", "The weather in Lisbon was sunny today")
    hits = mem.search(alice, "what is the name of the cat?", top_k=2)
    assert hits[0].record.id == rec.id
    assert hits[0].source_ids == (rec.id,)
    assert hits[0].layer == "messages"
    assert hits[0].record.observed_at == datetime(2025, 5, 1, tzinfo=UTC)
    assert hits[0].record.metadata == {"k": 1}


def test_search_updates_access_counts(mem: Memory, alice: Scope) -> None:
    rec = mem.add_message(alice, "user", "my favourite colour is green")
    mem.search(alice, "favourite colour", top_k=1)
    mem.search(alice, "favourite colour", top_k=1)
    got = mem.get(alice, rec.id)
    assert got.access_count == 2
    assert got.last_accessed_at is not None
    assert got.version == 1  # an access is not a new version


def test_explain_reports_every_term(mem: Memory, alice: Scope) -> None:
    mem.add_message(alice, "user", "I play the violin every evening")
    hit = mem.search(alice, "violin", top_k=1, explain=True)[0]
    assert hit.explanation is not None
    for term in (
        "lexical_rank",
        "dense_rank",
        "dense_cosine",
        "lexical_bm25",
        "relevance",
        "recency",
        "importance",
        "access",
        "final",
        "match",
    ):
        assert term in hit.explanation
    # the score is the match (no score term weighed: nothing added); "final" ranks (pg31)
    assert hit.explanation["match"] == pytest.approx(hit.score)


@pytest.mark.parametrize("mode", ["lexical", "dense", "hybrid"])
def test_modes(mem: Memory, alice: Scope, mode: str) -> None:
    target = mem.add_message(alice, "user", "the quarterly report is due on Friday")
    mem.add_message(alice, "user", "we watched a movie about penguins")
    hits = mem.search(alice, "quarterly report deadline", top_k=1, mode=mode)
    assert hits[0].record.id == target.id


def test_filters_types_tags_metadata_and_time(mem: Memory, alice: Scope, clock) -> None:  # type: ignore[no-untyped-def]
    a = mem.add(
        alice,
        "Alice works at a bakery",
        type="fact",
        tags=["work"],
        importance=0.9,
        metadata={"year": 2024},
    )
    mem.add(
        alice,
        "Alice visited a bakery in Paris",
        type="note",
        tags=["travel"],
        importance=0.2,
        metadata={"year": 2019},
    )
    assert [h.id for h in mem.search(alice, "bakery", filters={"types": ["fact"]})] == [a.id]
    assert [h.id for h in mem.search(alice, "bakery", filters={"tags": ["work"]})] == [a.id]
    assert [
        h.id for h in mem.search(alice, "bakery", filters={"metadata": {"year": {"gt": 2020}}})
    ] == [a.id]
    assert [h.id for h in mem.search(alice, "bakery", filters={"min_importance": 0.5})] == [a.id]
    assert [
        h.id
        for h in mem.search(
            alice, "bakery", layers=["semantic"], filters={"metadata": {"year": {"in": [2024]}}}
        )
    ] == [a.id]
    assert mem.search(alice, "bakery", filters={"observed_after": "2030-01-01"}) == []


def test_update_versions_and_conflict(mem: Memory, alice: Scope) -> None:
    rec = mem.add(alice, "Alice lives in Berlin", type="fact")
    new = mem.update(alice, rec.id, content="Alice lives in Lisbon", expected_version=1)
    assert new.version == 2
    with pytest.raises(ConflictError):
        mem.update(alice, rec.id, content="Alice lives in Porto", expected_version=1)
    assert mem.get(alice, rec.id).text == "Alice lives in Lisbon"
    assert [v.text for v in mem.history(alice, rec.id)] == [
        "Alice lives in Berlin",
        "Alice lives in Lisbon",
    ]
    hits = mem.search(alice, "Lisbon", top_k=1, mode="lexical")
    assert hits and hits[0].id == rec.id
    assert mem.search(alice, "Berlin", mode="lexical") == []


def test_delete_restore_purge(mem: Memory, alice: Scope) -> None:
    rec = mem.add(alice, "temporary memory about kites", type="note")
    mem.delete(alice, rec.id)
    with pytest.raises(NotFoundError):
        mem.get(alice, rec.id)
    assert mem.search(alice, "kites") == []
    assert mem.get(alice, rec.id, include_deleted=True).status.value == "deleted"
    mem.restore(alice, rec.id)
    assert mem.search(alice, "kites")[0].id == rec.id
    report = mem.purge(alice, [rec.id])
    assert report.records == 1
    with pytest.raises(NotFoundError):
        mem.get(alice, rec.id, include_deleted=True)


def test_purge_user_removes_everything_and_spares_others(
    mem: Memory, alice: Scope, bob: Scope
) -> None:
    mem.add_message(alice, "user", "alice secret plans")
    kept = mem.add_message(bob, "user", "bob keeps his plans")
    report = mem.purge(alice.user_scope)
    assert report.records >= 1 and report.remaining == 0
    assert mem.list(alice.user_scope) == []
    assert mem.get(bob, kept.id).id == kept.id


def test_other_users_records_are_not_found(mem: Memory, alice: Scope, bob: Scope) -> None:
    rec = mem.add_message(alice, "user", "alice private note")
    other_tenant = Scope("other", "alice", session="s1")
    for scope in (bob, other_tenant):
        with pytest.raises(NotFoundError):
            mem.get(scope, rec.id)
        with pytest.raises(NotFoundError):
            mem.update(scope, rec.id, content="hijack", expected_version=1)
        with pytest.raises(NotFoundError):
            mem.delete(scope, rec.id)
        with pytest.raises(NotFoundError):
            mem.history(scope, rec.id)
        assert mem.search(scope, "alice private note") == []
    assert mem.get(alice, rec.id).text == "alice private note"


@pytest.mark.parametrize("bad", ["", "   \n\t", b"\xff\xfe bad", "x" * 100_001, "a\ud800b", 42])
def test_bad_content_is_refused_without_partial_write(
    mem: Memory, alice: Scope, bad: object
) -> None:
    mem.add_message(alice, "user", "already stored")
    with pytest.raises(ValidationError):
        mem.add_messages(alice, [Message("user", "fine"), Message("user", bad)])  # type: ignore[arg-type]
    assert [r.text for r in mem.list(alice)] == ["already stored"]


def test_missing_scope_parts_and_bad_ids(mem: Memory) -> None:
    with pytest.raises(ValidationError, match="tenant"):
        Scope("", "u")
    with pytest.raises(ValidationError, match="user"):
        Scope("t", None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        mem.add_message("acme/alice", "user", "hi")  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        mem.get(Scope("t", "u"), "no-such-id")
    with pytest.raises(ValidationError):
        mem.add_message(Scope("t", "u"), "robot", "hello")


def test_dedup_exact(mem: Memory, alice: Scope) -> None:
    a = mem.add(alice, "Alice is vegetarian", type="fact")
    b = mem.add(alice, "Alice  is vegetarian", type="fact")
    assert a.id == b.id
    assert mem.add(alice, "Alice is vegetarian", type="fact", dedup=False).id != a.id


def test_export_import_roundtrip_with_remap(mem: Memory, alice: Scope) -> None:
    m1 = mem.add_message(alice, "user", "I love hiking in the Alps")
    fact = mem.add(alice, "Alice loves hiking", type="fact", source_ids=[m1.id])
    buf = io.StringIO()
    assert mem.export_records(alice.user_scope, buf, include_embeddings=True) == 2
    buf.seek(0)
    carol = Scope("acme", "carol")
    report = mem.import_records(buf, into=carol)
    assert report.imported == 2 and report.reembedded == 0
    recs = {r.text: r for r in mem.list(carol)}
    assert set(recs) == {"I love hiking in the Alps", "Alice loves hiking"}
    new_fact = recs["Alice loves hiking"]
    assert new_fact.id != fact.id
    assert new_fact.source_ids == (recs["I love hiking in the Alps"].id,)
    buf.seek(0)
    again = mem.import_records(buf)  # same ids, same scope: skipped, not duplicated
    assert again.skipped == 2 and again.imported == 0


def _export_lines(mem: Memory, scope: Scope) -> list[str]:
    buf = io.StringIO()
    mem.export_records(scope, buf)
    return buf.getvalue().splitlines()


@pytest.mark.parametrize(
    "corrupt", ["not json", json.dumps({"record": {"id": "x"}}), json.dumps([1, 2])]
)
def test_corrupt_import_line_writes_nothing(mem: Memory, alice: Scope, corrupt: str) -> None:
    mem.add_message(alice, "user", "first")
    lines = _export_lines(mem, alice)
    carol = Scope("acme", "carol")
    bad = "\n".join([lines[0], lines[1], corrupt]) + "\n"
    with pytest.raises(ImportFormatError, match="line 3"):
        mem.import_records(io.StringIO(bad), into=carol)
    assert mem.list(carol) == []


@pytest.mark.parametrize(
    "header", ['{"format": "mem0"}', "garbage", '{"format": "memstrata.export", "version": 99}']
)
def test_foreign_or_newer_export_is_refused(mem: Memory, header: str) -> None:
    with pytest.raises(ImportFormatError):
        mem.import_records(io.StringIO(header + "\n"))


def test_stats(mem: Memory, alice: Scope) -> None:
    mem.add_message(alice, "user", "one")
    r = mem.add(alice, "two things", type="note")
    mem.delete(alice, r.id)
    s = mem.stats(alice.user_scope)
    assert s["records"] == 2 and s["active"] == 1 and s["deleted"] == 1
    assert s["by_type"]["message"] == 1
    assert s["embedding_model"].startswith("hashing")


def test_remember_routes_by_the_decision_tree(mem: Memory, alice: Scope) -> None:
    assert mem.remember(alice, "ok thanks!").record is None
    general = mem.remember(alice, "I always prefer window seats on flights")
    assert general.layer == "semantic" and general.record is not None
    assert general.record.type.value == "note"
    feedback = mem.remember(alice, "That answer was wrong, next time check the units")
    assert feedback.layer == "episodic" and feedback.record is not None
    assert feedback.record.importance == 0.9
    assert {r.id for r in mem.list(alice)} == {general.record.id, feedback.record.id}
