"""Forgetting policies: pure functions of a record (or a user's records) and a time.

Every score below is the seed's formula (seed 000 §10, seed 001, seed 003); ages are taken
from ``created_at`` (when the memory was written, the seed's ``timestamp``), not from
``observed_at`` (an import of a year-old conversation is not a year-old memory).

- importance-based (seed 000 §10 strategy 1)::

      forget = base_rate · min(1, age_days / 30) · (1 − importance)

  forgotten above ``threshold`` (seed: base_rate 0.05, threshold 0.5 — with those defaults
  the score never exceeds 0.05, so the seed's policy never fires; raise ``base_rate`` to use
  it).
- hotness (strategy 1b, 30-day look-back, hot at 5 accesses a day)::

      never accessed: hotness = max(0, 1 − age_days / lookback)
      otherwise:      hotness = 0.6 · max(0, 1 − days_since_access / lookback)
                              + 0.4 · min(1, (access_count / max(1, age_days)) / hot)

  downgraded below 0.2. (The seed divides by the age and only replaces an age of exactly 0
  by 1; a record a few hours old would then count as very frequently used, so the
  divisor is at least one day here.)
- hybrid (strategy 2)::

      score = 0.4 · min(1, age_days / 90) + 0.35 · (1 − importance) + 0.25 · (1 − hotness)
      probability = 1 / (1 + exp(−5 · (score − 0.5)))

  forgotten above 0.6. The decision is the threshold (deterministic); the probability is
  reported beside it.
- exponential importance decay (seed 001): ``importance · 2^(−age_days / 90)``; a record
  older than 30 days whose decayed importance is below 0.1 is forgotten. The stored
  importance is not rewritten (re-applying the factor of the whole age on every run, as the
  seed's job does, would compound it).
- decay score (seed 003): ``decay_score = 2^(−days_since_last_use / 90)`` where the last
  use is the last access, else the creation; forgotten below 0.2 (≈ 209 days unused). The
  maintenance run keeps the stored ``decay_score`` current with :func:`decay_score`.
- capacity eviction (seed 000 ``capacity_based_eviction``): keep the best N by
  ``importance · 0.95^age_days``, forget the rest.
- time-based (seed 000 ``time_based_decay``): older than 90 days and importance below 0.7.
- explicit forget and batch importance by tag (seed 000): :func:`explicit_forget`,
  :func:`with_importance_by_tag`.

Key memory, records the user set explicitly and pinned records are *protected*: every
policy keeps them (:func:`is_protected`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Protocol, runtime_checkable

from ..errors import ValidationError
from ..records import MemoryRecord, RecordType, Source
from ..validation import check_tags

__all__ = [
    "DEFAULT_POLICY",
    "POLICY_NAMES",
    "Action",
    "CapacityPolicy",
    "CompositePolicy",
    "DecayScorePolicy",
    "Decision",
    "ExponentialDecayPolicy",
    "ForgettingPolicy",
    "HotnessPolicy",
    "HybridPolicy",
    "ImportancePolicy",
    "TimePolicy",
    "age_days",
    "capacity_score",
    "decay_score",
    "decayed_importance",
    "explicit_forget",
    "forget_probability",
    "hotness",
    "hybrid_score",
    "importance_forget_score",
    "is_protected",
    "make_policy",
    "importance_by_tag_args",
    "with_importance_by_tag",
]

_DAY = 86400.0
LN2 = math.log(2.0)

#: Types a forgetting policy looks at. Not: messages (the raw log; retention purges them
#: after a summary covered them), summaries (what remains of a conversation once its
#: messages are purged), clusters (mid-term memory evicts by heat at its own cap), tasks (the
#: live working memory) and keys (always protected).
FORGETTABLE_TYPES = frozenset(
    {
        RecordType.EPISODE,
        RecordType.FACT,
        RecordType.KNOWLEDGE,
        RecordType.NOTE,
        RecordType.PROCEDURE,
    }
)


class Action(StrEnum):
    KEEP = "keep"
    DOWNGRADE = "downgrade"
    FORGET = "forget"


@dataclass(frozen=True, slots=True)
class Decision:
    """What a policy decided for one record, and why (the log entry's content)."""

    record_id: str
    action: Action
    policy: str
    reason: str
    score: float
    probability: float | None = None


# --- checks -------------------------------------------------------------------------------
def _number(
    value: object, name: str, *, low: float = 0.0, high: float | None = None, low_open: bool = False
) -> float:
    try:  # (a huge int has no float: OverflowError)
        v = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    except OverflowError:
        v = None
    if v is None or not math.isfinite(v):
        shown = (
            f"{value!r}"[:60]
            if not isinstance(value, int) or isinstance(value, bool)
            else "an integer out of range"
        )
        raise ValidationError(f"{name} must be a finite number, got {shown}")
    if v < low or (low_open and v == low):
        raise ValidationError(f"{name} must be {'>' if low_open else '>='} {low}, got {v}")
    if high is not None and v > high:
        raise ValidationError(f"{name} must be <= {high}, got {v}")
    return v


def _unit(value: object, name: str) -> float:
    return _number(value, name, low=0.0, high=1.0)


def _days(value: object, name: str) -> float:
    return _number(value, name, low=0.0, low_open=True)


# --- scores -------------------------------------------------------------------------------
def age_days(since: datetime, now: datetime) -> float:
    """Whole and fractional days from ``since`` to ``now``; never negative (clock skew)."""
    return max(0.0, (now - since).total_seconds() / _DAY)


def importance_forget_score(
    record: MemoryRecord, now: datetime, *, base_rate: float = 0.05
) -> float:
    """``base_rate · min(1, age_days/30) · (1 − importance)``."""
    time_factor = min(1.0, age_days(record.created_at, now) / 30.0)
    return base_rate * time_factor * (1.0 - record.importance)


def hotness(
    record: MemoryRecord, now: datetime, *, lookback_days: float = 30.0, hot_accesses: float = 5.0
) -> float:
    """How recently and how often the record was used, in [0, 1] (module docstring)."""
    age = age_days(record.created_at, now)
    if record.last_accessed_at is None or record.access_count <= 0:
        return max(0.0, 1.0 - age / lookback_days)
    since_access = age_days(record.last_accessed_at, now)
    recency = max(0.0, 1.0 - since_access / lookback_days)
    frequency = min(1.0, (record.access_count / max(1.0, age)) / hot_accesses)
    return 0.6 * recency + 0.4 * frequency


def hybrid_score(
    record: MemoryRecord,
    now: datetime,
    *,
    weights: tuple[float, float, float] = (0.4, 0.35, 0.25),
    max_age_days: float = 90.0,
    lookback_days: float = 30.0,
    hot_accesses: float = 5.0,
) -> float:
    """``0.4·min(1, age/90) + 0.35·(1 − importance) + 0.25·(1 − hotness)``."""
    w_time, w_importance, w_hot = weights
    time_score = min(1.0, age_days(record.created_at, now) / max_age_days)
    hot = hotness(record, now, lookback_days=lookback_days, hot_accesses=hot_accesses)
    return w_time * time_score + w_importance * (1.0 - record.importance) + w_hot * (1.0 - hot)


def forget_probability(score: float, *, steepness: float = 5.0, midpoint: float = 0.5) -> float:
    """The seed's sigmoid ``1 / (1 + exp(−5·(score − 0.5)))``."""
    return 1.0 / (1.0 + math.exp(-steepness * (score - midpoint)))


def decayed_importance(
    record: MemoryRecord, now: datetime, *, half_life_days: float = 90.0
) -> float:
    """``importance · 2^(−age_days / half_life)`` (seed 001's ``e^(−0.693/90·days)``)."""
    return record.importance * math.exp(-LN2 / half_life_days * age_days(record.created_at, now))


def decay_score(record: MemoryRecord, now: datetime, *, half_life_days: float = 90.0) -> float:
    """``2^(−days_since_last_use / half_life)``: 1 when just used, 0.5 after one half-life."""
    last = record.last_accessed_at or record.created_at
    if record.last_accessed_at is not None and record.created_at > last:
        last = record.created_at
    return math.exp(-LN2 / half_life_days * age_days(last, now))


def capacity_score(record: MemoryRecord, now: datetime, *, daily_decay: float = 0.95) -> float:
    """``importance · 0.95^age_days`` (seed 000's eviction order: lowest goes first)."""
    return record.importance * float(daily_decay ** age_days(record.created_at, now))


def is_protected(record: MemoryRecord) -> bool:
    """Never forgotten automatically: key memory, what the user set explicitly (their own
    notes and facts, corrections), records pinned with ``metadata["pinned"] = True``, and
    every type outside :data:`FORGETTABLE_TYPES` (raw messages, live tasks)."""
    if record.type not in FORGETTABLE_TYPES:
        return True
    if record.source in (Source.EXPLICIT_USER_INPUT, Source.CORRECTED_MEMORY):
        return True
    return record.metadata.get("pinned") is True


# --- policies -----------------------------------------------------------------------------
@runtime_checkable
class ForgettingPolicy(Protocol):
    """Decides, for a user's records at ``now``, which to keep, downgrade or forget."""

    @property
    def name(self) -> str: ...

    def decide_all(self, records: Sequence[MemoryRecord], now: datetime) -> list[Decision]: ...


def _keep_protected(record: MemoryRecord, policy: str) -> Decision:
    return Decision(record.id, Action.KEEP, policy, "protected", 0.0)


class _PerRecord:
    """A policy that looks at one record at a time."""

    name: str

    def decide(self, record: MemoryRecord, now: datetime) -> Decision:
        raise NotImplementedError

    def decide_all(self, records: Sequence[MemoryRecord], now: datetime) -> list[Decision]:
        return [
            _keep_protected(r, self.name) if is_protected(r) else self.decide(r, now)
            for r in records
        ]


@dataclass(frozen=True, slots=True)
class ImportancePolicy(_PerRecord):
    base_rate: float = 0.05
    threshold: float = 0.5
    name: str = field(default="importance", init=False)

    def __post_init__(self) -> None:
        _unit(self.base_rate, "base_rate")
        _unit(self.threshold, "threshold")

    def decide(self, record: MemoryRecord, now: datetime) -> Decision:
        score = importance_forget_score(record, now, base_rate=self.base_rate)
        if score > self.threshold:
            return Decision(
                record.id,
                Action.FORGET,
                self.name,
                f"importance forget score {score:.3f} > {self.threshold}",
                score,
            )
        return Decision(record.id, Action.KEEP, self.name, "below threshold", score)


@dataclass(frozen=True, slots=True)
class HotnessPolicy(_PerRecord):
    lookback_days: float = 30.0
    hot_accesses: float = 5.0
    downgrade_below: float = 0.2
    name: str = field(default="hotness", init=False)

    def __post_init__(self) -> None:
        _days(self.lookback_days, "lookback_days")
        _number(self.hot_accesses, "hot_accesses", low_open=True)
        _unit(self.downgrade_below, "downgrade_below")

    def decide(self, record: MemoryRecord, now: datetime) -> Decision:
        hot = hotness(record, now, lookback_days=self.lookback_days, hot_accesses=self.hot_accesses)
        if hot < self.downgrade_below:
            return Decision(
                record.id,
                Action.DOWNGRADE,
                self.name,
                f"hotness {hot:.3f} < {self.downgrade_below}",
                hot,
            )
        return Decision(record.id, Action.KEEP, self.name, "warm", hot)


@dataclass(frozen=True, slots=True)
class HybridPolicy(_PerRecord):
    threshold: float = 0.6
    weights: tuple[float, float, float] = (0.4, 0.35, 0.25)
    max_age_days: float = 90.0
    lookback_days: float = 30.0
    hot_accesses: float = 5.0
    name: str = field(default="hybrid", init=False)

    def __post_init__(self) -> None:
        _unit(self.threshold, "threshold")
        if len(self.weights) != 3:
            raise ValidationError("weights must be three numbers (time, importance, hotness)")
        for w in self.weights:
            _unit(w, "weight")
        if abs(sum(self.weights) - 1.0) > 1e-9:
            raise ValidationError(f"weights must add up to 1, got {sum(self.weights)}")
        _days(self.max_age_days, "max_age_days")
        _days(self.lookback_days, "lookback_days")
        _number(self.hot_accesses, "hot_accesses", low_open=True)

    def decide(self, record: MemoryRecord, now: datetime) -> Decision:
        score = hybrid_score(
            record,
            now,
            weights=self.weights,
            max_age_days=self.max_age_days,
            lookback_days=self.lookback_days,
            hot_accesses=self.hot_accesses,
        )
        probability = forget_probability(score)
        if score > self.threshold:
            return Decision(
                record.id,
                Action.FORGET,
                self.name,
                f"hybrid score {score:.3f} > {self.threshold}",
                score,
                probability,
            )
        return Decision(record.id, Action.KEEP, self.name, "below threshold", score, probability)


@dataclass(frozen=True, slots=True)
class ExponentialDecayPolicy(_PerRecord):
    half_life_days: float = 90.0
    delete_below: float = 0.1
    min_age_days: float = 30.0
    name: str = field(default="exponential", init=False)

    def __post_init__(self) -> None:
        _days(self.half_life_days, "half_life_days")
        _unit(self.delete_below, "delete_below")
        _number(self.min_age_days, "min_age_days")

    def decide(self, record: MemoryRecord, now: datetime) -> Decision:
        value = decayed_importance(record, now, half_life_days=self.half_life_days)
        old_enough = age_days(record.created_at, now) >= self.min_age_days
        if old_enough and value < self.delete_below:
            return Decision(
                record.id,
                Action.FORGET,
                self.name,
                f"decayed importance {value:.3f} < {self.delete_below}",
                value,
            )
        return Decision(record.id, Action.KEEP, self.name, "important enough", value)


@dataclass(frozen=True, slots=True)
class DecayScorePolicy(_PerRecord):
    half_life_days: float = 90.0
    forget_below: float = 0.2
    name: str = field(default="decay", init=False)

    def __post_init__(self) -> None:
        _days(self.half_life_days, "half_life_days")
        _unit(self.forget_below, "forget_below")

    def decide(self, record: MemoryRecord, now: datetime) -> Decision:
        value = decay_score(record, now, half_life_days=self.half_life_days)
        if value < self.forget_below:
            return Decision(
                record.id,
                Action.FORGET,
                self.name,
                f"decay score {value:.3f} < {self.forget_below}",
                value,
            )
        return Decision(record.id, Action.KEEP, self.name, "fresh enough", value)


@dataclass(frozen=True, slots=True)
class TimePolicy(_PerRecord):
    max_age_days: float = 90.0
    importance_below: float = 0.7
    name: str = field(default="time", init=False)

    def __post_init__(self) -> None:
        _days(self.max_age_days, "max_age_days")
        _unit(self.importance_below, "importance_below")

    def decide(self, record: MemoryRecord, now: datetime) -> Decision:
        age = age_days(record.created_at, now)
        if age > self.max_age_days and record.importance < self.importance_below:
            return Decision(
                record.id,
                Action.FORGET,
                self.name,
                f"{age:.0f} days old and importance {record.importance:.2f} < "
                f"{self.importance_below}",
                age,
            )
        return Decision(record.id, Action.KEEP, self.name, "recent or important", age)


@dataclass(frozen=True, slots=True)
class CapacityPolicy:
    """Keep at most ``max_records`` (protected records count, but are never evicted)."""

    max_records: int = 1000
    daily_decay: float = 0.95
    name: str = field(default="capacity", init=False)

    def __post_init__(self) -> None:
        if (
            isinstance(self.max_records, bool)
            or not isinstance(self.max_records, int)
            or self.max_records < 1
        ):
            raise ValidationError(f"max_records must be an integer >= 1, got {self.max_records!r}")
        _number(self.daily_decay, "daily_decay", low=0.0, high=1.0, low_open=True)

    def decide_all(self, records: Sequence[MemoryRecord], now: datetime) -> list[Decision]:
        scores = {r.id: capacity_score(r, now, daily_decay=self.daily_decay) for r in records}
        excess = len(records) - self.max_records
        candidates = sorted(
            (r for r in records if not is_protected(r)),
            key=lambda r: (scores[r.id], r.created_at, r.id),
        )
        evicted = {r.id for r in candidates[: max(0, excess)]}
        out = []
        for r in records:
            if is_protected(r):
                out.append(_keep_protected(r, self.name))
            elif r.id in evicted:
                out.append(
                    Decision(
                        r.id,
                        Action.FORGET,
                        self.name,
                        f"over capacity {self.max_records}; score "
                        f"{scores[r.id]:.3f} among the lowest",
                        scores[r.id],
                    )
                )
            else:
                out.append(Decision(r.id, Action.KEEP, self.name, "within capacity", scores[r.id]))
        return out


_SEVERITY = {Action.KEEP: 0, Action.DOWNGRADE: 1, Action.FORGET: 2}


@dataclass(frozen=True, slots=True)
class CompositePolicy:
    """Several policies at once: a record gets the strongest action any of them decides
    (forget over downgrade over keep); ties go to the first policy listed."""

    policies: tuple[ForgettingPolicy, ...]
    name: str = "default"

    def __post_init__(self) -> None:
        if not self.policies:
            raise ValidationError("a composite policy needs at least one policy")

    def decide_all(self, records: Sequence[MemoryRecord], now: datetime) -> list[Decision]:
        best: list[Decision] | None = None
        for policy in self.policies:
            decisions = policy.decide_all(records, now)
            if best is None:
                best = decisions
                continue
            best = [
                d if _SEVERITY[d.action] > _SEVERITY[b.action] else b
                for b, d in zip(best, decisions, strict=True)
            ]
        return best or []


def explicit_forget(record_ids: Sequence[str], reason: str = "explicit request") -> list[Decision]:
    """The user (or a compliance request) asked: forget these, whatever their scores."""
    return [Decision(i, Action.FORGET, "explicit", reason, 1.0) for i in record_ids]


def importance_by_tag_args(tag: object, importance: object) -> tuple[str, float]:
    """``tag`` and ``importance`` of :func:`with_importance_by_tag`, checked (before the
    caller reads a record by that tag)."""
    if not isinstance(tag, str) or not tag.strip():
        raise ValidationError("tag must be a non-empty string")
    (tag,) = check_tags([tag], "tag")
    return tag, _unit(importance, "importance")


def with_importance_by_tag(
    records: Sequence[MemoryRecord], tag: str, importance: float, now: datetime
) -> list[MemoryRecord]:
    """New versions of the records tagged ``tag`` with ``importance`` (seed 000's
    ``batch_set_importance``); records already at that importance are left out."""
    tag, value = importance_by_tag_args(tag, importance)
    return [
        replace(r, importance=value, version=r.version + 1, updated_at=now)
        for r in records
        if tag in r.tags and r.importance != value
    ]


# --- registry -----------------------------------------------------------------------------
_FACTORIES: Mapping[str, type] = {
    "importance": ImportancePolicy,
    "hotness": HotnessPolicy,
    "hybrid": HybridPolicy,
    "exponential": ExponentialDecayPolicy,
    "decay": DecayScorePolicy,
    "time": TimePolicy,
    "capacity": CapacityPolicy,
}

#: The default maintenance policy: hybrid forgetting (seed 000 §10), seed 003's decay-score
#: floor and hotness downgrades.
DEFAULT_POLICY = "default"
POLICY_NAMES: tuple[str, ...] = (DEFAULT_POLICY, *sorted(_FACTORIES))


def make_policy(name: str | ForgettingPolicy, **params: object) -> ForgettingPolicy:
    """A policy by name (``memstrata maintain --policy NAME``) with optional parameters."""
    if isinstance(name, ForgettingPolicy) and not isinstance(name, str):
        if params:
            raise ValidationError("parameters only apply to a policy given by name")
        return name
    if not isinstance(name, str):
        raise ValidationError(f"policy must be a name or a ForgettingPolicy, got {name!r}")
    if name == DEFAULT_POLICY:
        if params:
            raise ValidationError(
                "the default policy takes no parameters; build a CompositePolicy to tune it"
            )
        return CompositePolicy((HybridPolicy(), DecayScorePolicy(), HotnessPolicy()))
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ValidationError(
            f"unknown forgetting policy {name!r}; use one of: {', '.join(POLICY_NAMES)}"
        )
    try:
        policy: ForgettingPolicy = factory(**params)
    except TypeError as exc:
        raise ValidationError(f"bad parameters for policy {name!r}: {exc}") from None
    return policy
