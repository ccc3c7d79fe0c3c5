"""``Store.stored_vectors``: the vectors a store holds, read by id for one scope, on every
backend (what an export with embeddings writes instead of embedding every text again)."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from memstrata.records import RecordStatus, Visibility
from memstrata.scope import Scope
from memstrata.store import Store

from .conftest import DIMS, T0, Maker, unit

ME = Scope("t1", "u1")


def test_the_stored_vectors_come_back_with_their_model(store: Store, maker: Maker) -> None:
    ws = [maker.write() for _ in range(3)]
    bare = maker.write(vector=False)
    store.insert([*ws, bare])
    store.set_status(ME, [ws[1].record.id], RecordStatus.DELETED, T0)
    wanted = [ws[2].record.id, "missing", ws[0].record.id, ws[1].record.id, bare.record.id]
    got = store.stored_vectors(ME, wanted)
    assert set(got) == {w.record.id for w in ws}  # deleted included; no vector, no entry
    for w in ws:
        assert got[w.record.id].model == "test"
        assert got[w.record.id].vector.dtype == np.float32
        np.testing.assert_array_equal(got[w.record.id].vector, w.vector)
    assert store.stored_vectors(ME, []) == {}


def test_after_set_vectors_the_new_vector_and_model_are_read(store: Store, maker: Maker) -> None:
    w = maker.write()
    store.insert([w])
    new = unit(maker.rng, 8)
    store.set_vectors([(w.record, new)], "m2", 8)
    got = store.stored_vectors(ME, [w.record.id])[w.record.id]
    assert got.model == "m2"
    np.testing.assert_array_equal(got.vector, new)


@pytest.mark.parametrize("foreign", [Scope("t1", "u2"), Scope("t2", "u1")])
def test_another_users_ids_read_nothing(store: Store, maker: Maker, foreign: Scope) -> None:
    mine = maker.write(text="secret tea recipe")
    store.insert([mine])
    assert store.stored_vectors(foreign, [mine.record.id]) == {}
    # The same id under the other user is another record, with its own vector.
    theirs = maker.write(
        replace(mine.record, tenant=foreign.tenant, user=foreign.user), vector=True
    )
    store.insert([theirs])
    assert set(store.stored_vectors(foreign, [mine.record.id])) == {mine.record.id}
    np.testing.assert_array_equal(
        store.stored_vectors(foreign, [mine.record.id])[mine.record.id].vector, theirs.vector
    )
    np.testing.assert_array_equal(
        store.stored_vectors(ME, [mine.record.id])[mine.record.id].vector, mine.vector
    )


def test_visibility_within_the_user_is_get_manys(store: Store, maker: Maker) -> None:
    agents, sessions = [None, "a1", "a2"], [None, "s1", "s2"]
    writes = [
        maker.write(agent=a, session=s, visibility=v, text=f"shared topic {a} {s} {v}")
        for a, s, v in itertools.product(agents, sessions, list(Visibility))
    ]
    store.insert(writes)
    ids = [w.record.id for w in writes]
    for agent, session in itertools.product(agents, sessions):
        scope = Scope("t1", "u1", agent, session)
        expected = {r.id for r in store.get_many(scope, ids)}
        assert set(store.stored_vectors(scope, ids)) == expected
        assert len(expected) < len(ids) or (agent, session) == (None, None)


def test_many_ids_are_read_in_one_call(store: Store, maker: Maker) -> None:
    """More ids than one SQL statement takes (SQLite's parameter chunks)."""
    ws = [maker.write() for _ in range(1200)]
    store.insert(ws)
    got = store.stored_vectors(ME, [w.record.id for w in ws])
    assert len(got) == 1200
    assert all(v.vector.shape == (DIMS,) for v in got.values())
