"""Re-ingesting a document under its ``qa_id`` replaces it; nothing is lost.

``knowledge.ingest`` under the ``qa_id`` of a stored document writes the new chunks and
soft-deletes the old ones in one transaction: search, context and ``knowledge.chunks`` see
one version, the old chunks stay in the store (restorable with ``restore``, listed with
``include_deleted``). The same text and title again is the same document: nothing is
written (metadata a caller added to its chunks aside), or, with a new importance or new
tags, a new version of each chunk, never a new record. Quotas admit the new chunks (the old
ones count until purged); refused, the stored document is untouched. On ``Memory`` and
``AsyncMemory``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest

from memstrata import Filters, Memory, MemoryRecord, RecordType
from memstrata.errors import QuotaExceededError
from memstrata.filters import MetadataCondition
from memstrata.layers.knowledge import rejoin
from memstrata.layers.knowledge_types import document_chunks
from memstrata.layers.types import LayerConfig
from memstrata.quotas import Quota, Quotas
from test_quota_services import ALICE, KINDS, Mem, run

OLD = " ".join(f"Old sentence {i} about the ferries of the Tagus river." for i in range(500))
NEW = " ".join(f"New sentence {i} about the trams climbing the hills." for i in range(300))


async def _stored(m: Mem) -> list[MemoryRecord]:
    """The document's active chunks as a reader lists them (the server's GET), in order."""
    active = Filters(
        types=frozenset({RecordType.KNOWLEDGE}),
        metadata=(MetadataCondition("qa_id", "eq", "guide"),),
    )
    found = await m("list", ALICE.user_scope, filters=active, limit=1000)
    return sorted(found, key=lambda r: int(r.metadata["chunk_index"]))


async def _chunks(m: Mem) -> list[str]:
    return [r.id for r in await _stored(m)]


async def _read(m: Mem) -> list[str]:
    """The same, read with ``knowledge.chunks``."""
    return [r.id for r in await m("knowledge.chunks", ALICE, "guide")]


async def _text(m: Mem) -> str:
    [(qa_id, text)] = rejoin(await _stored(m))
    assert qa_id == "guide"
    return text


async def _every_chunk(m: Mem) -> list[str]:
    """Every chunk of the document in the store, deleted ones included."""
    every = Filters(types=frozenset({RecordType.KNOWLEDGE}), include_deleted=True)
    return [r.id for r in await m("list", ALICE.user_scope, filters=every, limit=1000)]


@pytest.mark.parametrize("kind", KINDS)
def test_the_same_document_again_writes_nothing(kind: str, tmp_path: Path) -> None:
    async def body(m: Mem) -> None:
        first = await m("knowledge.ingest", ALICE, OLD, "guide", "Lisbon", tags=["travel"])
        used = await m.count(ALICE)
        await m("set_quota", ALICE, Quota(max_records=used))  # full: a no-op still works
        again = await m("knowledge.ingest", ALICE, OLD, "guide", "Lisbon", tags=["travel"])
        assert [r.id for r in again] == [r.id for r in first] == await _chunks(m)
        assert await m.count(ALICE) == used
        assert await _read(m) == [r.id for r in first]
        # from another session of the same user: the same document
        other = ALICE.with_session("s2")
        again = await m("knowledge.ingest", other, OLD, "guide", "Lisbon", tags=["travel"])
        assert [r.id for r in again] == [r.id for r in first]

    run(kind, body, url=f"sqlite:///{tmp_path / 'k.db'}", quotas=Quotas())


@pytest.mark.parametrize("kind", KINDS)
def test_new_text_replaces_the_document_and_the_old_version_is_restorable(
    kind: str, tmp_path: Path
) -> None:
    async def body(m: Mem) -> None:
        old = [r.id for r in await m("knowledge.ingest", ALICE, OLD, "guide")]
        new = [r.id for r in await m("knowledge.ingest", ALICE, NEW, "guide")]
        assert len(old) >= 2 and not set(old) & set(new)
        assert await _chunks(m) == new and await _text(m) == NEW
        assert await m.count(ALICE) == len(old) + len(new)  # the old version is kept
        assert sorted(await _every_chunk(m)) == sorted(old + new)
        for rid in old:
            assert (await m("get", ALICE, rid, include_deleted=True)).status.value == "deleted"
        hits = await m("search", ALICE, "ferries of the Tagus river", 5)
        assert hits and {h.record.id for h in hits} <= set(new)  # no duplicate, no stale
        # back to the old version: restore its chunks, forget the new ones
        for rid in old:
            await m("restore", ALICE, rid)
        for rid in new:
            await m("delete", ALICE, rid)
        assert await _chunks(m) == old and await _text(m) == OLD
        assert await _read(m) == old

    run(kind, body, url=f"sqlite:///{tmp_path / 'k.db'}")


@pytest.mark.parametrize("kind", KINDS)
def test_a_new_title_is_a_new_version(kind: str) -> None:
    async def body(m: Mem) -> None:
        old = [r.id for r in await m("knowledge.ingest", ALICE, OLD, "guide", "Ferries")]
        new = await m("knowledge.ingest", ALICE, OLD, "guide", "Tagus ferries")
        assert {r.metadata["title"] for r in new} == {"Tagus ferries"}
        assert await _chunks(m) == [r.id for r in new] and not set(old) & set(await _chunks(m))
        assert await _text(m) == OLD

    run(kind, body)


@pytest.mark.parametrize("kind", KINDS)
def test_a_refused_reingest_leaves_the_stored_document(kind: str) -> None:
    async def body(m: Mem) -> None:
        old = [r.id for r in await m("knowledge.ingest", ALICE, OLD, "guide")]
        used = await m.count(ALICE)
        needed = len(document_chunks(NEW, LayerConfig()))
        await m("set_quota", ALICE, Quota(max_records=used + needed - 1))
        with pytest.raises(QuotaExceededError, match=f"needs {needed}"):
            await m("knowledge.ingest", ALICE, NEW, "guide")
        assert await m.count(ALICE) == used
        assert await _chunks(m) == old and await _text(m) == OLD
        await m("set_quota", ALICE, Quota(max_records=used + needed))
        await m("knowledge.ingest", ALICE, NEW, "guide")
        assert await _text(m) == NEW and await m.count(ALICE) == used + needed

    run(kind, body, quotas=Quotas())


@pytest.mark.parametrize("kind", KINDS)
def test_the_same_text_with_new_importance_or_tags_updates_the_chunks_in_place(
    kind: str,
) -> None:
    async def body(m: Mem) -> None:
        first = await m("knowledge.ingest", ALICE, OLD, "guide", tags=["travel"])
        ids = [r.id for r in first]
        chunk = first[0]  # a caller's own note on a chunk does not make it another document
        await m("update", ALICE, chunk.id, expected_version=1, metadata={**chunk.metadata, "ok": 1})
        used = await m.count(ALICE)
        await m("set_quota", ALICE, Quota(max_records=used))  # full: no new record is needed
        again = await m("knowledge.ingest", ALICE, OLD, "guide", importance=0.9, tags=["lisbon"])
        assert [r.id for r in again] == ids == await _chunks(m)
        assert {(r.importance, r.tags) for r in await _stored(m)} == {(0.9, ("lisbon",))}
        assert [r.version for r in again] == [3] + [2] * (len(ids) - 1)
        assert (await _stored(m))[0].metadata["ok"] == 1
        assert await m.count(ALICE) == used and await _text(m) == OLD

    run(kind, body, quotas=Quotas())


def test_reingest_on_every_store(mem: Memory) -> None:
    """sqlite, memory, postgresql, postgresql+redis (tests/conftest.py): the replacement
    is one transaction on each, and its admission holds the store's lease."""
    old = [r.id for r in mem.knowledge.ingest(ALICE, OLD, "guide")]
    new = [r.id for r in mem.knowledge.ingest(ALICE, NEW, "guide")]
    assert [r.id for r in mem.knowledge.chunks(ALICE, "guide")] == new
    assert {mem.get(ALICE, rid, include_deleted=True).status.value for rid in old} == {"deleted"}
    assert [r.id for r in mem.knowledge.ingest(ALICE, NEW, "guide")] == new
    every = Filters(include_deleted=True, include_superseded=True)
    used = mem.store.count(ALICE.user_scope, every)
    assert used == len(old) + len(new)
    mem.set_quota(ALICE, Quota(max_records=used))
    with pytest.raises(QuotaExceededError):
        mem.knowledge.ingest(ALICE, OLD, "guide")
    assert [r.id for r in mem.knowledge.chunks(ALICE, "guide")] == new
    assert mem.store.count(ALICE.user_scope, every) == used


