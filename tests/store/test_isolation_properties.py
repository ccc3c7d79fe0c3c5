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

from memstrata.errors import NotFoundError, ValidationError
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
        # (tenant, user, id) -> current record, and every version: ids are per user
        self.expected: dict[tuple[str, str, str], MemoryRecord] = {}
        self.versions: dict[tuple[str, str, str], list[MemoryRecord]] = {}
        self.hits: dict[tuple[str, str, str], int] = {}

    def teardown(self) -> None:
        self.store.close()
        self.tmp.cleanup()

    def _owned(self, scope: Scope) -> set[str]:
        return {k[2] for k in self.expected if k[:2] == (scope.tenant, scope.user)}

    @staticmethod
    def _key(scope: Scope, rid: str) -> tuple[str, str, str]:
        return (scope.tenant, scope.user, rid)

    def _set(self, record: MemoryRecord) -> None:
        key = (record.tenant, record.user, record.id)
        self.expected[key] = record
        self.versions.setdefault(key, []).append(record)

    def _drop(self, key: tuple[str, str, str]) -> None:
        del self.expected[key]
        del self.versions[key]
        self.hits.pop(key, None)

    def _pick(self, data: st.DataObject) -> str:
        known = sorted({k[2] for k in self.expected}) or ["never-inserted"]
        return data.draw(st.sampled_from(known))

    @rule(owner=owners, word=st.sampled_from(WORDS))
    def insert(self, owner: Scope, word: str) -> None:
        w = self.maker.write(tenant=owner.tenant, user=owner.user, text=word)
        self.store.insert([w])
        self._set(w.record)

    @rule(actor=owners, data=st.data(), word=st.sampled_from(WORDS))
    def insert_existing_id(self, actor: Scope, data: st.DataObject, word: str) -> None:
        """An id somebody has: refused only if the actor has it, else a fresh insert."""
        rid = self._pick(data)
        w = self.maker.write(self.maker.record(word, tenant=actor.tenant, user=actor.user, id=rid))
        if rid in self._owned(actor):
            with pytest.raises(ValidationError, match="exists already"):
                self.store.insert([w])
        else:
            self.store.insert([w])
            self._set(w.record)

    @rule(actor=owners, data=st.data())
    def get(self, actor: Scope, data: st.DataObject) -> None:
        rid = self._pick(data)
        if rid in self._owned(actor):
            assert (
                self.store.get(actor, rid, include_deleted=True)
                == self.expected[self._key(actor, rid)]
            )
        else:
            with pytest.raises(NotFoundError):
                self.store.get(actor, rid, include_deleted=True)

    @rule(actor=owners, data=st.data())
    def replace_record(self, actor: Scope, data: st.DataObject) -> None:
        rid = self._pick(data)
        mine = rid in self._owned(actor)
        base = self.expected.get(self._key(actor, rid)) or self.maker.record(
            id=rid, tenant=actor.tenant, user=actor.user
        )
        new = replace(
            base, tenant=actor.tenant, user=actor.user, version=base.version + 1, importance=0.9
        )
        write = RecordWrite(new, unit(self.maker.rng), tuple(tokenize("replaced apple")))
        if mine:
            self.store.replace(actor, write, expected_version=base.version)
            self._set(new)
        else:
            with pytest.raises(NotFoundError):
                self.store.replace(actor, write, expected_version=base.version)

    @rule(actor=owners, data=st.data(), status=st.sampled_from(list(RecordStatus)))
    def set_status(self, actor: Scope, data: st.DataObject, status: RecordStatus) -> None:
        rid = self._pick(data)
        changed = self.store.set_status(actor, [rid], status, T0)
        mine = rid in self._owned(actor)
        if mine and self.expected[self._key(actor, rid)].status is not status:
            old = self.expected[self._key(actor, rid)]
            self._set(
                replace(
                    old,
                    status=status,
                    version=old.version + 1,
                    updated_at=T0,
                    deleted_at=T0 if status is RecordStatus.DELETED else None,
                )
            )
            assert changed == [rid]
        else:
            assert changed == []

    @rule(actor=owners, data=st.data())
    def touch(self, actor: Scope, data: st.DataObject) -> None:
        rid = self._pick(data)
        self.store.touch(actor, [rid], T0)
        if rid in self._owned(actor):
            key = self._key(actor, rid)
            old = self.expected[key]
            # a counter, not a version: the current record changes, history does not
            self.expected[key] = replace(
                old, access_count=old.access_count + 1, last_accessed_at=T0
            )

    @rule(actor=owners, data=st.data(), n=st.integers(1, 3))
    def count_hits(self, actor: Scope, data: st.DataObject, n: int) -> None:
        rid = self._pick(data)
        self.store.add_counts(actor, "hits", {rid: n})
        if rid in self._owned(actor):
            key = self._key(actor, rid)
            self.hits[key] = self.hits.get(key, 0) + n
        self.store.flush_counters()
        expected = (
            {rid: self.hits.get(self._key(actor, rid), 0)} if rid in self._owned(actor) else {}
        )
        assert self.store.counts(actor, "hits", [rid]) == expected

    @rule(actor=owners, data=st.data())
    def purge(self, actor: Scope, data: st.DataObject) -> None:
        rid = self._pick(data)
        report = self.store.purge(actor, [rid])
        if rid in self._owned(actor):
            assert report.records == 1
            self._drop(self._key(actor, rid))
        else:
            assert report.records == 0

    @rule(actor=owners)
    def purge_user(self, actor: Scope) -> None:
        gone = self._owned(actor)
        report = self.store.purge_user(actor.tenant, actor.user)
        assert (report.records, report.remaining) == (len(gone), 0)
        for rid in gone:
            self._drop(self._key(actor, rid))

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
        for (_, _, rid), record in self.expected.items():
            got = self.store.get(record.scope.user_scope, rid, include_deleted=True)
            assert got == record

    @invariant()
    def every_history_is_every_version_its_owner_wrote(self) -> None:
        for key, versions in self.versions.items():
            got = self.store.history(Scope(key[0], key[1]), key[2])

            # counters are not versions: compare without them
            def plain(r: MemoryRecord) -> MemoryRecord:
                return replace(r, access_count=0, last_accessed_at=None)

            assert [plain(r) for r in got] == [plain(r) for r in versions]


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_isolation_holds_under_random_interleavings(kind: str) -> None:
    machine = type(f"Isolation_{kind.replace('-', '_')}", (Isolation,), {"kind": kind})
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=25,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
