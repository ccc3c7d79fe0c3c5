"""A user's purge leaves no trace in the SQLite file (issue 10 §6): no byte of their words,
stemmed terms, record ids, user id or scope token in the database, its WAL or its shared
memory file, FTS5 shadow tables included, while another user's data stays intact."""

from __future__ import annotations

from pathlib import Path

from crash23.kill import file_bytes
from memstrata import FixedClock, Memory, Scope
from memstrata.records import RecordType, Source
from memstrata.search.tokenize import tokenize
from memstrata.store.sqlite.codec import scope_token

VICTIM = Scope("acme", "victim-user-7731", session="sv")
OTHER = Scope("acme", "bystander-4242", session="so")
WORDS = [
    "I am severely allergic to peanuts and cashews, my code is zqxjkvorple",
    "My locker number is 88231957 and my dog is called Flumblewick",
    "Remind me that the quarzanite shipment arrives on Thursday",
]


def test_purge_leaves_no_byte_of_the_user(tmp_path: Path, clock: FixedClock) -> None:
    path = tmp_path / "purge.db"
    mem = Memory(f"sqlite:///{path}", embedder="hashing", clock=clock, background=False)
    ids: list[str] = []
    for text in WORDS:
        ids.append(mem.add_message(VICTIM, "user", text).id)
        mem.add_message(OTHER, "user", "the weather in Porto is mild in spring")
    note = mem.add(
        VICTIM,
        "Flumblewick likes quarzanite biscuits",
        tags=["zqxjkvorple-tag"],
        source=Source.IMPLICIT_INFERENCE,
        type=RecordType.EPISODE,
    )
    ids.append(note.id)
    mem.update(
        VICTIM,
        note.id,
        expected_version=note.version,
        content="Flumblewick adores quarzanite biscuits",
    )
    mem.search(VICTIM.user_scope, "what is Flumblewick allergic to")
    mem.end_session(VICTIM)
    mem.delete(VICTIM, ids[0], actor="user:victim-user-7731")
    clock.advance(days=200)
    mem.maintain(VICTIM)  # audit entries naming the victim's records
    mem.set_importance_by_tag(VICTIM, "zqxjkvorple-tag", 0.9)
    ids += [
        r.id for r in mem.list(VICTIM.user_scope, filters={"include_deleted": True}, limit=1000)
    ]
    kept = mem.add_message(OTHER, "user", "my favourite tram is the number 28")

    report = mem.purge(VICTIM.user_scope)
    assert report.records >= 4 and report.remaining == 0

    # the other user is intact and searchable
    assert mem.get(OTHER, kept.id).text == "my favourite tram is the number 28"
    assert mem.search(OTHER.user_scope, "favourite tram", mode="lexical")
    assert mem.audit.query("acme", action="purge")
    mem.close()

    raw = file_bytes(path)
    needles = {
        "flumblewick",
        "quarzanite",
        "zqxjkvorple",
        "88231957",
        "peanuts",
        "cashews",
        "victim-user-7731",
        scope_token(VICTIM.tenant, VICTIM.user),
        *ids,
    }
    for text in WORDS:
        needles.update(t for t in tokenize(text) if len(t) >= 6)  # stemmed: peanut, allerg...
    for theirs in ("the weather in Porto is mild in spring", "my favourite tram is the number 28"):
        needles -= set(tokenize(theirs))  # words the bystander wrote too stay, rightly
    found = sorted(n for n in needles if n.encode() in raw or n.lower().encode() in raw.lower())
    assert found == []
    assert b"bystander-4242" in raw  # the scan does see data that is there


def test_purge_report_counts_what_is_left(tmp_path: Path) -> None:
    mem = Memory(f"sqlite:///{tmp_path / 'r.db'}", embedder="hashing", background=False)
    mem.add_message(VICTIM, "user", "ephemeral words here")
    report = mem.purge(VICTIM.user_scope)
    assert report.records == 1 and report.remaining == 0
    again = mem.purge(VICTIM.user_scope)
    assert again.records == 0 and again.remaining == 0
    mem.close()


def test_the_audit_keeps_what_happened_but_not_who(tmp_path: Path) -> None:
    mem = Memory(f"sqlite:///{tmp_path / 'a.db'}", embedder="hashing", background=False)
    r = mem.add(VICTIM, "note to delete")
    mem.delete(VICTIM, r.id)
    mem.purge(VICTIM.user_scope)
    events = mem.audit.query("acme")
    assert [e.action for e in events] == ["delete", "purge"]
    assert all(e.user is None and e.record_ids == () for e in events)
    assert events[0].reason == "[purged]"
    mem.close()


def test_in_memory_store_forgets_the_user_in_its_audit_too(clock: FixedClock) -> None:
    mem = Memory("memory://", embedder="hashing", clock=clock, background=False)
    r = mem.add(VICTIM, "note")
    mem.delete(VICTIM, r.id)
    clock.advance(days=1)
    mem.purge(VICTIM.user_scope)
    assert all(e.user is None and e.record_ids == () for e in mem.audit.query("acme"))
    mem.close()


def test_postgres_purge_redacts_the_users_audit_events() -> None:
    import servers  # tests/servers.py: the session's real PostgreSQL

    try:
        url = servers.postgres().url()
    except RuntimeError as exc:
        servers.unavailable("PostgreSQL", str(exc))
        raise
    mem = Memory(url, embedder="hashing", background=False)
    try:
        r = mem.add(VICTIM, "note to delete")
        mem.delete(VICTIM, r.id, actor="user:victim-user-7731")
        mem.add(OTHER, "bystander note")
        report = mem.purge(VICTIM.user_scope)
        assert report.remaining == 0
        events = mem.audit.query("acme")
        assert [e.action for e in events] == ["delete", "purge"]
        assert all(e.user is None and e.record_ids == () for e in events)
        assert events[0].actor == "[purged]" and events[0].reason == "[purged]"
        from memstrata.audit import AuditStore

        assert isinstance(mem.store, AuditStore)  # persisted in PostgreSQL, not in memory
    finally:
        mem.close()
