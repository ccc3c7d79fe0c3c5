"""``list_many``: several ``list`` calls in one read (issue 13 §3: ``build_context`` read key
memory, the task, the history window and the summaries in four), on every store: each
result is what ``list`` returns for that query."""

from __future__ import annotations

from memstrata.filters import Filters, MetadataCondition
from memstrata.records import RecordType, Role
from memstrata.scope import Scope
from memstrata.store import Store
from memstrata.store.types import ListQuery

from .conftest import Maker

ME = Scope("t1", "u1")


def test_list_many_is_each_lists_result(store: Store, maker: Maker) -> None:
    writes = [maker.write(type=RecordType.MESSAGE, role=Role.USER, session="s1") for _ in range(7)]
    writes += [maker.write(type=RecordType.MESSAGE, session="s2") for _ in range(3)]
    writes += [maker.write(type=RecordType.KEY) for _ in range(2)]
    writes += [maker.write(type=RecordType.SUMMARY) for _ in range(4)]
    writes += [
        maker.write(type=RecordType.TASK, session="s1", metadata={"task_status": s})
        for s in ("done", "active", "active")
    ]
    store.insert(writes)
    s1 = ME.with_session("s1")
    messages = Filters(types=frozenset({RecordType.MESSAGE}))
    active = Filters(
        types=frozenset({RecordType.TASK}),
        metadata=(MetadataCondition("task_status", "eq", "active"),),
    )
    queries = [
        ListQuery(ME, Filters(types=frozenset({RecordType.KEY})), 1000),
        ListQuery(s1, active, 10),  # a metadata filter (applied in Python on SQL stores)
        ListQuery(s1, active, 1, offset=1),
        ListQuery(s1, messages, 4),
        ListQuery(s1, messages, 4, offset=4),
        ListQuery(ME, messages, 5, newest_first=False),
        ListQuery(ME, Filters(types=frozenset({RecordType.SUMMARY})), 0),
        ListQuery(ME, Filters(types=frozenset({RecordType.SUMMARY})), 3),
        ListQuery(Scope("t1", "u2"), messages, 10),  # another user's: nothing
    ]
    got = store.list_many(queries)
    expected = [
        store.list(q.scope, q.filters, limit=q.limit, offset=q.offset, newest_first=q.newest_first)
        for q in queries
    ]
    assert got == expected
    assert [len(g) for g in got] == [2, 2, 1, 4, 3, 5, 0, 3, 0]
    assert store.list_many([]) == []
    assert store.list_many([ListQuery(ME, messages, 0)]) == [[]]
