"""Forgetting policies as pure functions: exact values of the seed formulas, bounds and
monotonicity (hypothesis), protection and bad parameters. No store anywhere."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata.errors import ValidationError
from memstrata.policies.forgetting import (
    POLICY_NAMES,
    Action,
    CapacityPolicy,
    CompositePolicy,
    DecayScorePolicy,
    ExponentialDecayPolicy,
    HotnessPolicy,
    HybridPolicy,
    ImportancePolicy,
    TimePolicy,
    capacity_score,
    decay_score,
    decayed_importance,
    explicit_forget,
    forget_probability,
    hotness,
    hybrid_score,
    importance_forget_score,
    is_protected,
    make_policy,
    with_importance_by_tag,
)
from memstrata.records import Content, MemoryRecord, RecordType, Source

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def rec(
    *,
    age: float = 0.0,
    importance: float = 0.5,
    accesses: int = 0,
    since_access: float | None = None,
    type: RecordType = RecordType.EPISODE,
    source: Source = Source.SYSTEM_GENERATED,
    tags: tuple[str, ...] = (),
    rid: str = "r1",
    metadata: dict[str, object] | None = None,
) -> MemoryRecord:
    created = NOW - timedelta(days=age)
    last = None if since_access is None else NOW - timedelta(days=since_access)
    return MemoryRecord(
        id=rid,
        tenant="t",
        user="u",
        type=type,
        content=Content("x"),
        created_at=created,
        updated_at=created,
        observed_at=created,
        importance=importance,
        access_count=accesses,
        last_accessed_at=last,
        source=source,
        tags=tags,
        metadata=metadata or {},
    )


ages = st.floats(min_value=0, max_value=3650, allow_nan=False)
units = st.floats(min_value=0, max_value=1, allow_nan=False)
counts = st.integers(min_value=0, max_value=10_000)


# --- exact values ------------------------------------------------------------------------
def test_importance_score_exact() -> None:
    # 15 days: time factor 0.5; importance 0.2 -> 0.05 * 0.5 * 0.8
    assert importance_forget_score(rec(age=15, importance=0.2), NOW) == pytest.approx(0.02)
    assert importance_forget_score(rec(age=300, importance=0.2), NOW) == pytest.approx(0.04)
    assert importance_forget_score(
        rec(age=60, importance=0.0), NOW, base_rate=0.9
    ) == pytest.approx(0.9)


def test_seed_importance_defaults_never_forget_but_a_higher_rate_does() -> None:
    worst = rec(age=1000, importance=0.0)
    assert ImportancePolicy().decide(worst, NOW).action is Action.KEEP
    d = ImportancePolicy(base_rate=0.9).decide(worst, NOW)
    assert d.action is Action.FORGET and d.score == pytest.approx(0.9)


def test_hotness_exact() -> None:
    # never accessed: 1 - age/30
    assert hotness(rec(age=6), NOW) == pytest.approx(0.8)
    assert hotness(rec(age=45), NOW) == 0.0
    # accessed 3 days ago, 20 times in 10 days: recency 0.9, frequency min(1, 2/5) = 0.4
    assert hotness(rec(age=10, accesses=20, since_access=3), NOW) == pytest.approx(
        0.6 * 0.9 + 0.4 * 0.4
    )
    # a few hours old: the divisor is one day, not the fraction
    assert hotness(rec(age=0.1, accesses=1, since_access=0), NOW) == pytest.approx(
        0.6 + 0.4 * (1 / 5)
    )


def test_hybrid_exact_and_threshold() -> None:
    r = rec(age=45, importance=0.2)  # time 0.5, hotness 0 (never accessed, >30 days)
    assert hybrid_score(r, NOW) == pytest.approx(0.4 * 0.5 + 0.35 * 0.8 + 0.25 * 1.0)
    d = HybridPolicy().decide(r, NOW)
    assert d.action is Action.FORGET  # 0.73 > 0.6
    assert d.probability == pytest.approx(1 / (1 + math.exp(-5 * (0.73 - 0.5))))
    assert HybridPolicy().decide(rec(age=1, importance=0.9), NOW).action is Action.KEEP


def test_sigmoid_exact() -> None:
    assert forget_probability(0.5) == 0.5
    assert forget_probability(0.6) == pytest.approx(1 / (1 + math.exp(-0.5)))


def test_exponential_half_life() -> None:
    assert decayed_importance(rec(age=90, importance=0.8), NOW) == pytest.approx(0.4)
    assert decayed_importance(rec(age=180, importance=0.8), NOW) == pytest.approx(0.2)
    # 0.8 * 2^(-270/90) = 0.1 exactly at 270 days; a day later it is below
    p = ExponentialDecayPolicy()
    assert p.decide(rec(age=269, importance=0.8), NOW).action is Action.KEEP
    assert p.decide(rec(age=271, importance=0.8), NOW).action is Action.FORGET
    # younger than 30 days: kept even when the decayed value is tiny (seed 001's cutoff)
    assert p.decide(rec(age=10, importance=0.05), NOW).action is Action.KEEP
    assert p.decide(rec(age=31, importance=0.05), NOW).action is Action.FORGET


def test_decay_score_and_its_threshold() -> None:
    assert decay_score(rec(age=0), NOW) == 1.0
    assert decay_score(rec(age=90), NOW) == pytest.approx(0.5)
    # the last access restarts the clock
    assert decay_score(rec(age=400, accesses=3, since_access=90), NOW) == pytest.approx(0.5)
    # 0.2 = 2^(-d/90) at d = 90*log2(5) = 208.97 days
    p = DecayScorePolicy()
    assert p.decide(rec(age=208), NOW).action is Action.KEEP
    assert p.decide(rec(age=210), NOW).action is Action.FORGET


def test_time_based() -> None:
    p = TimePolicy()
    assert p.decide(rec(age=91, importance=0.69), NOW).action is Action.FORGET
    assert p.decide(rec(age=91, importance=0.7), NOW).action is Action.KEEP
    assert p.decide(rec(age=89, importance=0.1), NOW).action is Action.KEEP


def test_capacity_keeps_best_n_and_never_evicts_protected() -> None:
    rs = [rec(rid=f"r{i}", importance=i / 10, age=1) for i in range(1, 6)]
    keyr = rec(rid="key", type=RecordType.KEY, importance=0.0)
    out = CapacityPolicy(max_records=3).decide_all([*rs, keyr], NOW)
    forgotten = {d.record_id for d in out if d.action is Action.FORGET}
    assert forgotten == {"r1", "r2", "r3"}  # 6 records, 3 allowed, key is protected
    assert capacity_score(rs[0], NOW) == pytest.approx(0.1 * 0.95)
    assert CapacityPolicy(max_records=10).decide_all(rs, NOW)[0].action is Action.KEEP


def test_explicit_and_tag_batch() -> None:
    assert [d.action for d in explicit_forget(["a", "b"])] == [Action.FORGET, Action.FORGET]
    rs = [rec(rid="a", tags=("pref",)), rec(rid="b"), rec(rid="c", tags=("pref",), importance=0.95)]
    out = with_importance_by_tag(rs, "pref", 0.95, NOW)
    assert [(r.id, r.importance, r.version) for r in out] == [("a", 0.95, 2)]
    with pytest.raises(ValidationError):
        with_importance_by_tag(rs, "pref", float("nan"), NOW)
    with pytest.raises(ValidationError):
        with_importance_by_tag(rs, " ", 0.5, NOW)


def test_protected_records_survive_every_policy() -> None:
    old = dict(age=3000, importance=0.0)
    protected = [
        rec(type=RecordType.KEY, **old),
        rec(source=Source.EXPLICIT_USER_INPUT, **old),
        rec(source=Source.CORRECTED_MEMORY, **old),
        rec(metadata={"pinned": True}, **old),
        rec(type=RecordType.MESSAGE, **old),
        rec(type=RecordType.TASK, **old),
    ]
    assert all(is_protected(r) for r in protected)
    assert not is_protected(rec(**old))
    for name in POLICY_NAMES:
        policy = make_policy(name) if name != "capacity" else CapacityPolicy(max_records=1)
        for d in policy.decide_all(protected, NOW):
            assert d.action is Action.KEEP, (name, d)


def test_composite_takes_the_strongest_action() -> None:
    r = rec(age=25, importance=0.95)  # hotness 1/6 < 0.2 -> downgrade; hybrid keeps
    out = CompositePolicy((HybridPolicy(), HotnessPolicy())).decide_all([r], NOW)
    assert out[0].action is Action.DOWNGRADE and out[0].policy == "hotness"
    forget = CompositePolicy((HotnessPolicy(), TimePolicy())).decide_all(
        [rec(age=100, importance=0.1)], NOW
    )
    assert forget[0].action is Action.FORGET and forget[0].policy == "time"


# --- bad input ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda: make_policy("nope"),
        lambda: make_policy("hybrid", threshold=float("nan")),
        lambda: make_policy("hybrid", threshold=-0.1),
        lambda: make_policy("hybrid", weights=(0.5, 0.5, 0.5)),
        lambda: make_policy("exponential", half_life_days=0),
        lambda: make_policy("decay", forget_below=float("inf")),
        lambda: make_policy("time", max_age_days=-1),
        lambda: make_policy("capacity", max_records=0),
        lambda: make_policy("capacity", max_records=2.5),
        lambda: make_policy("hotness", bogus=1),
        lambda: make_policy("default", threshold=0.5),
        lambda: make_policy(3),  # type: ignore[arg-type]
    ],
)
def test_bad_parameters_are_validation_errors(make: object) -> None:
    with pytest.raises(ValidationError):
        make()  # type: ignore[operator]


# --- properties ----------------------------------------------------------------------------
@given(ages, units, counts, ages)
def test_scores_stay_in_bounds(age: float, importance: float, n: int, since: float) -> None:
    r = rec(age=age, importance=importance, accesses=n, since_access=min(since, age) if n else None)
    assert 0.0 <= importance_forget_score(r, NOW) <= 0.05
    assert 0.0 <= hotness(r, NOW) <= 1.0
    assert 0.0 <= hybrid_score(r, NOW) <= 1.0 + 1e-12
    assert 0.0 <= forget_probability(hybrid_score(r, NOW)) <= 1.0
    assert 0.0 <= decayed_importance(r, NOW) <= importance
    assert 0.0 <= decay_score(r, NOW) <= 1.0
    assert 0.0 <= capacity_score(r, NOW) <= importance


@given(ages, ages, units)
def test_older_is_never_safer(a: float, b: float, importance: float) -> None:
    young, old = sorted((a, b))
    ry, ro = rec(age=young, importance=importance), rec(age=old, importance=importance)
    assert hybrid_score(ro, NOW) >= hybrid_score(ry, NOW) - 1e-12
    assert importance_forget_score(ro, NOW) >= importance_forget_score(ry, NOW) - 1e-12
    assert decayed_importance(ro, NOW) <= decayed_importance(ry, NOW) + 1e-12
    assert decay_score(ro, NOW) <= decay_score(ry, NOW) + 1e-12
    assert hotness(ro, NOW) <= hotness(ry, NOW) + 1e-12


@given(ages, units, units)
def test_more_important_is_never_less_safe(age: float, a: float, b: float) -> None:
    lo, hi = sorted((a, b))
    rl, rh = rec(age=age, importance=lo), rec(age=age, importance=hi)
    assert hybrid_score(rh, NOW) <= hybrid_score(rl, NOW) + 1e-12
    assert importance_forget_score(rh, NOW) <= importance_forget_score(rl, NOW) + 1e-12
    for policy in (HybridPolicy(), ExponentialDecayPolicy(), TimePolicy()):
        if policy.decide(rl, NOW).action is Action.KEEP:
            assert policy.decide(rh, NOW).action is Action.KEEP


@given(
    st.lists(st.tuples(units, ages), min_size=0, max_size=30),
    st.integers(min_value=1, max_value=40),
)
def test_capacity_keeps_exactly_min_n_and_the_best(
    items: list[tuple[float, float]], n: int
) -> None:
    rs = [rec(rid=f"r{i}", importance=imp, age=age) for i, (imp, age) in enumerate(items)]
    out = CapacityPolicy(max_records=n).decide_all(rs, NOW)
    kept = [r for r, d in zip(rs, out, strict=True) if d.action is Action.KEEP]
    gone = [r for r, d in zip(rs, out, strict=True) if d.action is Action.FORGET]
    assert len(kept) == min(n, len(rs))
    if kept and gone:
        assert max(capacity_score(r, NOW) for r in gone) <= min(
            capacity_score(r, NOW) for r in kept
        )


@given(st.integers(min_value=0, max_value=50), st.floats(min_value=0, max_value=30))
def test_an_access_never_makes_a_record_colder(n: int, since: float) -> None:
    r = rec(age=30, accesses=n, since_access=since if n else None)
    touched = replace(r, access_count=n + 1, last_accessed_at=NOW)
    assert hotness(touched, NOW) >= hotness(r, NOW) - 1e-12
    assert decay_score(touched, NOW) >= decay_score(r, NOW) - 1e-12
