"""``Store.histories``: every version of many records in one read (session 21).

``facts.history``, a purge by ids (its cache keys, and on Redis the hot cache's) and the
reply terms a purge rewrites each read one record's history at a time: on PostgreSQL two
round trips per record (purging 1,000 turns by id took 5.5 s against SQLite's 0.5 s). They
now read every record's versions at once; each record's versions are exactly its
``history``."""

from __future__ import annotations

from memstrata import Memory, Scope

ALICE = Scope("acme", "alice", session="s1")
BOB = Scope("acme", "bob", session="s1")


def test_histories_equal_each_history(mem: Memory) -> None:
    ids = []
    for n in range(6):
        r = mem.add(ALICE, f"note {n} about the garden", tags=["garden"])
        for edit in range(n % 3):
            r = mem.update(ALICE, r.id, content=f"{r.text} ({edit})", expected_version=r.version)
        if n == 4:
            mem.delete(ALICE, r.id)
        ids.append(r.id)
    theirs = mem.add(BOB, "bob's own note").id
    asked = [ids[3], "no-such-id", theirs, *ids, ids[0]]
    found = mem.store.histories(ALICE, asked)
    assert list(found) == [ids[3], *[i for i in ids if i != ids[3]]]  # the order asked, once
    for rid in ids:
        assert found[rid] == mem.history(ALICE, rid)
    assert [len(found[i]) for i in ids] == [1, 2, 3, 1, 3, 3]  # the delete is a version too
    assert mem.store.histories(ALICE, []) == {}
    assert mem.store.histories(BOB, ids) == {}


def test_facts_history_and_purge_by_ids_read_every_version(mem: Memory) -> None:
    for city, sure in (("Paris", 0.7), ("Oslo", 0.8), ("Rome", 0.9)):  # each replaces
        mem.facts.upsert(
            ALICE, {"category": "profile", "key": "city", "value": city, "confidence": sure}
        )
    values = [v.content.structured["value"] for v in mem.facts.history(ALICE, "city")]
    assert {"Paris", "Oslo", "Rome"} <= set(values)
    turns = [mem.add_message(ALICE, "user", f"what about day {n}?").id for n in range(5)]
    report = mem.purge(ALICE, turns)
    assert report.records == 5
    assert mem.store.histories(ALICE, turns) == {}
