"""A listing of one fact key or one document's live chunks on SQLite reads the name's live
index on every page (session 32, tidy32; where.py). Until then ``filters_sql`` also said the
type (``type IN ('knowledge')``) beside ``key_sql``'s ``type = 'knowledge'``, and SQLite read
the next page of a live listing (``(observed_at, seq) > (?, ?)``: ``list_pages`` after its
first page, ``list_after``) by the index of the user's records of the type, from that place
to the user's last: ~8 VM steps for each record of the type written after the name's (80,000
steps, 4-8 ms, for one document among 5,000). Counted in VM steps, not timed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata import Memory, Scope
from memstrata.filters import Filters, MetadataCondition
from memstrata.records import RecordType
from sqlite_steps import sqlite_store, vm_steps

ANN = Scope("acme", "ann")
LONG = " ".join(f"Sentence {i} of the long document about harbours." for i in range(800))


def _by(kind: RecordType, field: str, name: str, **how: Any) -> Filters:
    return Filters(types=frozenset({kind}), metadata=(MetadataCondition(field, "eq", name),), **how)


DOC = _by(RecordType.KNOWLEDGE, "qa_id", "first")
FACT = _by(RecordType.FACT, "key", "first")


def _fill(mem: Memory, start: int, stop: int) -> None:
    for i in range(start, stop):
        mem.knowledge.ingest(ANN, f"The text of document {i}.", f"d{i}")
        mem.add(ANN, f"k{i}: value {i}", type="fact", metadata={"key": f"k{i}"})


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[Memory]:
    m = Memory(f"sqlite:///{tmp_path / 'n.db'}", embedder="hashing", background=False)
    m.knowledge.ingest(ANN, LONG, "first")  # the names read, written before the others
    m.add(ANN, "first: the value", type="fact", metadata={"key": "first"})
    yield m
    m.close()


def test_a_names_listing_does_not_grow_with_the_users_other_records(lite: Memory) -> None:
    store = sqlite_store(lite)
    chunks = store.list(ANN, DOC)
    assert len(chunks) > 3  # a document of several pages at batch_size=2
    fact = store.list(ANN, FACT)
    assert len(fact) == 1

    def count() -> list[int]:
        calls: list[Callable[[], Any]] = [
            lambda: list(store.list_pages(ANN, DOC)),
            lambda: list(store.list_pages(ANN, DOC, batch_size=2)),
            lambda: store.list_after(ANN, DOC, chunks[0].id, limit=5),
            lambda: list(store.list_pages(ANN, FACT)),
            lambda: store.list_after(ANN, FACT, fact[0].id),
        ]
        return [vm_steps(store, call) for call in calls]

    _fill(lite, 0, 20)
    small = count()
    _fill(lite, 20, 300)
    large = count()
    # equal within a few steps (the statements are the same; nothing of the 560 records
    # written after the names is read), not to the step
    assert all(b <= a + 16 for a, b in zip(small, large, strict=True)), (small, large)


def test_a_names_pages_are_its_listing(lite: Memory) -> None:
    _fill(lite, 0, 5)
    store = sqlite_store(lite)
    for f in (DOC, FACT, _by(RecordType.KNOWLEDGE, "qa_id", "first", include_deleted=True)):
        listed = [r.id for r in store.list(ANN, f, newest_first=False)]
        for size in (1, 2, 1000):
            paged = [r.id for page in store.list_pages(ANN, f, batch_size=size) for r in page]
            assert paged == listed
        after = [r.id for r in store.list_after(ANN, f, listed[0], limit=1000)]
        assert after == listed[1:]
