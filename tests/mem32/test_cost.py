"""What memory:// looks at for a user's purge and a caller's page (store/memory.py; mem32):
the same beside 100 and 1,000 rows of others. Before mem32 ``purge_user`` walked every
user's cache entries, citations, links, metadata rows and key rows, the index of readers
kept the ids of records purged since, and a caller's ``list`` / ``list_after`` sorted every
record the caller may read; each test here fails there."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from memstrata.filters import Filters
from memstrata.quota_types import day_take, lease_key, subject_hash
from memstrata.records import AccessControl, Content, MemoryRecord, RecordType, Visibility
from memstrata.scope import Scope
from memstrata.store import RecordWrite
from memstrata.store.key_rows import KeyRow
from memstrata.store.memory import InMemoryStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CAROL = AccessControl(Visibility.SHARED, allowed_users=("carol",))


def _write(i: int, user: str, **kw: Any) -> RecordWrite:
    when = T0 + timedelta(seconds=i)
    r = MemoryRecord(
        id=f"{user}-{i}",
        tenant="t",
        user=user,
        type=kw.pop("type", RecordType.NOTE),
        content=Content(f"note {i} of {user}"),
        created_at=when,
        updated_at=when,
        observed_at=when,
        content_hash=f"h-{user}-{i}",
        **kw,
    )
    return RecordWrite(r, None, ("note",))


def _fill(store: InMemoryStore, user: str, n: int) -> None:
    """``n`` of each row a purge deletes: records citing and superseded by one another,
    cache entries, day counters, leases, quota overrides, key rows."""
    first = _write(0, user)
    store.insert([first])
    store.insert(
        [
            _write(
                i,
                user,
                type=RecordType.FACT,
                source_ids=(first.record.id,),
                superseded_by=f"{user}-{i + 1}",
            )
            for i in range(1, n)
        ]
    )
    scope = Scope("t", user)
    store.cache_vectors(scope, "m", {f"k{i}": np.ones(3, np.float32) for i in range(n)})
    days = [day_take("records", "t", user, T0 + timedelta(days=i), 1, None) for i in range(n)]
    store.take_counters(days)
    store.lease(lease_key(scope, tenant_wide=False), "tok", 0, 10)
    keys = [
        KeyRow(f"{user}{i}", f"h{user}{i}", "t", "user", "n", "x", None, user, "") for i in range(n)
    ]
    store.load_keys(keys)


def _counting(obj: Any, seen: list[int]) -> Any:
    """``obj`` as one of a subclass of its type counting the rows its walks yield."""
    base = type(obj)

    class Counted(base):  # type: ignore[valid-type, misc]
        def __iter__(self) -> Any:
            for key in base.__iter__(self):
                seen[0] += 1
                yield key

        def keys(self) -> Any:
            return list(iter(self))

        def values(self) -> Any:
            return [self[k] for k in self]

        def items(self) -> Any:
            return [(k, self[k]) for k in self]

    counted = Counted.__new__(Counted)
    if isinstance(obj, dict):
        dict.update(counted, obj)
    else:
        counted.__dict__.update(obj.__dict__)
    return counted


def _purge_walked(others: int) -> int:
    """Rows of the cache, citations, links, metadata and key rows a purge of ``me`` (10 of
    each) looks at beside 9 users of ``others`` each."""
    store = InMemoryStore()
    for u in range(9):
        _fill(store, f"other{u}", others)
    _fill(store, "me", 10)
    seen = [0]
    for name in ("_cache", "_cites", "_links", "_meta", "_key_rows"):
        setattr(store, name, _counting(getattr(store, name), seen))
    report = store.purge_user("t", "me")
    walked = seen[0]
    assert (report.records, report.cache_entries, report.remaining) == (10, 10, 0)
    assert [k for k in store._key_rows if k.startswith("me")] == []
    assert [k for k in store._meta if subject_hash("t", "me") in k] == []
    return walked


def test_a_users_purge_walks_the_same_beside_100_and_1000_rows_of_others() -> None:
    assert _purge_walked(100) == _purge_walked(1000)


@pytest.mark.parametrize("how", ["purge", "purge_user", "taken_back"])
def test_the_readers_index_holds_no_record_gone(how: str) -> None:
    """Records naming carol as a reader, then gone: carol's entry of the index of readers
    goes with them (before: it kept each id until carol's own purge)."""
    store = InMemoryStore()
    writes = [_write(i, "dan", access=CAROL) for i in range(50)]
    if how == "taken_back":
        with pytest.raises(RuntimeError), store.transaction() as tx:
            tx.insert(writes)
            raise RuntimeError("taken back")
    else:
        store.insert(writes)
        if how == "purge":
            store.purge(Scope("t", "dan"), [w.record.id for w in writes])
        else:
            store.purge_user("t", "dan")
    store.insert([_write(99, "bob", access=CAROL)])
    assert {k: list(v) for k, v in store._readers.items()} == {("t", "carol"): [("bob", "bob-99")]}


def _page_checked(shared: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """Records a caller's pages of 10 (newest, oldest, after a cursor, from a time) look at
    (``visible_in``) once the caller has listed once, beside ``shared`` records shared with
    them and as many of another user."""
    store = InMemoryStore()
    for user in ("bob", "other"):
        store.insert([_write(i, user, access=CAROL) for i in range(shared)])
    carol = Scope("t", "bob").as_caller("carol")
    store.list(carol, Filters(), limit=1)  # what the caller may read, gathered once
    store.insert([_write(shared, "bob", access=CAROL)])  # kept up to date by the write
    seen = [0]
    visible_in = MemoryRecord.visible_in

    def counted(self: MemoryRecord, scope: Scope) -> bool:
        seen[0] += 1
        return visible_in(self, scope)

    since = Filters(observed_after=T0 + timedelta(seconds=shared // 2))
    with monkeypatch.context() as m:
        m.setattr(MemoryRecord, "visible_in", counted)
        newest = store.list(carol, Filters(), limit=10)
        oldest = store.list(carol, Filters(), limit=10, offset=5, newest_first=False)
        after = store.list_after(carol, Filters(), f"bob-{shared // 2}", limit=10)
        later = store.list(carol, since, limit=10, newest_first=False)
    assert [r.id for r in newest] == [f"bob-{shared - i}" for i in range(10)]
    assert [r.id for r in oldest] == [f"bob-{5 + i}" for i in range(10)]
    assert [r.id for r in after] == [f"bob-{shared // 2 + 1 + i}" for i in range(10)]
    assert [r.id for r in later] == [f"bob-{shared // 2 + i}" for i in range(10)]
    return seen[0]


def test_a_callers_page_looks_at_the_same_beside_100_and_1000_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _page_checked(100, monkeypatch) == _page_checked(1000, monkeypatch)
