"""memory://'s shared entries and callers' BM25 statistics, kept up to date by each write
(store/memory_shared.py), give a caller what a fresh rebuild gives, after every step.

A hypothesis state machine drives random writes of an owner (inserts, updates of text and
of access, deletes and restores, re-terms, purges by ids, a purge of a reader, new vectors,
a dump loaded, a transaction taken back, a write that does not name what it touched) and
after each one compares every caller's reads (ids, order, pages, cursors, count, lexical
hits and their scores) with the same reads of a copy of the store whose caller state is
gathered from scratch, and the caller's lexical scores with those of a ``bm25s`` index
built of what the caller may read (the store's index until session 31), bit for bit."""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from memory_walks import T0, bm25_hits, drawn, listing_reads
from memstrata.filters import Filters
from memstrata.records import AccessControl, MemoryRecord, RecordStatus, Visibility
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize
from memstrata.store import RecordWrite
from memstrata.store.memory import InMemoryStore
from memstrata.store.memory_shared import own_tokens
from memstrata.store.types import RecordDump

BOB = Scope("acme", "bob")
CALLERS = [
    BOB.as_caller("carol"),
    BOB.as_caller("erin", {"editor"}),
    BOB.as_caller("zed"),
    BOB.as_caller("carol", {"editor"}),
    BOB.with_session("s1").as_caller("carol"),
]
WORDS = "harbour river stone lantern orchard copper violet".split()
QUERIES = [["harbour"], ["river", "stone"], ["lantern", "harbour", "copper"], ["violet"]]
ACCESS = [
    AccessControl(),
    AccessControl(Visibility.PUBLIC),
    AccessControl(Visibility.SHARED, allowed_users=("carol",)),
    AccessControl(Visibility.SHARED, allowed_roles=("editor",)),
    AccessControl(Visibility.SHARED, allowed_users=("erin", "carol")),
]
texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=6).map(" ".join)
accesses = st.sampled_from(ACCESS)


def _terms(r: MemoryRecord, extra: str = "") -> tuple[str, ...]:
    # a message is indexed under the words of a question too (reply_terms): ``extra``
    return tuple(tokenize(f"{r.text} {extra}"))


