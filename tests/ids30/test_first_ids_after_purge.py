"""A purged fact's or document's id is never given again (``layers/races.py``).

Until session 30 a key's first fact (a document's first version's first chunk) was named by
a hash of the name and the id of its record stored last (fv18): a purge of that record
rewound it, and the next first fact got the purged one's id, so a client or an audit event
holding it named another fact. Now the id is random, and the transaction that inserts it
reads the name's state again first (``FirstVersion.check``): of concurrent first writers
exactly one inserts. The id tests failed before on every store (13 of 13); the races (a
purge of the newest record first, so the writers' state is a rewound one) fail with the
check removed on every store (each writer inserts its own first record: four live): on
PostgreSQL sync and async, on SQLite and memory:// through the async API (their sync
variants passed without it too: the gate did not hold those writers together)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from memstrata import AsyncMemory, Memory, Scope
from memstrata.records import RecordType
from test_concurrent_services import ALICE as WRITER
from test_concurrent_services import (
    KINDS,
    WRITERS,
    Mem,
    Writer,
    _chunks,
    _current_facts,
    _no_errors,
    _text,
    _values_in_history,
    race,
)
from test_concurrent_services import _fact as fact_of

ANN = Scope("acme", "ann")


def _fact(value: str, confidence: float = 0.8) -> dict[str, Any]:
    return {"category": "location", "key": "city", "value": value, "confidence": confidence}


@pytest.mark.parametrize("older", ["purged", "deleted"])
def test_a_purged_first_facts_id_is_never_given_again(mem: Memory, older: str) -> None:
    """Each round a first fact, then (``deleted``: after a deleted first fact, so the key's
    newest is one that stays) its newest purged: the key's state as it was before."""
    given: list[str] = []
    for round_ in range(4):
        if older == "deleted":
            kept = mem.facts.upsert(ANN, _fact(f"town {round_}")).record
            mem.delete(ANN, kept.id)
            given.append(kept.id)
        record = mem.facts.upsert(ANN, _fact(f"city {round_}")).record
        given.append(record.id)
        mem.purge(ANN, [record.id])
    record = mem.facts.upsert(ANN, _fact("Rome")).record
    given.append(record.id)
    assert len(set(given)) == len(given) and all(i.startswith("fact-") for i in given)
    assert [r.id for r in mem.facts.all(ANN)] == [record.id]


def test_a_purged_documents_first_chunk_id_is_never_given_again(mem: Memory) -> None:
    given: list[str] = []
    for round_ in range(4):
        chunks = mem.knowledge.ingest(ANN, f"the ferries leave at {round_}", "ferries")
        assert chunks[0].id not in given and chunks[0].id.startswith("doc-")
        given.append(chunks[0].id)
        mem.purge(ANN, [c.id for c in chunks])
    chunks = mem.knowledge.ingest(ANN, "the ferries leave at ten", "ferries")
    assert chunks[0].id not in given
    assert [c.text for c in mem.knowledge.chunks(ANN, "ferries")] == ["the ferries leave at ten"]


def test_the_async_api_gives_no_purged_id_again(tmp_path: Path) -> None:
    async def main() -> None:
        async with AsyncMemory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing") as mem:
            a = (await mem.facts.upsert(ANN, _fact("Paris"))).record
            await mem.purge(ANN, [a.id])
            b = (await mem.facts.upsert(ANN, _fact("Oslo"))).record
            assert b.id != a.id
            doc = await mem.knowledge.ingest(ANN, "the ferries leave at nine", "ferries")
            await mem.purge(ANN, [c.id for c in doc])
            again = await mem.knowledge.ingest(ANN, "the ferries leave at ten", "ferries")
            assert again[0].id != doc[0].id

    asyncio.run(main())


async def _purged_newest(m: Mem) -> None:
    """Three versions of the key, each deleted, the newest purged: the state rewound."""
    made = []
    for i in range(3):
        record = (await m("facts.upsert", WRITER, fact_of(f"city {i}", 0.8))).record
        await m("delete", WRITER.user_scope, record.id)
        made.append(record.id)
    await m("purge", WRITER.user_scope, made[-1:])


def _first_upserts(kind: str, url: str, sharing: str) -> None:
    values = [("Lisbon", 0.7), ("Porto", 0.8), ("Madrid", 0.75), ("Berlin", 0.9)]
    writers: list[Writer] = [
        lambda m, v=v, c=c: m("facts.upsert", WRITER, fact_of(v, c)) for v, c in values
    ]

    async def check(m: Mem) -> None:
        current = await _current_facts(m)
        assert len(current) == 1, [r.text for r in current]
        assert current[0].content.structured["value"] == "Berlin"
        assert await _values_in_history(m) >= {v for v, _ in values}

    _no_errors(race(kind, url, sharing, RecordType.FACT, writers, _purged_newest, check))


def _first_ingests(kind: str, url: str, sharing: str) -> None:
    versions = list(range(1, WRITERS + 1))
    writers: list[Writer] = [
        lambda m, n=n: m("knowledge.ingest", WRITER, _text(n), "ferries") for n in versions
    ]

    async def setup(m: Mem) -> None:
        chunks = await m("knowledge.ingest", WRITER, _text(10), "ferries")
        await m("purge", WRITER.user_scope, [c.id for c in chunks])

    async def check(m: Mem) -> None:
        live = await _chunks(m, deleted=False)
        assert len(live) == 1 and live[0].text in {_text(n) for n in versions}
        stored = sorted(r.text for r in await _chunks(m, deleted=True))
        assert stored == sorted(map(_text, versions))

    _no_errors(race(kind, url, sharing, RecordType.KNOWLEDGE, writers, setup, check))


@pytest.mark.parametrize("kind", KINDS)
def test_first_upserts_after_a_purge_leave_one_fact(kind: str, url: str) -> None:
    _first_upserts(kind, url, "own")


@pytest.mark.parametrize("kind", KINDS)
def test_first_upserts_after_a_purge_leave_one_fact_in_memory(kind: str) -> None:
    _first_upserts(kind, "memory://", "shared")


@pytest.mark.parametrize("kind", KINDS)
def test_first_ingests_after_a_purge_leave_one_version(kind: str, url: str) -> None:
    _first_ingests(kind, url, "own")


@pytest.mark.parametrize("kind", KINDS)
def test_first_ingests_after_a_purge_leave_one_version_in_memory(kind: str) -> None:
    _first_ingests(kind, "memory://", "shared")
