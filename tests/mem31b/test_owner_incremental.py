"""memory://'s per-user bookkeeping (store/memory.py, mem31b): each user's entries, each
tenant's count, the owner's BM25 statistics and vector rows, all updated by each write for
the records it touched, give what the store gave until session 31, when each read walked
every entry of the store and each search after a write rebuilt its index from scratch.

A hypothesis state machine drives random writes of several users of two tenants (inserts
with and without vectors, updates of text, access, session and vectors, deletes and
restores, re-terms, purges by ids, a purge of a whole user, new vectors of another model,
the store's model changed, a dump loaded, a transaction taken back, a write that does not
name what it touched) and after each one compares every read of each owner and of callers
(search hits, their scores and order, lists, pages, cursors, counts, recent turns, stats,
a tenant's count) with those of the code before mem31b (:class:`Walked`: a walk of every
entry, a ``bm25s`` index and a stacked matrix built anew), bit for bit, and checks the
bookkeeping against the store's entries."""

from __future__ import annotations

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
from memstrata.store import Candidate, RecordWrite
from memstrata.store.memory import InMemoryStore
from memstrata.store.memory_shared import own_tokens
from memstrata.store.one_model import MODEL_KEY
from memstrata.store.types import RecordDump

OWNERS = [("acme", "bob"), ("acme", "dan"), ("other", "bob")]
WORDS = "harbour river stone lantern orchard copper violet".split()
QUERIES = [["harbour"], ["river", "stone"], ["lantern", "harbour", "copper"], ["violet", "zzz"]]
ACCESS = [
    AccessControl(),
    AccessControl(Visibility.PUBLIC),
    AccessControl(Visibility.SHARED, allowed_users=("carol",)),
    AccessControl(Visibility.SHARED, allowed_roles=("editor",)),
]
# few vectors, so equal scores are common (their order is the store's: ``seq``)
VECTORS = [
    np.ones(4, np.float32),
    np.array([1, 0, 0, 0], np.float32),
    np.array([0, 2, 0, 1], np.float32),
    np.array([-1, 0.5, 0.25, 3], np.float32),
    np.ones(3, np.float32),
    np.array([0, 1, 0], np.float32),
]
QUERY_VECTORS = [np.array([1, 1, 0, 0], np.float32), np.array([0, 1, 1], np.float32)]
texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=6).map(" ".join)
accesses = st.sampled_from(ACCESS)
vectors = st.one_of(st.none(), st.sampled_from(range(len(VECTORS))))
owners = st.sampled_from(OWNERS)
sessions = st.sampled_from([None, "s1", "s2"])


def _scopes(tenant: str, user: str) -> list[Scope]:
    owner = Scope(tenant, user)
    return [
        owner,
        owner.with_session("s1"),
        owner.with_session("s2"),
        owner.as_caller("carol"),
        owner.as_caller("erin", {"editor"}),
    ]


class Walked(InMemoryStore):
    """The store's reads as they were before mem31b, over the same entries: a walk of every
    entry of the store, a ``bm25s`` index and a stacked matrix built anew at each search."""

    def _scoped(self, scope: Scope) -> list[Any]:
        return [e for e in self._entries.values() if e.record.visible_in(scope)]

    def count_tenant_records(self, tenant: str) -> int:
        return sum(1 for t, _, _ in self._entries if t == tenant)

    def lexical_search(self, scope: Scope, terms: Any, k: int, filters: Filters) -> list[Candidate]:
        query = [t for t in dict.fromkeys(terms) if t and not t.isspace()]
        if not query or k <= 0:
            return []
        readable = scope.user_scope if scope.caller is not None else Scope(scope.tenant, scope.user)
        entries = [e for e in self._entries.values() if e.record.visible_in(readable)]
        if scope.caller is None:
            terms_of = [list(e.terms) for e in entries]
        else:
            terms_of = [own_tokens(e) for e in entries]
        hits = bm25_hits(
            entries, terms_of, query, lambda r: r.visible_in(scope) and filters.matches(r)
        )
        return [Candidate(rid, score) for rid, score in hits[:k]]

    def _vector_search(
        self, scope: Scope, vector: Any, k: int, filters: Filters
    ) -> list[Candidate]:
        query = np.asarray(vector, dtype=np.float32).ravel()
        dims = query.size
        model = self._meta.get(MODEL_KEY)
        entries = [
            e
            for e in self._entries.values()
            if (e.record.tenant, e.record.user) == (scope.tenant, scope.user)
            and e.vector is not None
            and e.vector.size == dims
            and (model is None or e.record.embedding_model in (None, model))
        ]
        matrix = (
            np.stack([e.vector for e in entries if e.vector is not None])
            if entries
            else np.zeros((0, dims), np.float32)
        )
        scores = np.einsum("ij,j->i", matrix, query)
        out = []
        for i in np.argsort(-scores, kind="stable"):
            record = entries[i].record
            if record.visible_in(scope) and filters.matches(record):
                out.append(Candidate(record.id, float(scores[i])))
                if len(out) == k:
                    break
        return out


