"""Mid-term clusters: the 0.7 join rule, centroids, heat, the cap, recall hits, promotion."""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from strata_kit import ALICE, T0, ChosenEmbedder, add_turns, layer_ctx

from memstrata.errors import ValidationError
from memstrata.layers.base import LayerConfig
from memstrata.layers.key import KeyMemoryService
from memstrata.layers.mid_term import (
    MidTermService,
    assign,
    cosine,
    heat,
    merge_centroids,
    plan_cap,
    update_centroid,
)
from memstrata.records import RecordType


def at(cos: float) -> list[float]:
    """A unit vector at cosine ``cos`` from e1, in the e1-e2 plane."""
    return [cos, math.sqrt(1 - cos * cos), 0.0, 0.0]


E1 = [1.0, 0.0, 0.0, 0.0]


def test_joins_at_cosine_0_7_and_not_at_0_699() -> None:
    assert assign(at(0.7), [E1]) == 0
    assert assign(at(0.699), [E1]) is None
    assert assign(E1, []) is None


def test_joins_the_most_similar_cluster_not_the_first_above_threshold() -> None:
    centroids = [at(0.75), at(0.95), [0.0, 0.0, 1.0, 0.0]]
    assert assign(E1, centroids) == 1


def test_centroid_is_the_running_mean_and_merge_weights_by_count() -> None:
    c = update_centroid([0.0, 0.0], 0, [1.0, 0.0])
    c = update_centroid(c, 1, [0.0, 1.0])
    assert np.allclose(c, [0.5, 0.5])
    assert np.allclose(merge_centroids([1.0, 0.0], 3, [0.0, 1.0], 1), [0.75, 0.25])
    assert cosine([1, 1], [2, 2]) == pytest.approx(1.0)


def test_heat_is_visits_plus_normalised_length_plus_recency() -> None:
    h = heat(3, 5, T0, T0 + timedelta(hours=24), max_interaction_length=10)
    assert h == pytest.approx(3 + 0.5 + math.exp(-1))
    assert heat(0, 0, T0, T0, max_interaction_length=0) == pytest.approx(1.0)
    assert heat(0, 1, T0 + timedelta(hours=1), T0, max_interaction_length=1) == pytest.approx(2.0)


def test_cap_merges_the_two_most_similar_else_evicts_the_coldest() -> None:
    merge = plan_cap([E1, at(0.9), [0.0, 0.0, 1.0, 0.0]], [1.0, 5.0, 0.1])
    assert (merge.kind, merge.keep, merge.drop) == ("merge", 1, 0)  # hotter one survives
    evict = plan_cap([E1, [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]], [1.0, 5.0, 0.1])
    assert (evict.kind, evict.drop) == ("evict", 2)
    with pytest.raises(ValidationError):
        plan_cap([], [])


VECS = {
    "sail a": [1, 0, 0, 0, 0, 0, 0, 0],
    "sail b": [0.8, 0.6, 0, 0, 0, 0, 0, 0],  # cosine 0.8 with "sail a"
    "chess": [0, 0, 1, 0, 0, 0, 0, 0],
    "violin": [0, 0, 0, 1, 0, 0, 0, 0],
    "pottery": [0, 0, 0, 0, 1, 0, 0, 0],
    "chess b": [0, 0, 0.9, 0, 0, 0, 0.43588989, 0],  # cosine 0.9 with "chess"
}


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_absorb_clusters_per_user_across_sessions_and_is_idempotent(
    tmp_path: Path, kind: str
) -> None:
    with layer_ctx(tmp_path, kind, embedder=ChosenEmbedder(VECS)) as ctx:
        mid = MidTermService(ctx)
        first = add_turns(ctx, ALICE, [("user", "sail a"), ("user", "chess"), ("user", "ok")])
        second = add_turns(ctx, ALICE.with_session("s2"), [("user", "sail b")])
        mid.absorb(ALICE, first)
        mid.absorb(ALICE.with_session("s2"), second)
        clusters = mid.clusters(ALICE)
        assert len(clusters) == 2  # "ok" is an acknowledgement: not clustered
        sail = next(c for c in clusters if first[0].id in c.source_ids)
        assert set(sail.source_ids) == {first[0].id, second[0].id}
        assert sail.session is None and sail.type is RecordType.CLUSTER
        s = sail.content.structured
        assert s["members"] == [first[0].id, second[0].id] and s["interaction_length"] == 2
        assert np.allclose(s["centroid"][:2], [0.9, 0.3], atol=1e-6)
        assert "sail" in sail.text  # the digest is searchable text
        before = [(c.id, c.version) for c in mid.clusters(ALICE)]
        assert mid.absorb(ALICE, first + second) == []
        assert [(c.id, c.version) for c in mid.clusters(ALICE)] == before


def test_the_index_vector_is_the_centroid_not_the_digest_embedding(tmp_path: Path) -> None:
    from memstrata.filters import Filters

    with layer_ctx(tmp_path, embedder=ChosenEmbedder(VECS)) as ctx:
        mid = MidTermService(ctx)
        mid.absorb(ALICE, add_turns(ctx, ALICE, [("user", "sail a"), ("user", "sail b")]))
        centroid = np.asarray([0.9, 0.3, 0, 0, 0, 0, 0, 0], dtype=np.float32)
        centroid /= np.linalg.norm(centroid)
        hits = ctx.store.vector_search(
            ALICE.user_scope, centroid, 1, Filters(types=frozenset({RecordType.CLUSTER}))
        )
        assert hits and hits[0].score == pytest.approx(1.0, abs=1e-5)