def test_restating_a_document_is_one_transaction(tmp_path: Path) -> None:
    """New tags for the same document restate every chunk at once: a crash on the second
    chunk leaves them all as they were (before, the first chunk kept its new version)."""
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", background=False) as mem:
        first = mem.knowledge.ingest(ALICE, OLD, "guide", tags=["travel"])
        assert len(first) >= 2
        store = mem.layers.ctx.store
        calls = {"n": 0}

        def crashing(replace: Callable[..., Any]) -> Callable[..., Any]:
            def on_second(*args: Any, **kwargs: Any) -> Any:
                calls["n"] += 1
                if calls["n"] == 2:
                    raise RuntimeError("the process died here")
                return replace(*args, **kwargs)

            return on_second

        real_transaction = store.transaction

        @contextmanager
        def transaction() -> Iterator[Any]:
            with real_transaction() as tx:
                yield _Crashing(tx, crashing(tx.replace))

        with (
            patch.object(store, "replace", crashing(store.replace)),
            patch.object(store, "transaction", transaction),
            pytest.raises(RuntimeError),
        ):
            mem.knowledge.ingest(ALICE, OLD, "guide", tags=["lisbon"])
        chunks = mem.knowledge.chunks(ALICE, "guide")
        assert [r.id for r in chunks] == [r.id for r in first]
        assert {(r.version, r.tags) for r in chunks} == {(1, ("travel",))}


class _Crashing:
    """A unit of work whose ``replace`` is the given one."""

    def __init__(self, tx: Any, replace: Callable[..., Any]) -> None:
        self._tx, self.replace = tx, replace

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)
