"""Random interleavings of operations by several tenants and users never cross scopes.

A hypothesis state machine drives one store with operations from three owners, keeps the
expected state of every record, and checks after each step that every owner's records are
exactly what that owner did to them: nothing another owner did read, changed or destroyed
them.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from memstrata.errors import NotFoundError
from memstrata.filters import Filters
from memstrata.records import MemoryRecord, RecordStatus
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize
from memstrata.store import RecordWrite, Store

from .conftest import STORE_KINDS, T0, Maker, make_store, unit

OWNERS = [Scope("t1", "u1"), Scope("t1", "u2"), Scope("t2", "u1")]
WORDS = ["apple", "river", "apple river", "茶", "stone apple"]
owners = st.sampled_from(OWNERS)


class Isolation(RuleBasedStateMachine):
    kind = "memory"

    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        self.store: Store = make_store(self.kind, Path(self.tmp.name))
        self.maker = Maker()
        self.expected: dict[str, MemoryRecord] = {}

    def teardown(self) -> None:
        self.store.close()
        self.tmp.cleanup()

    def _owned(self, scope: Scope) -> set[str]:
        return {i for i, r in self.expected.items() if (r.tenant, r.user) ==
                (scope.tenant, scope.user)}

    def _pick(self, data: st.DataObject) -> str:
        known = sorted(self.expected) or ["never-inserted"]
        return data.draw(st.sampled_from(known))

    @rule(owner=owners, word=st.sampled_from(WORDS))
    def insert(self, owner: Scope, word: str) -> None:
        w = self.maker.write(tenant=owner.tenant, user=owner.user, text=word)
        self.store.insert([w])
        self.expected[w.record.id] = w.record

    @rule(actor=owners, data=st.data())
    def get(self, actor: Scope, data: st.DataObject) -> None:
        rid = self._pick(data)
        if rid in self._owned(actor):
            assert self.store.get(actor, rid, include_deleted=True) == self.expected[rid]
        else:
            with pytest.raises(NotFoundError):
                self.store.get(actor, rid, include_deleted=True)

    @rule(actor=owners, data=st.data())
    def replace_record(self, actor: Scope, data: st.DataObject) -> None:
        rid = self._pick(data)
        mine = rid in self._owned(actor)
        base = self.expected.get(rid) or self.maker.record(id=rid, tenant=actor.tenant,
                                                           user=actor.user)
        new = replace(base, tenant=actor.tenant, user=actor.user, version=base.version + 1,
                      importance=0.9)
        write = RecordWrite(new, unit(self.maker.rng), tuple(tokenize("replaced apple")))
        if mine:
            self.store.replace(actor, write, expected_version=base.version)
            self.expected[rid] = new
        else:
            with pytest.raises(NotFoundError):
                self.store.replace(actor, write, expected_version=base.version)

    @rule(actor=owners, data=st.data(), status=st.sampled_from(list(RecordStatus)))
    def set_status(self, actor: Scope, data: st.DataObject, status: RecordStatus) -> None:
        rid = self._pick(data)
        changed = self.store.set_status(actor, [rid], status, T0)
        mine = rid in self._owned(actor)
        if mine and self.expected[rid].status is not status:
            old = self.expected[rid]
            self.expected[rid] = replace(
                old, status=status, version=old.version + 1, updated_at=T0,
                deleted_at=T0 if status is RecordStatus.DELETED else None)
            assert changed == [rid]
        else:
            assert changed == []

    @rule(actor=owners, data=st.data())
    def touch(self, actor: Scope, data: st.DataObject) -> None:
        rid = self._pick(data)
        self.store.touch(actor, [rid], T0)
        if rid in self._owned(actor):
            old = self.expected[rid]
            self.expected[rid] = replace(old, access_count=old.access_count + 1,
                                         last_accessed_at=T0)

    @rule(actor=owners, data=st.data())
    def purge(self, actor: Scope, data: st.DataObject) -> None:
        rid = self._pick(data)
        report = self.store.purge(actor, [rid])
        if rid in self._owned(actor):
            assert report.records == 1
            del self.expected[rid]
        else:
            assert report.records == 0

    @rule(actor=owners)
    def purge_user(self, actor: Scope) -> None:
        gone = self._owned(actor)
        report = self.store.purge_user(actor.tenant, actor.user)
        assert (report.records, report.remaining) == (len(gone), 0)
        for rid in gone:
            del self.expected[rid]

    @rule(actor=owners, word=st.sampled_from(WORDS))
    def search(self, actor: Scope, word: str) -> None:
        mine = self._owned(actor)
        every = Filters(include_deleted=True, include_superseded=True)
        lexical = self.store.lexical_search(actor, tokenize(word), 50, every)
        assert {c.id for c in lexical} <= mine
        vector = self.store.vector_search(actor, unit(np.random.default_rng(1)), 50, every)
        assert {c.id for c in vector} == mine
        assert {r.id for r in self.store.list(actor, every, limit=1000)} == mine
        assert self.store.count(actor, every) == len(mine)

    @invariant()
    def every_record_is_what_its_owner_made_it(self) -> None:
        for rid, record in self.expected.items():
            got = self.store.get(record.scope.user_scope, rid, include_deleted=True)
            assert got == record


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_isolation_holds_under_random_interleavings(kind: str) -> None:
    machine = type(f"Isolation_{kind.replace('-', '_')}", (Isolation,), {"kind": kind})
    run_state_machine_as_test(machine, settings=settings(
        max_examples=25, stateful_step_count=25, deadline=None,
        suppress_health_check=[HealthCheck.too_slow]))