class Shared(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store = InMemoryStore()
        self.n = 0
        self.ids: list[str] = []

    def teardown(self) -> None:
        self.store.close()

    def _record(self, text: str, access: AccessControl, message: bool) -> MemoryRecord:
        self.n += 1
        return drawn(self.n, ("acme", "bob"), text, access, message)

    def _pick(self, data: st.DataObject) -> str:
        return data.draw(st.sampled_from(self.ids or ["never"]))

    def _current(self, rid: str) -> MemoryRecord | None:
        e = self.store._entries.get(("acme", "bob", rid))
        return None if e is None else e.record

    @rule(batch=st.lists(st.tuples(texts, accesses, st.booleans(), texts), min_size=1, max_size=3))
    def insert(self, batch: list[tuple[str, AccessControl, bool, str]]) -> None:
        writes = []
        for text, ac, message, question in batch:
            r = self._record(text, ac, message)
            writes.append(RecordWrite(r, None, _terms(r, question if message else "")))
        self.store.insert(writes)
        self.ids += [w.record.id for w in writes]

    @rule(data=st.data(), text=texts, ac=accesses, same_text=st.booleans())
    def update(self, data: st.DataObject, text: str, ac: AccessControl, same_text: bool) -> None:
        r = self._current(self._pick(data))
        if r is None:
            return
        new = replace(
            r,
            content=r.content if same_text else replace(r.content, raw=text),
            access=ac,
            version=r.version + 1,
        )
        self.store.replace(BOB, RecordWrite(new, None, _terms(new)), expected_version=r.version)

    @rule(data=st.data(), deleted=st.booleans())
    def status(self, data: st.DataObject, deleted: bool) -> None:
        status = RecordStatus.DELETED if deleted else RecordStatus.ACTIVE
        self.store.set_status(BOB, [self._pick(data)], status, T0 + timedelta(days=1))

    @rule(data=st.data(), text=texts)
    def reterm(self, data: st.DataObject, text: str) -> None:
        self.store.reterm(BOB, {self._pick(data): tuple(tokenize(text))})

    @rule(data=st.data(), text=texts)
    def purge(self, data: st.DataObject, text: str) -> None:
        gone, kept = self._pick(data), self._pick(data)
        self.store.purge(BOB, [gone], reterm={kept: tuple(tokenize(text))})

    @rule()
    def purge_reader(self) -> None:
        self.store.purge_user("acme", "carol")  # carol out of every record naming her

    @rule(data=st.data())
    def vectors(self, data: st.DataObject) -> None:
        r = self._current(self._pick(data))
        if r is not None:
            self.store.set_vectors([(r, np.ones(4, np.float32))], "m", 4)

    @rule(text=texts, ac=accesses)
    def load(self, text: str, ac: AccessControl) -> None:
        r = self._record(text, ac, False)
        self.store.load_records([RecordDump((r,), None, _terms(r))])
        self.ids.append(r.id)

    @rule(data=st.data(), text=texts, ac=accesses)
    def taken_back(self, data: st.DataObject, text: str, ac: AccessControl) -> None:
        r = self._current(self._pick(data))
        fresh = self._record(text, ac, False)
        with pytest.raises(RuntimeError), self.store.transaction() as tx:
            tx.insert([RecordWrite(fresh, None, _terms(fresh))])
            if r is not None:
                new = replace(r, access=ac, version=r.version + 1)
                tx.replace(BOB, RecordWrite(new, None, _terms(new)), expected_version=r.version)
                tx.set_status(BOB, [r.id], RecordStatus.DELETED, T0)
            raise RuntimeError("taken back")

    @rule(data=st.data(), ac=accesses)
    def unsaid(self, data: st.DataObject, ac: AccessControl) -> None:
        """A write that does not say which records it touched (a path added later that
        calls ``_changed(tenant, user)``): what callers read is gathered again."""
        e = self.store._entries.get(("acme", "bob", self._pick(data)))
        if e is not None:
            with self.store._lock:
                e.record = replace(e.record, access=ac, version=e.record.version + 1)
                self.store._changed("acme", "bob")

    @invariant()
    def callers_read_what_a_rebuild_reads(self) -> None:
        fresh = copy.copy(self.store)
        fresh._shared_of = {}  # gathered again from every record, at the first read
        for scope in CALLERS:
            assert _reads(self.store, scope) == _reads(fresh, scope), scope
            for q in QUERIES:
                assert _scores(self.store, scope, q) == _bm25s(self.store, scope, q), (scope, q)


def _reads(store: InMemoryStore, scope: Scope) -> list[Any]:
    out: list[Any] = []
    for f in (Filters(), Filters.parse({"types": ["message"]})):
        out += listing_reads(store, scope, f)
        for q in QUERIES:
            out.append(store.lexical_search(scope, q, 5, f))
    return out


def _scores(store: InMemoryStore, scope: Scope, query: list[str]) -> list[tuple[str, float]]:
    return [(c.id, c.score) for c in store.lexical_search(scope, query, 1000, Filters())]


def _bm25s(store: InMemoryStore, scope: Scope, query: list[str]) -> list[tuple[str, float]]:
    """What the store gave until session 31: a bm25s index of every record the caller may
    read, built anew."""
    readable = scope.user_scope
    entries = [e for e in store._entries.values() if e.record.visible_in(readable)]
    terms = [own_tokens(e) for e in entries]
    return bm25_hits(entries, terms, query, lambda r: r.visible_in(scope))


def test_callers_read_what_a_rebuild_reads() -> None:
    run_state_machine_as_test(
        Shared,
        settings=settings(
            max_examples=60,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
