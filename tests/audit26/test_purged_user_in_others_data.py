"""A whole-user purge leaves the purged user's id in other users' data: in the
``allowed_users`` of a record another user shared with them, and in the ``details`` of
that ``set_access`` event. So (1) the README's promise — no byte of the user's id is left
in the SQLite file — does not hold while ``PurgeReport.remaining`` says 0, and (2) a user
created later with the same id (a recycled e-mail address, a re-registered name) reads
what was shared with the purged one. Found by audit26."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.errors import NotFoundError

BOB = Scope("acme", "bob")
CAROL_ID = "carol.smith@example.com"
CAROL = Scope("acme", CAROL_ID)
FIX = (
    "a whole-user purge keeps the user's id in other users' allowed_users and set_access "
    "events; fix in store/sqlite/store.py purge_user, store/postgres (the same), "
    "store/memory.py and audit_backends.py (redact the id from the tenant's access lists, "
    "their history and set_access details in the purge's transaction)"
)


def _shared_with_carol(mem: Memory) -> str:
    mem.add(CAROL, "carol's own note")
    rec = mem.add(BOB, "bob's door code is 4471")
    mem.set_access(BOB, rec.id, visibility="shared", allowed_users=[CAROL_ID])
    assert mem.get(BOB.as_caller(CAROL_ID), rec.id).text == rec.text  # shared before
    return rec.id


def test_a_new_user_with_a_purged_users_id_reads_nothing_shared_with_the_old(
    mem: Memory,
) -> None:
    rid = _shared_with_carol(mem)
    mem.purge(CAROL)
    with pytest.raises(NotFoundError):
        mem.get(BOB.as_caller(CAROL_ID), rid)


def test_no_byte_of_the_purged_users_id_is_left_in_the_file(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        _shared_with_carol(mem)
        report = mem.purge(CAROL)
    left = db.read_bytes().count(CAROL_ID.encode())
    assert (report.remaining, left) == (0, 0)


def test_what_bob_shared_with_others_stays_shared(mem: Memory) -> None:
    """What the fix must keep: the purge of carol leaves bob's record and its other
    readers alone."""
    rec = mem.add(BOB, "bob's shopping list")
    mem.set_access(BOB, rec.id, visibility="shared", allowed_users=[CAROL_ID, "dave"])
    mem.purge(CAROL)
    assert mem.get(BOB.as_caller("dave"), rec.id).text == rec.text
    assert mem.get(BOB, rec.id).text == rec.text
