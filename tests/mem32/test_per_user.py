"""memory://'s per-user parts kept on write (store/memory.py, store/memory_filed.py,
store/memory_shared.py; mem32) against the walks of every user's data they replace.

A hypothesis state machine drives random writes of several users of two tenants: notes,
facts and summaries citing one another (``source_ids``, ``superseded_by``), shared with
readers, by role or publicly, at times that tie and come out of order; updates of access,
time, session and sources; deletes and restores; purges by ids; users' purges (owners and
readers); embedding-cache entries; quota counters of users and tenants, leases and
overrides; other metadata rows; API key rows loaded; a dump loaded; a transaction taken
back. It checks:

- each ``purge_user`` and ``purge`` against what the code before mem32 deleted, by its walk
  of every user's cache entries, citations, links, quota rows and key rows (the old
  comprehensions, kept below, run on a copy of every row taken before the call): the same
  rows go, every other stays, the same report;
- a caller's ``list`` pages (offsets, limits, both orders, time bounds), ``list_after``
  cursors and ``list_pages`` against the old sort of every entry the caller may read
  (:class:`Sorted`);
- the bookkeeping: each user's parts equal ones rebuilt from the rows, each caller's kept
  order equal to a sort, and the index of readers holding no purged record (before mem32 it
  kept them: fails there) and every reader a version names.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from memstrata.filters import Filters
from memstrata.quota_types import day_take, lease_key, subject_hash
from memstrata.records import (
    AccessControl,
    Content,
    MemoryRecord,
    RecordStatus,
    RecordType,
    Visibility,
)
from memstrata.scope import Scope
from memstrata.store import RecordWrite
from memstrata.store.key_rows import KeyRow
from memstrata.store.memory import InMemoryStore
from memstrata.store.memory_filed import Filed
from memstrata.store.types import RecordDump

from .oracle import Sorted, flat, old_purge_user_effect

OWNERS = [("acme", "bob"), ("acme", "dan"), ("other", "bob")]
USERS = [*OWNERS, ("acme", "carol"), ("acme", "erin")]
T0 = datetime(2024, 1, 1, tzinfo=UTC)
ACCESS = [
    AccessControl(),
    AccessControl(Visibility.PUBLIC),
    AccessControl(Visibility.SHARED, allowed_users=("carol",)),
    AccessControl(Visibility.SHARED, allowed_users=("carol", "dan")),
    AccessControl(Visibility.SHARED, allowed_roles=("editor",)),
]
TYPES = [RecordType.NOTE, RecordType.MESSAGE, RecordType.FACT, RecordType.SUMMARY]
FILTERS = [
    Filters(),
    Filters(include_deleted=True, include_superseded=True),
    Filters.parse({"types": ["message"]}),
    Filters.parse({"observed_after": "2024-01-01T00:05:00+00:00"}),
    Filters.parse(
        {"observed_after": "2024-01-01T00:03:00+00:00", "observed_before": "2024-01-01T00:11:00Z"}
    ),
]
MODELS = ["m1", "m2"]

owners = st.sampled_from(OWNERS)
users = st.sampled_from(USERS)
accesses = st.sampled_from(ACCESS)
minutes = st.integers(0, 14)  # ties of observed_at are common


def _caller_scopes(tenant: str, user: str) -> list[Scope]:
    owner = Scope(tenant, user)
    return [
        owner.as_caller("carol"),
        owner.as_caller("erin", {"editor"}),
        owner.as_caller("zed"),
        owner.as_caller("carol").with_session("s1"),
        owner.as_caller("dan", {"editor"}).with_session("s2"),
    ]


def _caller_reads(store: InMemoryStore, scope: Scope) -> list[Any]:
    out: list[Any] = []
    for f in FILTERS:
        whole = store.list(scope, f, limit=1000)
        out.append([r.id for r in whole])
        for newest in (True, False):
            for limit, offset in ((1, 0), (3, 2), (2, 7), (100, 0), (5, -1)):
                page = store.list(scope, f, limit=limit, offset=offset, newest_first=newest)
                out.append([r.id for r in page])
            for r in whole[:: max(1, len(whole) // 3)]:
                after = store.list_after(scope, f, r.id, limit=3, newest_first=newest)
                out.append([a.id for a in after])
            out.append(store.list_after(scope, f, "never", limit=3, newest_first=newest))
        out.append([[r.id for r in p] for p in store.list_pages(scope, f, batch_size=4)])
    return out


class PerUser(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store = InMemoryStore()
        self.n = 0
        self.ids: list[tuple[str, str, str]] = []
        self.keys = 0

    def teardown(self) -> None:
        self.store.close()

    def _current(self, key: tuple[str, str, str]) -> MemoryRecord | None:
        e = self.store._entries.get(key)
        return None if e is None else e.record

    def _pick(self, data: st.DataObject) -> tuple[str, str, str]:
        return data.draw(st.sampled_from(self.ids or [("acme", "bob", "never")]))

    def _cites(self, data: st.DataObject, owner: tuple[str, str]) -> tuple[str, ...]:
        mine = [rid for t, u, rid in self.ids if (t, u) == owner]
        if not mine:
            return ()
        return tuple(data.draw(st.lists(st.sampled_from(mine), max_size=2, unique=True)))

    def _record(
        self,
        owner: tuple[str, str],
        kind: RecordType,
        minute: int,
        access: AccessControl,
        sources: tuple[str, ...],
    ) -> MemoryRecord:
        self.n += 1
        when = T0 + timedelta(minutes=minute)
        text = f"text {self.n % 4}"  # texts, and so hashes, shared by several records
        return MemoryRecord(
            id=f"r{self.n:03d}",
            tenant=owner[0],
            user=owner[1],
            type=kind,
            content=Content(text),
            session="s1" if self.n % 2 else "s2",
            created_at=when,
            updated_at=when,
            observed_at=when,
            content_hash=hashlib.sha256(text.encode()).hexdigest(),
            access=access,
            source_ids=sources,
        )

    # --- writes --------------------------------------------------------------------------
    @rule(
        data=st.data(),
        owner=owners,
        batch=st.lists(
            st.tuples(st.sampled_from(TYPES), minutes, accesses), min_size=1, max_size=3
        ),
    )
    def insert(self, data: st.DataObject, owner: tuple[str, str], batch: list[Any]) -> None:
        writes = [
            RecordWrite(self._record(owner, kind, m, ac, self._cites(data, owner)), None, ("w",))
            for kind, m, ac in batch
        ]
        self.store.insert(writes)
        self.ids += [(w.record.tenant, w.record.user, w.record.id) for w in writes]

    @rule(
        data=st.data(),
        ac=accesses,
        minute=st.one_of(st.none(), minutes),
        session=st.sampled_from(["same", None, "s1", "s2"]),
        supersede=st.booleans(),
    )
    def update(
        self, data: st.DataObject, ac: AccessControl, minute: int | None, session: str | None,
        supersede: bool,
    ) -> None:  # fmt: skip
        r = self._current(self._pick(data))
        if r is None:
            return
        owner = (r.tenant, r.user)
        by = self._cites(data, owner) if supersede else ()
        new = replace(
            r,
            access=ac,
            version=r.version + 1,
            observed_at=r.observed_at if minute is None else T0 + timedelta(minutes=minute),
            session=r.session if session == "same" else session,
            source_ids=self._cites(data, owner),
            superseded_by=by[0] if by and r.type is RecordType.FACT else None,
        )
        self.store.replace(
            Scope(*owner), RecordWrite(new, None, ("w",)), expected_version=r.version
        )

    @rule(data=st.data(), deleted=st.booleans())
    def status(self, data: st.DataObject, deleted: bool) -> None:
        tenant, user, rid = self._pick(data)
        status = RecordStatus.DELETED if deleted else RecordStatus.ACTIVE
        self.store.set_status(Scope(tenant, user), [rid], status, T0 + timedelta(days=1))

    @rule(data=st.data())
    def purge(self, data: st.DataObject) -> None:
        tenant, user, rid = self._pick(data)
        before = flat(self.store)
        scope = Scope(tenant, user)
        gone = self.store._entries.get((tenant, user, rid))
        # the texts of the purged record that no other record of the user keeps (the
        # store's rule, unchanged): the old walk of every user's cache entries finds them
        hashes = set()
        if gone is not None:
            hashes = {v.content_hash for v in (*gone.history, gone.record)}
        report = self.store.purge(scope, [rid])
        hashes -= {e.record.content_hash for e in self.store._own(tenant, user)}
        stale = [k for k in before["cache"] if k[:2] == (tenant, user) and k[3] in hashes]
        assert report.cache_entries == len(stale)
        assert flat(self.store)["cache"] == before["cache"] - set(stale)
        self.ids = [i for i in self.ids if i != (tenant, user, rid)]

    @rule(who=users)
    def purge_user(self, who: tuple[str, str]) -> None:
        before = flat(self.store)
        report = self.store.purge_user(*who)
        expected, cache_entries = old_purge_user_effect(before, *who)
        after = flat(self.store)
        for part in ("cache", "cites", "links", "meta", "keys"):
            assert after[part] == expected[part], part
        assert (report.cache_entries, report.remaining) == (cache_entries, 0)
        self.ids = [i for i in self.ids if i[:2] != who]

    @rule(who=users, model=st.sampled_from(MODELS), texts=st.lists(st.integers(0, 5), max_size=3))
    def cache(self, who: tuple[str, str], model: str, texts: list[int]) -> None:
        keys = [hashlib.sha256(f"text {i}".encode()).hexdigest() for i in texts]
        vectors = {k: np.ones(3, np.float32) * i for i, k in enumerate(keys)}
        self.store.cache_vectors(Scope(*who), model, vectors)
        got = self.store.cached_vectors(Scope(*who), model, [*keys, "q:none"])
        assert sorted(got) == sorted(set(keys))

    @rule(who=users, kind=st.sampled_from(["records", "embeddings"]), day=st.integers(0, 9))
    def counters(self, who: tuple[str, str], kind: str, day: int) -> None:
        now = T0 + timedelta(days=day)
        takes = [day_take(kind, *who, now, 1, None), day_take(kind, who[0], None, now, 1, None)]
        assert self.store.take_counters(takes) is None
        self.store.sweep_counters(int((now - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds()))

    @rule(who=users, tenant_wide=st.booleans(), free=st.booleans())
    def lease(self, who: tuple[str, str], tenant_wide: bool, free: bool) -> None:
        key = lease_key(Scope(*who), tenant_wide=tenant_wide)
        self.store.lease(key, "tok", 0, 10)
        if free:
            self.store.release(key, "tok")

    @rule(who=users, value=st.sampled_from(["", "x", "{}"]))
    def meta(self, who: tuple[str, str], value: str) -> None:
        self.store.set_meta(f"quota:user:{subject_hash(*who)}:override", value)
        self.store.set_meta(f"note:{subject_hash(*who)}:kept", value)  # not a quota row

    @rule(who=users, count=st.integers(1, 2))
    def keys(self, who: tuple[str, str], count: int) -> None:
        rows = []
        for _ in range(count):
            self.keys += 1
            rows.append(
                KeyRow(
                    f"k{self.keys}", f"h{self.keys}", who[0], "user", "n", "2024", None, who[1], ""
                )
            )
        assert self.store.load_keys(rows) == count

    @rule(data=st.data(), owner=owners, ac=accesses, minute=minutes)
    def load(
        self, data: st.DataObject, owner: tuple[str, str], ac: AccessControl, minute: int
    ) -> None:
        r = self._record(owner, RecordType.NOTE, minute, ac, self._cites(data, owner))
        past = replace(r, version=1, access=ACCESS[3])  # an earlier version naming readers
        self.store.load_records([RecordDump((past, replace(r, version=2)), None, ("w",))])
        self.ids.append((r.tenant, r.user, r.id))

    @rule(data=st.data(), owner=owners, ac=accesses, minute=minutes)
    def taken_back(
        self, data: st.DataObject, owner: tuple[str, str], ac: AccessControl, minute: int
    ) -> None:
        r = self._current(self._pick(data))
        fresh = self._record(owner, RecordType.SUMMARY, minute, ac, self._cites(data, owner))
        with pytest.raises(RuntimeError), self.store.transaction() as tx:
            tx.insert([RecordWrite(fresh, None, ("w",))])
            if r is not None:
                new = replace(r, access=ac, version=r.version + 1)
                scope = Scope(r.tenant, r.user)
                tx.replace(scope, RecordWrite(new, None, ("w",)), expected_version=r.version)
            raise RuntimeError("taken back")

    # --- checks --------------------------------------------------------------------------
    @invariant()
    def parts_are_the_rows(self) -> None:
        s = self.store
        for filed in (s._meta, s._key_rows):
            assert isinstance(filed, Filed)
            rebuilt: dict[Any, list[Any]] = {}
            for k, v in filed._items.items():
                for owner in filed._owners(k, v):
                    rebuilt.setdefault(owner, []).append(k)
            assert {o: sorted(ks) for o, ks in filed._filed.items()} == {
                o: sorted(ks) for o, ks in rebuilt.items()
            }
        for index in (s._cites, s._links):
            assert all(index.values()) and all(all(v.values()) for v in index.values())
        assert all(all(models.values()) and models for models in s._cache.values())

    @invariant()
    def readers_hold_no_purged_record(self) -> None:
        s = self.store
        for (tenant, _), named in s._readers.items():
            for owner, rid in named:
                assert (tenant, owner, rid) in s._entries, (owner, rid)
        for e in s._entries.values():
            for v in (*e.history, e.record):
                for reader in v.access.allowed_users:
                    assert (v.user, v.id) in s._readers[v.tenant, reader]
        inverse: dict[tuple[str, str, str], set[str]] = {}
        for (tenant, reader), named in s._readers.items():
            for owner, rid in named:
                inverse.setdefault((tenant, owner, rid), set()).add(reader)
        assert s._named == inverse

    @invariant()
    def caller_reads_are_the_sorts(self) -> None:
        old = Sorted.over(self.store)
        for owner in OWNERS:
            for scope in _caller_scopes(*owner):
                assert _caller_reads(self.store, scope) == _caller_reads(old, scope), scope
        for shared in self.store._shared_of.values():
            for order in shared.orders.values():
                assert order.places == sorted(order.places)
                want = sorted(
                    (e.record.observed_at, e.seq, e.record.id)
                    for e in shared.entries.values()
                    if e.record.visible_in(order.readable)
                )
                assert order.places == want
                assert order.placed == {p[2]: p for p in want}


def test_per_user_parts_are_the_walks_of_every_user() -> None:
    run_state_machine_as_test(
        PerUser,
        settings=settings(
            max_examples=60,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
