"""SQLite inserts a batch of records in one ``executemany``: every record's lexical and
vector rows still belong to it, a clash names the right id and writes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memstrata import Memory, Message, Scope
from memstrata.errors import ValidationError
from memstrata.filters import Filters
from memstrata.records import MemoryRecord
from memstrata.search.tokenize import tokenize
from memstrata.store import RecordWrite, open_store
from memstrata.store.sqlite.store import SQLiteStore
from memstrata.writes import message_record

ME = Scope("t1", "u1")
T0 = datetime(2024, 1, 1, tzinfo=UTC)
DIMS = 8


def _write(text: str, rid: str, scope: Scope = ME) -> RecordWrite:
    rec: MemoryRecord = message_record(
        scope,
        Message(role="user", content=text),
        now=T0,
        model_id="m",
        dims=DIMS,
        max_chars=10_000,
    )
    rec = replace(rec, id=rid)
    vec = np.zeros(DIMS, dtype=np.float32)
    vec[hash(rid) % DIMS] = 1.0
    return RecordWrite(rec, vec, tuple(tokenize(text)))


@pytest.fixture(params=["file", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SQLiteStore]:
    url = f"sqlite:///{tmp_path / 'm.db'}" if request.param == "file" else "sqlite://:memory:"
    s = open_store(url)
    assert isinstance(s, SQLiteStore)
    yield s
    s.close()


def test_every_record_keeps_its_own_index_rows(store: SQLiteStore) -> None:
    words = ["apple", "banana", "cherry", "damson", "elder", "fig", "grape"]
    store.insert([_write(f"the {w} pie", f"r-{w}") for w in words[:3]])
    store.purge(ME, ["r-banana"])  # a gap in seq: the next batch must not be shifted by it
    store.insert([_write(f"the {w} pie", f"r-{w}") for w in words[3:]])
    for w in [w for w in words if w != "banana"]:
        hits = store.lexical_search(ME, tokenize(w), 3, Filters())
        assert [h.id for h in hits] == [f"r-{w}"]
        vec = np.zeros(DIMS, dtype=np.float32)
        vec[hash(f"r-{w}") % DIMS] = 1.0
        dense = store.vector_search(ME, vec, 10, Filters())  # type: ignore[arg-type]
        assert f"r-{w}" in [h.id for h in dense]


@pytest.mark.parametrize(
    "batch,named",
    [
        (["n1", "old", "n2"], "old"),
        (["n1", "n2", "n1"], "n1"),
        (["old", "n1"], "old"),
        (["n1", "n2", "n3", "n2"], "n2"),
    ],
)
def test_a_clash_names_its_id_and_writes_nothing(
    store: SQLiteStore, batch: list[str], named: str
) -> None:
    store.insert([_write("an old note", "old")])
    with pytest.raises(ValidationError, match=f"record id '{named}' exists already"):
        store.insert([_write(f"text {i}", rid) for i, rid in enumerate(batch)])
    assert [r.id for r in store.list(ME, Filters(), limit=100)] == ["old"]
    assert store.lexical_search(ME, tokenize("text"), 5, Filters()) == []
    # and the store goes on numbering correctly after the rolled-back batch
    store.insert([_write("a fresh cherry", "n9")])
    assert [h.id for h in store.lexical_search(ME, tokenize("cherry"), 5, Filters())] == ["n9"]


def test_the_same_id_under_another_user_is_no_clash(store: SQLiteStore) -> None:
    other = Scope("t1", "u2")
    store.insert([_write("mine", "x")])
    store.insert([_write("theirs one", "y", other), _write("theirs two", "x", other)])
    assert {r.id for r in store.list(other, Filters(), limit=10)} == {"x", "y"}


def test_add_messages_end_to_end(tmp_path: Path) -> None:
    mem = Memory(f"sqlite:///{tmp_path / 'e.db'}", embedder="hashing", background=False)
    try:
        scope = Scope("t", "u", session="s")
        for n in range(3):
            mem.add_messages(
                scope,
                [Message(role="user", content=f"batch {n} turn {i} kiwi{n}x{i}") for i in range(7)],
            )
        assert len(mem.search(scope, "kiwi2x5", top_k=1)) == 1
        assert mem.search(scope, "kiwi2x5", top_k=1)[0].record.text.endswith("kiwi2x5")
    finally:
        mem.close()
