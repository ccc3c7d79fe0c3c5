"""Tags holding a NUL, written before session 20 refused them, and ``memstrata migrate``.

PostgreSQL stores such a tag (inside the record's JSON list of tags) but cannot read it
back out: every tag-filtered list, search and ``set_importance_by_tag`` of that user then
failed with a StoreError. Before this audit the migration copied the tag as it was; now it
counts the tag among the texts holding a NUL, refuses the copy to PostgreSQL without
``--replace-nul`` and stores the NUL as U+FFFD with it, as for content and summaries."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import memstrata.writes
from memstrata import Filters, Memory, Scope, ValidationError
from memstrata.store.migrate import copy_store, verify_stores

ALICE = Scope("acme", "alice", session="s1")
HOME = Filters(tags_any=frozenset({"home"}))


@pytest.fixture
def old_store(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A SQLite store written under the old rule: a tag could hold a NUL."""

    def old_rule(value: object, field: str = "tags") -> tuple[str, ...]:
        return tuple(dict.fromkeys(value or ()))  # type: ignore[call-overload]

    url = f"sqlite:///{tmp_path / 'old.db'}"
    with monkeypatch.context() as m:
        m.setattr(memstrata.writes, "check_tags", old_rule)
        mem = Memory(url, embedder="hashing", background=False)
        mem.add(ALICE, "I live in Lisbon", tags=["home"])
        mem.add(ALICE, "the shed key is under the pot", tags=["home", "sh\x00ed"])
        mem.close()
    yield url


def test_a_nul_tag_is_counted_refused_and_replaced(old_store: str, pg_url: str) -> None:
    assert copy_store(old_store, pg_url, dry_run=True).nul_texts == 1
    with pytest.raises(ValidationError, match="tag 'sh\\\\x00ed' of version 1"):
        copy_store(old_store, pg_url)
    report = copy_store(old_store, pg_url, resume=True, replace_nul=True)
    assert report.ok, report.mismatches
    assert verify_stores(old_store, pg_url, replace_nul=True).ok
    mem = Memory(pg_url, embedder="hashing", background=False)
    try:
        found = mem.list(ALICE.user_scope, filters=HOME)  # failed on PostgreSQL before
        assert len(found) == 2
        assert {t for r in found for t in r.tags} == {"home", "sh\ufffded"}
        assert len(mem.search(ALICE.user_scope, "shed key", filters=HOME)) >= 1
    finally:
        mem.close()
