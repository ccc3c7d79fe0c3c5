"""Concurrent first writers of a key (a document) that has a history: deleted and purged
versions. Every writer is held at its first read until all have read (the race of
``tests/test_concurrent_services.py``), so all of them make a first version from the same
stored state: exactly one is stored first, the others read it and apply the rules to it,
none raises, no value is lost."""

from __future__ import annotations

import pytest

from memstrata.records import RecordType
from test_concurrent_services import (
    ALICE,
    KINDS,
    WRITERS,
    Mem,
    Writer,
    _chunks,
    _current_facts,
    _fact,
    _no_errors,
    _text,
    _values_in_history,
    race,
)


async def _history(m: Mem) -> None:
    """Twelve versions of the key, each deleted; the newest and a middle one purged."""
    made = []
    for i in range(12):
        record = (await m("facts.upsert", ALICE, _fact(f"city {i}", 0.8))).record
        await m("delete", ALICE.user_scope, record.id)
        made.append(record.id)
    await m("purge", ALICE.user_scope, [made[-1], made[5]])


@pytest.mark.parametrize("kind", KINDS)
def test_first_writers_of_a_key_with_history_store_one_fact_and_every_value(
    kind: str, url: str
) -> None:
    values = [("Lisbon", 0.7), ("Porto", 0.8), ("Madrid", 0.75), ("Berlin", 0.9)]
    writers: list[Writer] = [
        lambda m, v=v, c=c: m("facts.upsert", ALICE, _fact(v, c)) for v, c in values
    ]

    async def check(m: Mem) -> None:
        current = await _current_facts(m)
        assert len(current) == 1, [r.text for r in current]
        assert current[0].content.structured["value"] == "Berlin"
        assert await _values_in_history(m) >= {v for v, _ in values}

    _no_errors(race(kind, url, "own", RecordType.FACT, writers, _history, check))


@pytest.mark.parametrize("kind", KINDS)
def test_the_same_first_fact_from_every_writer_is_one_fact_after_history(
    kind: str, url: str
) -> None:
    writers: list[Writer] = [
        lambda m: m("facts.upsert", ALICE, _fact("Faro", 0.8)) for _ in range(WRITERS)
    ]

    async def check(m: Mem) -> None:
        current = await _current_facts(m)
        assert [r.content.structured["value"] for r in current] == ["Faro"]
        assert current[0].content.structured["mentions"] == WRITERS

    _no_errors(race(kind, url, "shared", RecordType.FACT, writers, _history, check))


@pytest.mark.parametrize("kind", KINDS)
def test_first_ingests_of_a_document_with_purged_versions_leave_one_live(
    kind: str, url: str
) -> None:
    versions = list(range(1, WRITERS + 1))
    writers: list[Writer] = [
        lambda m, n=n: m("knowledge.ingest", ALICE, _text(n), "ferries") for n in versions
    ]

    async def setup(m: Mem) -> None:
        made = []
        for n in (10, 11, 12, 13):
            for chunk in await m("knowledge.ingest", ALICE, _text(n), "ferries"):
                await m("delete", ALICE.user_scope, chunk.id)
                made.append(chunk.id)
        await m("purge", ALICE.user_scope, [made[-1], made[0]])

    async def check(m: Mem) -> None:
        live = await _chunks(m, deleted=False)
        assert len(live) == 1 and live[0].text in {_text(n) for n in versions}
        stored = sorted(r.text for r in await _chunks(m, deleted=True))
        assert stored == sorted([_text(11), _text(12), *map(_text, versions)])

    _no_errors(race(kind, url, "own", RecordType.KNOWLEDGE, writers, setup, check))
