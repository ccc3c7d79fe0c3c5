"""A record id prefix given to the CLI (`memstrata get 3f2a`) is resolved by walking the
user's records in keyset pages: a purge while the walk reads cannot make it miss the one
record that matches (the walk read pages of 1,000 by offset, and the purge shifted them)."""

from __future__ import annotations

from typing import Any

import pytest

from memstrata import Memory, Message, Scope
from memstrata.cli.resolve import resolve_id
from memstrata.errors import NotFoundError, ValidationError
from midwalk import after_first_page


def test_a_purge_during_the_walk_does_not_hide_the_match(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = Memory(f"sqlite:///{tmp_path}/m.db", embedder="hashing", background=False)
    scope = Scope("acme", "alice", session="s")
    try:
        mem.add_messages(
            scope,
            [Message(role="user", content=f"note {i} on topic {i * 7}") for i in range(1_100)],
        )
        newest_first = [r.id for r in mem.list(scope, limit=10_000)]
        target = newest_first[-1]  # the oldest: past the first page of a newest-first walk
        prefix = next(
            target[:n]
            for n in range(4, 33)
            if sum(i.startswith(target[:n]) for i in newest_first) == 1
        )
        victims = newest_first[:150]  # the newest: in that walk's first page
        after_first_page(mem.store, monkeypatch, lambda: mem.purge(scope, victims))
        assert resolve_id(mem, scope, prefix) == target
    finally:
        mem.close()


def test_prefix_errors_name_the_fix(tmp_path: Any) -> None:
    mem = Memory(f"sqlite:///{tmp_path}/m.db", embedder="hashing", background=False)
    scope = Scope("acme", "alice", session="s")
    try:
        ids = [mem.add(scope, f"fact {i}").id for i in range(40)]
        with pytest.raises(NotFoundError, match="memstrata list"):
            resolve_id(mem, scope, "zzzz")
        common = next(c for c in "0123456789abcdef" if sum(i.startswith(c) for i in ids) > 1)
        with pytest.raises(ValidationError, match="ambiguous"):
            resolve_id(mem, scope, common)
        assert resolve_id(mem, scope, ids[0]) == ids[0]
    finally:
        mem.close()