def test_the_cap_merges_or_evicts_with_a_logged_soft_delete(tmp_path: Path) -> None:
    cfg = LayerConfig(max_clusters=2)
    with layer_ctx(tmp_path, embedder=ChosenEmbedder(VECS), config=cfg) as ctx:
        mid = MidTermService(ctx)
        ms = add_turns(ctx, ALICE, [("user", "sail a"), ("user", "chess"), ("user", "violin")])
        mid.absorb(ALICE, ms[:2])
        chess = next(c for c in mid.clusters(ALICE) if ms[1].id in c.source_ids)
        mid.recall(ALICE, VECS["chess"], k=1)  # chess is now the hotter one
        mid.absorb(ALICE, ms[2:])
        active = mid.clusters(ALICE)
        assert len(active) == 2
        assert {c.id for c in active} >= {chess.id}
        gone = [c for c in mid.clusters(ALICE, include_deleted=True) if not c.is_active]
        assert len(gone) == 1 and ms[0].id in gone[0].source_ids
        assert "evicted as the coldest" in gone[0].metadata["retired"]["reason"]


def test_the_cap_merges_clusters_that_drifted_together(tmp_path: Path) -> None:
    # Two chess clusters exist (a low join threshold at write time), the cap then merges them.
    vecs = {**VECS, "chess c": [0, 0, 0.75, 0, 0, 0, 0, 0.66143783]}
    cfg = LayerConfig(max_clusters=2, cluster_join_cosine=0.7)
    with layer_ctx(tmp_path, embedder=ChosenEmbedder(vecs), config=cfg) as ctx:
        mid = MidTermService(ctx)
        ms = add_turns(ctx, ALICE, [("user", "chess"), ("user", "chess b"), ("user", "violin")])
        mid.absorb(ALICE, ms[:1])
        strict = MidTermService(
            type(ctx)(
                ctx.store,
                ctx.embedder,
                ctx.llm,
                ctx.clock,
                LayerConfig(max_clusters=2, cluster_join_cosine=0.95),
            )
        )
        strict.absorb(ALICE, ms[1:2])  # cos 0.9 < 0.95: a second chess cluster
        assert len(mid.clusters(ALICE)) == 2
        mid.absorb(ALICE, ms[2:])  # a third is needed: the two chess ones merge
        active = mid.clusters(ALICE)
        assert len(active) == 2
        merged = next(c for c in active if ms[0].id in c.source_ids)
        assert ms[1].id in merged.source_ids
        gone = [c for c in mid.clusters(ALICE, include_deleted=True) if not c.is_active]
        assert "merged into cluster" in gone[0].metadata["retired"]["reason"]


def test_recall_counts_hits_and_the_10th_hit_promotes_once(tmp_path: Path) -> None:
    with layer_ctx(tmp_path, embedder=ChosenEmbedder(VECS)) as ctx:
        mid, keys = MidTermService(ctx), KeyMemoryService(ctx)
        mid.absorb(ALICE, add_turns(ctx, ALICE, [("user", "sail a"), ("user", "chess")]))
        for _ in range(9):
            ((top, sim),) = mid.recall(ALICE, VECS["sail a"], k=1)
        # hits are a store counter: no new version per hit (issue 8 §1)
        assert sim == pytest.approx(1.0) and mid.hits(ALICE, [top.id]) == {top.id: 9}
        assert top.version == 1 and top.access_count == 9
        assert keys.list(ALICE) == []
        ((top, _),) = mid.recall(ALICE, VECS["sail a"], k=1)
        assert mid.hits(ALICE, [top.id]) == {top.id: 10}
        assert top.version == 2  # the one version: the promotion
        (key,) = keys.list(ALICE)
        assert key.metadata["origin"] == "auto" and key.metadata["cluster_id"] == top.id
        assert top.content.structured["promoted_key"] == key.id
        for _ in range(3):
            mid.recall(ALICE, VECS["sail a"], k=1)
        assert len(keys.list(ALICE)) == 1


def test_recall_orders_by_similarity_and_respects_k(tmp_path: Path) -> None:
    with layer_ctx(tmp_path, embedder=ChosenEmbedder(VECS)) as ctx:
        mid = MidTermService(ctx)
        assert mid.recall(ALICE, VECS["chess"], k=3) == []
        mid.absorb(
            ALICE,
            add_turns(ctx, ALICE, [("user", "sail a"), ("user", "chess"), ("user", "violin")]),
        )
        got = mid.recall(ALICE, VECS["chess b"], k=2)
        assert len(got) == 2 and got[0][1] >= got[1][1]
        assert "chess" in got[0][0].text
        assert mid.recall(ALICE, VECS["chess"], k=0) == []


def test_centroids_are_rebuilt_after_a_model_change(tmp_path: Path) -> None:
    with layer_ctx(tmp_path, embedder=ChosenEmbedder(VECS)) as ctx:
        mid = MidTermService(ctx)
        mid.absorb(ALICE, add_turns(ctx, ALICE, [("user", "sail a")]))
        other = type(ctx)(
            ctx.store,
            ChosenEmbedder({"sail a": [0] * 9 + [1]}, dims=10),
            ctx.llm,
            ctx.clock,
            ctx.config,
        )
        again = add_turns(other, ALICE, [("user", "sail a")])
        MidTermService(other).absorb(ALICE, again)  # rebuilds the centroid, then joins it
        ((cluster, sim),) = MidTermService(other).recall(ALICE, [0] * 9 + [1], k=1)
        assert sim == pytest.approx(1.0) and len(cluster.source_ids) == 2
        assert cluster.content.structured["model"] == "chosen-10"
