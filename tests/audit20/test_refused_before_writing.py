"""Session 20's attacker's audit: calls that wrote first and refused after, or answered a
bad argument with a raw Python error, on every store (``mem`` of tests/conftest.py).

Each refusal must be a ``MemstrataError`` that leaves the user's records, history and jobs
exactly as they were (``snapshot``)."""

from __future__ import annotations

from typing import Any

import pytest

from memstrata import Filters, Memory, MemstrataError, NotFoundError, Scope, ValidationError
from robustness.conftest import snapshot

ALICE = Scope("acme", "alice", session="s1")
OTHER = Scope("globex", "bob", session="s9")


def _refused(mem: Memory, call: Any, kind: type[MemstrataError] = ValidationError) -> str:
    before = snapshot(mem, ALICE)
    with pytest.raises(kind) as err:
        call()
    assert snapshot(mem, ALICE) == before, "a refused call wrote"
    return str(err.value)


@pytest.mark.parametrize("actor", [5, None, "", "a\x00b", "\ud800"])
def test_a_bad_actor_is_refused_before_anything_is_written(mem: Memory, actor: object) -> None:
    """set_access, delete, restore and purge wrote (a purge destroyed the records) and
    only then had the audit log refuse the actor (on PostgreSQL a NUL reached the server
    after the write: a StoreError)."""
    rec = mem.add(ALICE, "I live in Lisbon", tags=["home"])
    gone = mem.add(ALICE, "I work at the harbour")
    mem.delete(ALICE, gone.id)
    calls = {
        "set_access": lambda: mem.set_access(ALICE, rec.id, visibility="private", actor=actor),
        "delete": lambda: mem.delete(ALICE, rec.id, actor=actor),
        "restore": lambda: mem.restore(ALICE, gone.id, actor=actor),
        "purge": lambda: mem.purge(ALICE, [rec.id], actor=actor),
        "purge user": lambda: mem.purge(ALICE.user_scope, actor=actor),
    }
    for name, call in calls.items():
        assert "actor" in _refused(mem, call), name
    assert mem.get(ALICE, rec.id).access.visibility.value == "shared"


@pytest.mark.parametrize(
    ("record_id", "says"),
    [([], "string id"), (["x"], "string id"), (7, "string id"), ("\udc80", "surrogate")],
)
def test_set_access_checks_the_record_id(mem: Memory, record_id: object, says: str) -> None:
    """A list id raised TypeError (unhashable), a lone surrogate UnicodeEncodeError."""
    mem.add(ALICE, "I live in Lisbon")
    assert says in _refused(mem, lambda: mem.set_access(ALICE, record_id, visibility="shared"))


@pytest.mark.parametrize("users", [["bo\x00b"], ["\ud800"], ["bob", 3]])
def test_set_access_checks_the_users_as_ids(mem: Memory, users: list[Any]) -> None:
    """A NUL was stored (and the record's export then failed to import: the import checks
    ``access.allowed_users`` as ids); a lone surrogate raised UnicodeEncodeError."""
    rec = mem.add(ALICE, "I live in Lisbon")
    _refused(mem, lambda: mem.set_access(ALICE, rec.id, allowed_users=users))
    _refused(mem, lambda: mem.set_access(ALICE, rec.id, allowed_roles=users))


def test_another_tenants_id_in_set_access_is_not_found(mem: Memory) -> None:
    theirs = mem.add(OTHER, "globex roadmap")
    mine = mem.add(ALICE, "I live in Lisbon")
    for rid in (theirs.id, mine.id + "x"):
        call = lambda rid=rid: mem.set_access(ALICE, rid, visibility="public")  # noqa: E731
        _refused(mem, call, NotFoundError)
    assert mem.get(OTHER, theirs.id).access.visibility.value == "shared"


def test_a_nul_in_a_tag_is_refused_on_every_store(mem: Memory) -> None:
    """Stored, a NUL tag made every tag-filtered list, search and set_importance_by_tag of
    the user fail on PostgreSQL (``json_array_elements_text`` cannot return it); SQLite
    and memory:// took it. Now every store refuses it, wherever a tag is given."""
    rec = mem.add(ALICE, "I live in Lisbon", tags=["home"])
    for call in (
        lambda: mem.add(ALICE, "x y z", tags=["a\x00b"]),
        lambda: mem.update(ALICE, rec.id, expected_version=1, tags=["\x00"]),
        lambda: mem.remember(ALICE, "ok", tags=["a\x00"]),
        lambda: mem.set_importance_by_tag(ALICE, "ho\x00me", 0.5),
        lambda: mem.list(ALICE, filters={"tags": ["home\x00"]}),
        lambda: mem.search(ALICE, "Lisbon", filters=Filters(tags_all=frozenset({"\x00"}))),
        lambda: mem.list(ALICE, filters={"ids": [rec.id + "\x00"]}),
    ):
        assert "NUL" in _refused(mem, call)
    home = Filters(tags_any=frozenset({"home"}))
    assert [r.id for r in mem.list(ALICE, filters=home)] == [rec.id]
    assert [h.record.id for h in mem.search(ALICE, "Lisbon", filters=home)] == [rec.id]


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.flush(ALICE, timeout="soon"),
        lambda m: m.flush(timeout=float("nan")),
        lambda m: m.flush(ALICE, timeout=-1),
        lambda m: m.compact(lock_timeout="x"),
        lambda m: m.compact(lock_timeout=-1),
        lambda m: m.compact(lock_timeout=float("inf")),
        lambda m: m.search(ALICE, "Lisbon", top_k=True),
        lambda m: m.purge(ALICE, [], compact="yes"),
    ],
)
def test_bad_numbers_and_flags_are_validation_errors(mem: Memory, call: Any) -> None:
    """flush(timeout="soon") raised TypeError; compact(lock_timeout="x") ValueError on
    PostgreSQL (and was ignored elsewhere); top_k=True searched for one hit."""
    mem.add(ALICE, "I live in Lisbon")
    _refused(mem, lambda: call(mem))


def test_remember_checks_tags_and_metadata_whatever_the_router_decides(mem: Memory) -> None:
    """Short small talk is not stored; its bad tags and metadata were silently accepted."""
    assert mem.remember(ALICE, "hi", tags=["ok"]).record is None
    _refused(mem, lambda: mem.remember(ALICE, "hi", tags="not a list"))
    _refused(mem, lambda: mem.remember(ALICE, "hi", metadata={"k": object()}))
