"""A unit of work on the Redis hot tier holds no more than the store's own does.

The hot tier notes the turns a transaction adds, to push them into their session's cache
after the commit. It used to keep every record inserted (an import: every record of the
file alive until the commit); now it keeps a session's new turns up to what the cache
holds, invalidates a session given more, and keeps nothing of other records.
"""

from __future__ import annotations

import io
import tracemalloc
from pathlib import Path

import pytest

from memstrata import Memory, Message, Scope
from memstrata.embedder import hashing
from memstrata.embedder.cache_types import LRUEmbeddingCache
from memstrata.records import RecordType, Role
from memstrata.store.redis_hot import RedisHotStore
from store.conftest import Maker, make_store

S = Scope("t1", "u1", session="s1")
ALICE = Scope("acme", "alice")
SMALL, LARGE = 2_000, 8_000


def test_a_transaction_keeps_a_sessions_turns_up_to_the_cache_and_nothing_else(
    tmp_path: Path,
) -> None:
    store = make_store("sqlite+redis", tmp_path)
    assert isinstance(store, RedisHotStore)
    maker = Maker()
    cap = store._cap
    turns = [
        maker.write(text=f"turn {i}", session=S.session, type=RecordType.MESSAGE, role=Role.USER)
        for i in range(cap * 2 + 5)
    ]
    try:
        store.recent_turns(S, 3)  # the session's cache is loaded before the transaction
        with store.transaction() as tx:
            tx.insert([maker.write(text=f"note {i}") for i in range(50)])  # of no session
            assert tx.appended == {}
            tx.append_turns(turns[:10])
            assert [len(v) for v in tx.appended.values()] == [10]
            tx.append_turns(turns[10:])
            # more than the session's cache keeps: invalidated, none of them held
            assert tx.appended == {} and list(tx.invalidated) == [("t1", "u1", "s1")]
        got = store.recent_turns(S, 3)  # read again from the durable store
        assert [r.id for r in got] == [w.record.id for w in turns[-3:]]
    finally:
        store.close()


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    root = tmp_path_factory.mktemp("exports")
    out = {}
    for n in (SMALL, LARGE):
        with Memory(f"sqlite:///{root / f'{n}.db'}", embedder="hashing") as mem:
            for start in range(0, n, 1000):
                mem.add_messages(
                    ALICE,
                    [
                        Message(role="user", content=f"note {i} about topic {i * 7}, in passing")
                        for i in range(start, min(n, start + 1000))
                    ],
                )
            buf = io.StringIO()
            mem.export_records(ALICE, buf, include_embeddings=True)
        out[n] = root / f"{n}.jsonl"
        out[n].write_text(buf.getvalue())
    return out


def _peak(path: Path, db: Path, buffer: str) -> tuple[int, int]:
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False, buffer=buffer) as mem:
        mem._embedder._lru = LRUEmbeddingCache(16)  # the memory's vector LRU is not the import's
        mem.stats(ALICE)  # opened and migrated before the measure
        with path.open(encoding="utf-8") as fp:
            tracemalloc.start()
            try:
                report = mem.import_records(fp)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
    return peak, report.imported


def test_an_import_into_a_redis_backed_memory_holds_a_page_not_the_file(
    exports: dict[int, Path],
    tmp_path: Path,
    redis_buffer_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(hashing, "_WORD_CACHE_MAX", 0)  # the embedder's word cache is not ours
    small, n_small = _peak(exports[SMALL], tmp_path / "small.db", redis_buffer_url)
    large, n_large = _peak(exports[LARGE], tmp_path / "large.db", redis_buffer_url)
    assert (n_small, n_large) == (SMALL, LARGE)
    assert large < 1.35 * small, f"peak {small / 1e6:.1f} MB -> {large / 1e6:.1f} MB"
