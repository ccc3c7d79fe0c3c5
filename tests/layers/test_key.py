"""Key memory: user-set and auto entries, ordering, edits with versions, refused promotions."""

from __future__ import annotations

from pathlib import Path

import pytest
from strata_kit import ALICE, ChosenEmbedder, add_turns, layer_ctx

from memstrata.errors import ConflictError, NotFoundError, ValidationError
from memstrata.layers.key import KeyMemoryService
from memstrata.layers.mid_term import MidTermService
from memstrata.records import RecordStatus, Source
from memstrata.scope import Scope


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_user_set_outranks_auto_then_priority_then_newest(tmp_path: Path, kind: str) -> None:
    with layer_ctx(tmp_path, kind, embedder=ChosenEmbedder({"sail": [1] + [0] * 7})) as ctx:
        keys, mid = KeyMemoryService(ctx), MidTermService(ctx)
        mid.absorb(ALICE, add_turns(ctx, ALICE, [("user", "sail")]))
        auto = keys.promote(ALICE, mid.clusters(ALICE)[0])
        low = keys.set(ALICE, "Topic: a machine learning project")
        ctx.clock.advance(minutes=1)  # type: ignore[attr-defined]
        newer = keys.set(ALICE, "Deadline: 2025-08-01")
        high = keys.set(ALICE, "Budget must not exceed 100k", priority=5)
        assert [k.id for k in keys.list(ALICE)] == [high.id, newer.id, low.id, auto.id]
        assert low.source is Source.EXPLICIT_USER_INPUT and low.metadata["origin"] == "user"
        assert auto.metadata["origin"] == "auto" and auto.source is Source.SYSTEM_GENERATED
        # user-level: visible from another session, invisible to another user
        assert len(keys.list(ALICE.with_session("s9"))) == 4
        assert keys.list(Scope("acme", "bob")) == []


def test_edit_writes_a_version_and_refuses_a_stale_one(tmp_path: Path) -> None:
    with layer_ctx(tmp_path) as ctx:
        keys = KeyMemoryService(ctx)
        entry = keys.set(ALICE, "Budget 100k")
        edited = keys.edit(ALICE, entry.id, text="Budget 120k", priority=3, expected_version=1)
        assert (edited.version, edited.text, edited.metadata["priority"]) == (2, "Budget 120k", 3)
        assert keys.list(ALICE)[0].text == "Budget 120k"
        with pytest.raises(ConflictError):
            keys.edit(ALICE, entry.id, text="stale", expected_version=1)
        with pytest.raises(ValidationError):
            keys.set(ALICE, "x", priority="high")  # type: ignore[arg-type]
        with pytest.raises(ValidationError):
            keys.set(ALICE, "   ")


def test_remove_is_a_soft_delete(tmp_path: Path) -> None:
    with layer_ctx(tmp_path) as ctx:
        keys = KeyMemoryService(ctx)
        entry = keys.set(ALICE, "Topic: pottery")
        keys.remove(ALICE, entry.id)
        assert keys.list(ALICE) == []
        kept = ctx.store.get(ALICE.user_scope, entry.id, include_deleted=True)
        assert kept.status is RecordStatus.DELETED
        with pytest.raises(NotFoundError):
            keys.remove(Scope("acme", "bob"), entry.id)


def test_promotion_of_a_deleted_or_missing_cluster_is_refused(tmp_path: Path) -> None:
    with layer_ctx(tmp_path, embedder=ChosenEmbedder({"sail": [1] + [0] * 7})) as ctx:
        keys, mid = KeyMemoryService(ctx), MidTermService(ctx)
        mid.absorb(ALICE, add_turns(ctx, ALICE, [("user", "sail")]))
        cluster = mid.clusters(ALICE)[0]
        ctx.store.set_status(ALICE.user_scope, [cluster.id], RecordStatus.DELETED, ctx.clock.now())
        with pytest.raises(ValidationError, match="deleted"):
            keys.promote(ALICE, cluster)
        ctx.store.purge(ALICE.user_scope, [cluster.id])
        with pytest.raises(NotFoundError):
            keys.promote(ALICE, cluster)
        assert keys.list(ALICE) == []
        note = keys.set(ALICE, "not a cluster")
        with pytest.raises(ValidationError):
            keys.promote(ALICE, note)