def _walked(store: InMemoryStore) -> Walked:
    old = Walked.__new__(Walked)
    old.__dict__.update(store.__dict__)
    return old


def _reads(store: InMemoryStore, scope: Scope) -> list[Any]:
    out: list[Any] = []
    for f in (Filters(), Filters.parse({"types": ["message"]})):
        out += listing_reads(store, scope, f)
        for q in QUERIES:
            out.append([(c.id, c.score) for c in store.lexical_search(scope, q, 100, f)])
            out.append([(c.id, c.score) for c in store.lexical_search(scope, q, 2, f)])
        for v in QUERY_VECTORS:
            out.append([(c.id, c.score) for c in store.vector_search(scope, v, 100, f)])
            out.append([(c.id, c.score) for c in store.vector_search(scope, v, 2, f)])
    out.append([r.id for r in store.recent_turns(scope.with_session("s1"), 3)])
    out.append(store.stats(scope))
    return out


class PerUser(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store = InMemoryStore()
        self.n = 0
        self.ids: list[tuple[str, str, str]] = []

    def teardown(self) -> None:
        self.store.close()

    def _record(
        self, owner: tuple[str, str], text: str, access: AccessControl, message: bool
    ) -> MemoryRecord:
        self.n += 1
        return drawn(self.n, owner, text, access, message)

    def _write(self, r: MemoryRecord, vector: int | None, extra: str = "") -> RecordWrite:
        vec = None if vector is None else VECTORS[vector]
        if vec is not None:
            r = replace(r, embedding_dims=vec.size)
        return RecordWrite(r, vec, tuple(tokenize(f"{r.text} {extra}")))

    def _pick(self, data: st.DataObject) -> tuple[str, str, str]:
        return data.draw(st.sampled_from(self.ids or [("acme", "bob", "never")]))

    def _current(self, key: tuple[str, str, str]) -> MemoryRecord | None:
        e = self.store._entries.get(key)
        return None if e is None else e.record

    @rule(
        owner=owners,
        batch=st.lists(
            st.tuples(texts, accesses, st.booleans(), texts, vectors), min_size=1, max_size=3
        ),
    )
    def insert(self, owner: tuple[str, str], batch: list[Any]) -> None:
        writes = []
        for text, ac, message, question, vector in batch:
            r = self._record(owner, text, ac, message)
            writes.append(self._write(r, vector, question if message else ""))
        self.store.insert(writes)
        self.ids += [(w.record.tenant, w.record.user, w.record.id) for w in writes]

    @rule(
        data=st.data(),
        text=texts,
        ac=accesses,
        same_text=st.booleans(),
        vector=vectors,
        session=st.one_of(st.just("same"), sessions),
    )
    def update(
        self,
        data: st.DataObject,
        text: str,
        ac: AccessControl,
        same_text: bool,
        vector: Any,
        session: str | None,
    ) -> None:
        r = self._current(self._pick(data))
        if r is None:
            return
        new = replace(
            r,
            content=r.content if same_text else replace(r.content, raw=text),
            access=ac,
            version=r.version + 1,
            embedding_dims=None,
            session=r.session if session == "same" else session,
        )
        owner = Scope(r.tenant, r.user)
        self.store.replace(owner, self._write(new, vector), expected_version=r.version)

    @rule(data=st.data(), deleted=st.booleans())
    def status(self, data: st.DataObject, deleted: bool) -> None:
        tenant, user, rid = self._pick(data)
        status = RecordStatus.DELETED if deleted else RecordStatus.ACTIVE
        self.store.set_status(Scope(tenant, user), [rid], status, T0 + timedelta(days=1))

    @rule(data=st.data(), text=texts)
    def reterm(self, data: st.DataObject, text: str) -> None:
        tenant, user, rid = self._pick(data)
        self.store.reterm(Scope(tenant, user), {rid: tuple(tokenize(text))})

    @rule(data=st.data(), text=texts)
    def purge(self, data: st.DataObject, text: str) -> None:
        (tenant, user, gone), (_, _, kept) = self._pick(data), self._pick(data)
        self.store.purge(Scope(tenant, user), [gone], reterm={kept: tuple(tokenize(text))})

    @rule(who=st.sampled_from([("acme", "carol"), ("acme", "dan"), ("other", "bob")]))
    def purge_user(self, who: tuple[str, str]) -> None:
        self.store.purge_user(*who)  # a reader, or an owner and every record of theirs

    @rule(data=st.data(), vector=st.sampled_from(range(len(VECTORS))), model=st.sampled_from("mn"))
    def embed(self, data: st.DataObject, vector: int, model: str) -> None:
        r = self._current(self._pick(data))
        if r is not None:
            vec = VECTORS[vector]
            self.store.set_vectors([(r, vec)], model, vec.size)

    @rule(model=st.sampled_from("mn"))
    def model(self, model: str) -> None:
        self.store.set_meta(MODEL_KEY, model)

    @rule(owner=owners, text=texts, ac=accesses, vector=vectors)
    def load(self, owner: tuple[str, str], text: str, ac: AccessControl, vector: Any) -> None:
        w = self._write(self._record(owner, text, ac, False), vector)
        self.store.load_records([RecordDump((w.record,), w.vector, w.terms)])
        self.ids.append((w.record.tenant, w.record.user, w.record.id))

    @rule(data=st.data(), owner=owners, text=texts, ac=accesses, vector=vectors)
    def taken_back(
        self, data: st.DataObject, owner: tuple[str, str], text: str, ac: AccessControl, vector: Any
    ) -> None:
        r = self._current(self._pick(data))
        fresh = self._write(self._record(owner, text, ac, False), vector)
        with pytest.raises(RuntimeError), self.store.transaction() as tx:
            tx.insert([fresh])
            if r is not None:
                scope = Scope(r.tenant, r.user)
                new = replace(r, access=ac, version=r.version + 1, embedding_dims=None)
                tx.replace(scope, self._write(new, vector), expected_version=r.version)
                tx.set_status(scope, [r.id], RecordStatus.DELETED, T0)
            raise RuntimeError("taken back")

    @rule(data=st.data(), ac=accesses, terms=texts, session=sessions)
    def unsaid(self, data: st.DataObject, ac: AccessControl, terms: str, session: Any) -> None:
        """A write that does not say which records it touched (``_changed(tenant, user)``):
        the user's indexes are gathered again from the user's entries."""
        tenant, user, rid = self._pick(data)
        e = self.store._entries.get((tenant, user, rid))
        if e is not None:
            with self.store._lock:
                e.record = replace(
                    e.record, access=ac, version=e.record.version + 1, session=session
                )
                e.terms = tuple(tokenize(terms))
                e.vector = None
                self.store._changed(tenant, user)

    @invariant()
    def bookkeeping_is_the_entries(self) -> None:
        s = self.store
        by_owner: dict[tuple[str, str], list[str]] = {}
        for (t, u, rid), e in s._entries.items():
            by_owner.setdefault((t, u), []).append(rid)
            assert s._owned[t, u][rid] is e
        assert {k: list(v) for k, v in s._owned.items()} == by_owner
        tenants: dict[str, int] = {}
        for t, _, _ in s._entries:
            tenants[t] = tenants.get(t, 0) + 1
        assert s._tenant_records == tenants
        by_session: dict[tuple[str, str], dict[str, list[str]]] = {}
        for (t, u, rid), e in s._entries.items():
            if e.record.session is not None:
                by_session.setdefault((t, u), {}).setdefault(e.record.session, []).append(rid)
        held = {k: {n: list(d) for n, d in v.items()} for k, v in s._sessions.items()}
        assert held == by_session

    @invariant()
    def reads_are_the_walks(self) -> None:
        old = _walked(self.store)
        for tenant in ("acme", "other", "none"):
            assert self.store.count_tenant_records(tenant) == old.count_tenant_records(tenant)
        for owner in OWNERS:
            for scope in _scopes(*owner):
                assert _reads(self.store, scope) == _reads(old, scope), scope


def test_per_user_reads_are_the_walks_of_the_store() -> None:
    run_state_machine_as_test(
        PerUser,
        settings=settings(
            max_examples=60,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
