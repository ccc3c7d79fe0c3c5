"""Through a caller, an id the owner did not share, one the owner shared and then deleted,
and one that never existed are told apart by nothing: the same error with the same words
(the id aside), for every read and every refused write, in the library and over HTTP.
Fails before session 27's deleted-record rule (5 of 25: ``get`` with ``include_deleted`` and
``history`` on every store, and HTTP) and guards the words of the errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memstrata import Memory, Scope
from memstrata.errors import MemstrataError

from .conftest import served  # noqa: F401

BOB = Scope("acme", "bob")
CAROL = BOB.as_caller("carol")
MISSING = "0" * 32

CALLS: dict[str, Callable[[Memory, str], Any]] = {
    "get": lambda m, i: m.get(CAROL, i),
    "get deleted": lambda m, i: m.get(CAROL, i, include_deleted=True),
    "history": lambda m, i: m.history(CAROL, i),
    "update": lambda m, i: m.update(CAROL, i, content="x"),
    "delete": lambda m, i: m.delete(CAROL, i),
    "restore": lambda m, i: m.restore(CAROL, i),
    "set_access": lambda m, i: m.set_access(CAROL, i, visibility="public"),
    "purge": lambda m, i: m.purge(CAROL, [i]),
}


def _ids(mem: Memory) -> dict[str, str]:
    unshared = mem.add(BOB, "bob's own words").id
    deleted = mem.add(BOB, "shared, then deleted").id
    mem.set_access(BOB, deleted, visibility="shared", allowed_users=["carol"])
    mem.delete(BOB, deleted)
    return {"unshared": unshared, "deleted": deleted, "missing": MISSING}


def _error(mem: Memory, call: str, rid: str) -> tuple[str, str]:
    with pytest.raises(MemstrataError) as exc:
        CALLS[call](mem, rid)
    return type(exc.value).__name__, str(exc.value).replace(rid, "<id>")


@pytest.mark.parametrize("call", sorted(CALLS))
def test_the_same_error_for_unshared_deleted_and_missing(mem: Memory, call: str) -> None:
    ids = _ids(mem)
    errors = {kind: _error(mem, call, rid) for kind, rid in ids.items()}
    assert len(set(errors.values())) == 1, errors


def test_http_answers_the_same_for_unshared_deleted_and_missing(served) -> None:  # noqa: F811
    ids = _ids(served.memory)
    h = served.h(served.keys.create("acme", user="carol").secret)
    c = served.client
    for path in ("{}", "{}?include_deleted=true", "{}/history"):
        answers = set()
        for rid in ids.values():
            r = c.get("/v1/users/bob/memories/" + path.format(rid), headers=h)
            answers.add((r.status_code, r.text.replace(rid, "<id>")))
        assert len(answers) == 1, answers
    for method, path in (("DELETE", "{}"), ("POST", "{}/restore"), ("PATCH", "{}")):
        answers = set()
        for rid in ids.values():
            r = c.request(method, "/v1/users/bob/memories/" + path.format(rid), headers=h, json={})
            answers.add((r.status_code, r.text.replace(rid, "<id>")))
        assert len(answers) == 1, (method, answers)
