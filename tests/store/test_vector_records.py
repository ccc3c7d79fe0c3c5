"""``vector_records``: a vector search's records in one read (issue 13 §3: the context's
facts and clusters were a ``vector_search`` and a ``get_many`` each), on every store: the
records ``get_many`` finds for ``vector_search``'s candidates, in its order, with its
scores; with ``keep``/``want``, only accepted records, decoded until ``want`` are kept."""

from __future__ import annotations

from memstrata.filters import Filters
from memstrata.records import MemoryRecord, RecordStatus, RecordType
from memstrata.scope import Scope
from memstrata.store import Store

from .conftest import T0, Maker, unit

ME = Scope("t1", "u1")


def test_vector_records_are_the_searchs_records(store: Store, maker: Maker) -> None:
    writes = [maker.write(type=RecordType.FACT, confidence=0.5 + i / 40) for i in range(12)]
    writes += [maker.write(type=RecordType.NOTE) for _ in range(4)]
    store.insert(writes)
    query = unit(maker.rng)
    facts = Filters(types=frozenset({RecordType.FACT}))

    for k in (1, 5, 12, 30):
        found = store.vector_search(ME, query, k, facts)
        records = store.get_many(ME, [c.id for c in found])
        got = store.vector_records(ME, query, k, facts)
        assert [(r, s) for r, s in got] == [
            (r, c.score) for r, c in zip(records, found, strict=True)
        ]
        assert all(r.type is RecordType.FACT for r, _ in got)

    decoded: list[str] = []

    def keep(r: MemoryRecord) -> bool:
        decoded.append(r.id)
        return r.confidence >= 0.7

    found = store.vector_search(ME, query, 12, facts)
    expected = [r for r in store.get_many(ME, [c.id for c in found]) if r.confidence >= 0.7]
    got = store.vector_records(ME, query, 12, facts, keep=keep, want=3)
    assert [r for r, _ in got] == expected[:3]
    last = [c.id for c in found].index(expected[2].id)
    assert decoded == [c.id for c in found][: last + 1]  # none decoded after the third kept
    assert store.vector_records(ME, query, 12, facts, keep=keep, want=0) == []
    assert [r for r, _ in store.vector_records(ME, query, 12, facts, keep=keep)] == expected

    # the deleted and the foreign: as the search and get_many have them
    store.set_status(ME, [found[0].id], RecordStatus.DELETED, T0)
    again = store.vector_search(ME, query, 12, facts)
    assert [r.id for r, _ in store.vector_records(ME, query, 12, facts)] == [c.id for c in again]
    assert store.vector_records(Scope("t1", "u2"), query, 12, facts) == []
    assert store.vector_records(ME, query, 0, facts) == []
