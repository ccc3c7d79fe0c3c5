from __future__ import annotations

from pathlib import Path

from memstrata.bench.locomo.baselines import (
    format_turn,
    full_history,
    pack_ranked,
    random_sample,
    sliding_window,
)
from memstrata.bench.locomo.dataset import load_locomo
from memstrata.tokens import count_tokens


def _cost(lines: list[str]) -> int:
    return sum(count_tokens(x) + 1 for x in lines)


def test_format_turn_has_date_and_speaker(locomo_file: Path) -> None:
    turn = load_locomo(locomo_file)[0].turns[0]
    assert format_turn(turn) == "[8 May 2023, 1:56 pm] Ana: Hi Ben! I adopted a puppy named Rex."


def test_sliding_window_keeps_latest_within_budget(locomo_file: Path) -> None:
    turns = load_locomo(locomo_file)[0].turns
    lines = sliding_window(turns, 40, count_tokens)
    assert lines and _cost(lines) <= 40
    assert lines[-1] == format_turn(turns[-1])
    assert len(sliding_window(turns, 10_000, count_tokens)) == len(turns)
    assert sliding_window(turns, 1, count_tokens) == []


def test_random_sample_is_seeded_within_budget_and_ordered(locomo_file: Path) -> None:
    turns = load_locomo(locomo_file)[0].turns
    a = random_sample(turns, 45, count_tokens, seed=1)
    assert a == random_sample(turns, 45, count_tokens, seed=1)
    assert _cost(a) <= 45
    full = full_history(turns)
    assert [full.index(x) for x in a] == sorted(full.index(x) for x in a)


def test_pack_ranked_keeps_rank_order_and_skips_what_does_not_fit() -> None:
    lines = ["short one", "x" * 400, "short two", "short one"]
    packed = pack_ranked(lines, 20, count_tokens)
    assert packed == ["short one", "short two"]
