from __future__ import annotations

import pytest

from memstrata.bench.locomo.metrics import (
    answer_recall,
    answer_tokens,
    covered_dia_ids,
    evidence_recall,
    normalize_answer,
    percentile,
    summarize_by_category,
)


def test_normalize_answer_matches_locomo() -> None:
    assert normalize_answer("The Cat, and a Dog!") == "cat dog"
    assert normalize_answer("7 May 2023") == "7 may 2023"
    assert answer_tokens("running in the parks") == ["run", "in", "park"]


def test_answer_recall() -> None:
    assert answer_recall("7 May 2023", "[8 May 2023] Ana: it was on May 7, 2023") == 1.0
    assert answer_recall("Psychology, counseling", "she studies psychology") == 0.5
    assert answer_recall("the", "anything") is None
    assert answer_recall("Rex", "") == 0.0


def test_evidence_recall_via_source_ids() -> None:
    id_to_dia = {"a": "D1:1", "b": "D1:2", "c": "D2:1"}
    hits = [["a"], ["x"], ["b", "c"]]
    assert covered_dia_ids(hits, id_to_dia, 1) == {"D1:1"}
    assert covered_dia_ids(hits, id_to_dia, 3) == {"D1:1", "D1:2", "D2:1"}
    assert evidence_recall(["D1:1", "D2:1"], covered_dia_ids(hits, id_to_dia, 2)) == 0.5
    assert evidence_recall([], {"D1:1"}) is None


def test_percentile_and_summary() -> None:
    assert percentile([], 50) is None
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert percentile([float(i) for i in range(101)], 95) == pytest.approx(95.0)
    s = summarize_by_category([(1, 1.0), (1, 0.0), (2, 1.0), (2, None)])
    assert s["1"] == {"mean": 0.5, "n": 2}
    assert s["2"] == {"mean": 1.0, "n": 1}
    assert s["all"]["mean"] == pytest.approx(2 / 3)
    assert list(s)[-1] == "all"
