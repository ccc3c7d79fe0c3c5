"""SQLite reads run concurrently (a read connection per thread, WAL) and never write.

Before: every read took the store's one connection lock, so a read waited for any write
transaction of another thread, and the context builder's threads ran one after another.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.errors import StoreError, ValidationError
from memstrata.filters import Filters
from memstrata.records import MemoryRecord, RecordType, Role, Source, Visibility
from memstrata.scope import Scope
from memstrata.store.sqlite import SQLiteStore
from memstrata.store.sqlite.codec import COLUMNS, _decode_validated, decode_record, encode_record

from .conftest import T0, Maker, unit

ME = Scope("t1", "u1")


def test_a_read_does_not_wait_for_another_threads_write(tmp_path: Path, maker: Maker) -> None:
    store = SQLiteStore(str(tmp_path / "r.db"))
    old = maker.write(text="pottery class on saturday")
    store.insert([old])
    new = maker.write(text="pottery wheel bought")
    inside, release = threading.Event(), threading.Event()

    def writer() -> None:
        with store.transaction() as tx:
            tx.insert([new])
            inside.set()
            release.wait(30)

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert inside.wait(30)
        seen: dict[str, object] = {}

        def reader() -> None:  # would block on the connection lock until release
            seen["ids"] = [c.id for c in store.lexical_search(ME, ["potteri"], 10, Filters())]
            seen["vec"] = [
                c.id for c in store.vector_search(ME, unit(np.random.default_rng(1)), 10, Filters())
            ]
            seen["get"] = store.get(ME, old.record.id).id

        r = threading.Thread(target=reader)
        r.start()
        r.join(20)
        assert not r.is_alive(), "a read waited for another thread's write transaction"
        # the uncommitted record is not visible; the committed one is
        assert seen == {"ids": [old.record.id], "vec": [old.record.id], "get": old.record.id}
    finally:
        release.set()
        t.join()
    # once committed, the next read sees it
    assert {c.id for c in store.lexical_search(ME, ["potteri"], 10, Filters())} == {
        old.record.id,
        new.record.id,
    }
    store.close()


def test_read_connections_cannot_write(tmp_path: Path, maker: Maker) -> None:
    """An internal guard (only memstrata's own code runs SQL on a read connection), but
    like every error of a read it comes out as a StoreError saying what happened: here a
    memstrata bug, which retrying cannot fix; SQLite's refusal is its cause."""
    store = SQLiteStore(str(tmp_path / "r.db"))
    store.insert([maker.write()])
    with pytest.raises(StoreError, match="a read tried to write") as caught, store._read() as c:
        c.execute("DELETE FROM records")
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    assert "readonly" in str(caught.value.__cause__)
    assert caught.value.retryable is False and "memstrata bug" in str(caught.value)
    assert store.count(ME, Filters()) == 1
    store.close()


def test_reads_of_a_closed_store_fail_clearly(tmp_path: Path, maker: Maker) -> None:
    store = SQLiteStore(str(tmp_path / "r.db"))
    store.insert([maker.write()])
    done: list[BaseException] = []

    def late_reader() -> None:  # a thread that never read before the store closed
        try:
            store.count(ME, Filters())
        except BaseException as exc:
            done.append(exc)

    store.close()
    t = threading.Thread(target=late_reader)
    t.start()
    t.join()
    assert done and "closed" in str(done[0])


def test_counters_in_flight_are_counted_once_while_other_threads_flush(
    tmp_path: Path, maker: Maker
) -> None:
    """A commit that carries buffered counters and a concurrent read see each increment
    exactly once: in the reader's snapshot or in flight, never both, never neither."""
    store = SQLiteStore(str(tmp_path / "r.db"))
    w = maker.write()
    store.insert([w])
    rid = w.record.id
    stop = threading.Event()
    errors: list[BaseException] = []

    def flusher() -> None:
        try:
            while not stop.is_set():
                store.flush_counters()
                store.insert([maker.write(vector=False)])  # writes carry counters too
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=flusher) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for i in range(1, 301):
            store.touch(ME, [rid], T0)
            assert store.get(ME, rid).access_count == i
            assert store.get_many(ME, [rid])[0].access_count == i
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors
    store.close()
    check = SQLiteStore(str(tmp_path / "r.db"))
    assert check.get(ME, rid).access_count == 300
    check.close()


_texts = st.text(min_size=1, max_size=40).filter(lambda s: s.strip() and "\x00" not in s)


@settings(max_examples=60, deadline=None)
@given(
    text=_texts,
    tags=st.lists(_texts, max_size=3),
    sources=st.lists(_texts, max_size=3),
    meta=st.dictionaries(_texts, st.integers() | _texts, max_size=3),
    rtype=st.sampled_from(list(RecordType)),
    role=st.none() | st.sampled_from(list(Role)),
    source=st.sampled_from(list(Source)),
    vis=st.sampled_from(list(Visibility)),
    users=st.lists(_texts, max_size=2),
    importance=st.floats(0, 1),
)
def test_decoding_a_row_gives_back_the_record(
    text: str,
    tags: list[str],
    sources: list[str],
    meta: dict[str, object],
    rtype: RecordType,
    role: Role | None,
    source: Source,
    vis: Visibility,
    users: list[str],
    importance: float,
) -> None:
    from dataclasses import replace

    from memstrata.records import AccessControl, Relation

    base = Maker().record(text, type=rtype, visibility=vis)
    rec = replace(
        base,
        role=role,
        source=source,
        tags=tuple(tags),
        source_ids=tuple(sources),
        metadata=meta,
        importance=importance,
        relations=(Relation("about", "x1"),) if tags else (),
        access=AccessControl(vis, tuple(users), ()),
    )
    row = dict(zip(COLUMNS, encode_record(rec), strict=True))
    assert decode_record(row) == rec
    assert decode_record(row) == _decode_validated(row)


def test_a_damaged_enum_column_is_refused(tmp_path: Path, maker: Maker) -> None:
    rec: MemoryRecord = maker.record()
    row = dict(zip(COLUMNS, encode_record(rec), strict=True))
    row["type"] = "not-a-type"
    with pytest.raises(ValidationError):
        decode_record(row)
