"""A caller's ``list`` reads only what it may read (caller30): through the index of readers,
the role rows and the public rows on SQLite, ``record_readers``, ``records_shared_roles``
and ``records_public_observed`` on PostgreSQL, the owner's shared entries on memory://. Its
answers are those of the walk of the owner's rows it replaced: generated memories (notes private,
public, shared by name, with roles, with both, at tied times; access changed and records
deleted after), listed by callers with and without roles with generated filters (types,
metadata, tags, time ranges, importance), limits, offsets, both orders, ``list_pages``,
``list_after`` (the cursor) and ``count``: equal ids in equal order, on every store."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Memory, Scope
from memstrata.filters import Filters
from memstrata.store import memory as memory_store
from memstrata.store.postgres import store as pg_store
from memstrata.store.sqlite import store as lite_store

WHEN = [datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=h) for h in (0, 1, 1, 2, 5)]
ROLES = ["editor", "viewer", "admin"]
access = st.tuples(
    st.sampled_from(["private", "shared", "public", "public"]),
    st.lists(st.sampled_from(["carol", "erin", "dana"]), unique=True, max_size=2),
    st.lists(st.sampled_from(ROLES), unique=True, max_size=2),
)
note = st.tuples(
    st.sampled_from(["note", "knowledge"]),
    st.sampled_from(WHEN),
    st.sampled_from(["a", "b"]),
    st.lists(st.sampled_from(["x", "y"]), unique=True, max_size=2),
    st.sampled_from([0.2, 0.8]),
    access,
)
later = st.tuples(st.integers(0, 40), st.one_of(access, st.just("delete")))
callers = st.sampled_from(
    [
        ("carol", frozenset()),
        ("carol", frozenset({"editor"})),
        ("erin", frozenset({"viewer", "admin"})),
        ("zed", frozenset({"admin"})),
        ("zed", frozenset()),
    ]
)
some = st.builds(
    lambda types, meta, tags, after, before, imp: Filters.parse(
        {
            k: v
            for k, v in {
                "types": types,
                "metadata": {"k": meta} if meta else None,
                "tags": tags,
                "observed_after": after,
                "observed_before": before,
                "min_importance": imp,
            }.items()
            if v is not None
        }
    ),
    st.one_of(st.none(), st.none(), st.lists(st.sampled_from(["note", "knowledge"]), min_size=1)),
    st.one_of(st.none(), st.none(), st.sampled_from(["a", "b"])),
    st.one_of(st.none(), st.none(), st.lists(st.sampled_from(["x", "y"]), min_size=1)),
    st.one_of(st.none(), st.none(), st.sampled_from(WHEN)),
    st.one_of(st.none(), st.none(), st.sampled_from(WHEN[2:])),
    st.one_of(st.none(), st.none(), st.just(0.5)),
)
filters = st.one_of(st.just(Filters()), some)  # a filter narrows: most asks have none
page = st.tuples(st.integers(1, 4), st.integers(0, 3), st.booleans(), st.integers(1, 4))


def _write(mem: Memory, owner: Scope, notes: list[Any], changes: list[Any]) -> list[str]:
    order: list[str] = []
    for i, (kind, at, meta, tags, imp, how) in enumerate(notes):
        rid = mem.add(
            owner,
            f"note {i} words",
            type=kind,
            observed_at=at,
            metadata={"k": meta},
            tags=tags,
            importance=imp,
            dedup=False,
        ).id
        order.append(rid)
        _share(mem, owner, rid, how)
    deleted: set[str] = set()
    for at, how in changes:
        rid = order[at % len(order)]
        if rid in deleted:
            continue
        if how == "delete":
            mem.delete(owner, rid)
            deleted.add(rid)
        else:
            _share(mem, owner, rid, how)
    return order


def _share(mem: Memory, owner: Scope, rid: str, how: tuple[str, list[str], list[str]]) -> None:
    visibility, users, granted = how
    mem.set_access(owner, rid, visibility=visibility, allowed_users=users, allowed_roles=granted)


@contextmanager
def _old_path(store: Any) -> Iterator[None]:
    """The walk of the owner's rows this session replaced, put back in its place."""
    with pytest.MonkeyPatch.context() as patch:
        if isinstance(store, lite_store.SQLiteStore):
            patch.setattr(
                lite_store, "records_from", lambda scope, f, by="", walk=None: (f"records {by}", [])
            )
        elif isinstance(store, pg_store.PostgresStore):
            patch.setattr(pg_store, "records_from", lambda scope, f, walk=None: ("records", []))
        else:
            assert isinstance(store, memory_store.InMemoryStore)

            def scoped(self: Any, scope: Scope) -> list[Any]:
                return [e for e in self._entries.values() if e.record.visible_in(scope)]

            patch.setattr(memory_store.InMemoryStore, "_scoped", scoped)
        yield


def _reads(store: Any, scope: Scope, f: Filters, p: Any, cursor: str) -> list[Any]:
    limit, offset, newest, batch = p
    ids: Callable[[list[Any]], list[str]] = lambda rs: [r.id for r in rs]  # noqa: E731
    return [
        ids(store.list(scope, f, limit=limit, offset=offset, newest_first=newest)),
        ids(store.list(scope, f, limit=100, newest_first=not newest)),
        store.count(scope, f),
        [ids(part) for part in store.list_pages(scope, f, batch_size=batch)],
        ids(store.list_after(scope, f, cursor, limit=limit, newest_first=newest)),
    ]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(
    st.lists(note, min_size=4, max_size=14),
    st.lists(later, max_size=6),
    st.lists(st.tuples(callers, filters, page, st.integers(0, 40)), min_size=1, max_size=4),
)
def test_a_callers_list_is_the_walks(
    mem: Memory, notes: list[Any], changes: list[Any], asks: list[Any]
) -> None:
    owner = Scope("acme", f"bob-{uuid.uuid4().hex[:8]}")
    order = _write(mem, owner, notes, changes)
    store = getattr(mem.store, "viewed", mem.store)
    for (name, roles), f, p, at in asks:
        scope = owner.as_caller(name, set(roles))
        cursor = order[at % len(order)]
        new = _reads(store, scope, f, p, cursor)
        with _old_path(store):
            old = _reads(store, scope, f, p, cursor)
        assert new == old, (name, roles, f, p)
