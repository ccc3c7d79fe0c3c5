"""Semantic memory's pure values and conflict rules (no store); re-exported by
:mod:`memstrata.layers.semantic`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from memstrata.records import MemoryRecord

__all__ = [
    "FactAction",
    "FactDecision",
    "FactOutcome",
    "decide",
    "fact_text",
    "is_expired",
    "same_value",
]


class FactAction(StrEnum):
    INSERTED = "inserted"
    CONFIRMED = "confirmed"
    REPLACED = "replaced"
    CONFLICT = "conflict"
    UNCHANGED = "unchanged"  # the same evidence seen again (an ingest job run twice)


@dataclass(frozen=True, slots=True)
class FactDecision:
    action: FactAction
    confidence: float  # of the fact that is current afterwards
    mentions: int


_PREFERENCES = frozenset({"likes", "dislikes", "prefers"})


def fact_text(key: str, value: str) -> str:
    """What a fact reads as, in search and in context: ``"allergy: peanuts"``. A preference's
    key names its object, so that several stay apart (``likes_hiking``, ``likes_jazz``); its
    text does not say it twice (``"likes: hiking"``, not ``"likes_hiking: hiking"``)."""
    head, sep, _ = key.partition("_")
    if sep and head in _PREFERENCES:
        return f"{head}: {value}"
    return f"{key}: {value}"


def same_value(a: str, b: str) -> bool:
    return " ".join(a.casefold().split()) == " ".join(b.casefold().split())


def is_expired(expires_at: datetime | None, now: datetime) -> bool:
    return expires_at is not None and expires_at < now


def decide(
    current_value: str | None,
    current_confidence: float,
    current_mentions: int,
    incoming_value: str,
    incoming_confidence: float,
    *,
    current_expired: bool = False,
    confirm_step: float = 0.05,
) -> FactDecision:
    """Seed 001's conflict rules (pure); see the module docstring."""
    if current_value is None:
        return FactDecision(FactAction.INSERTED, incoming_confidence, 1)
    if same_value(current_value, incoming_value) and not current_expired:
        return FactDecision(
            FactAction.CONFIRMED,
            round(min(1.0, current_confidence + confirm_step), 6),
            current_mentions + 1,
        )
    if current_expired or incoming_confidence > current_confidence:
        return FactDecision(FactAction.REPLACED, incoming_confidence, 1)
    return FactDecision(FactAction.CONFLICT, current_confidence, current_mentions)


@dataclass(frozen=True, slots=True)
class FactOutcome:
    action: FactAction
    record: MemoryRecord  # the current fact afterwards
    previous: MemoryRecord | None = None  # the superseded version, when replaced


def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when else None


def _expires(record: MemoryRecord) -> datetime | None:
    raw = record.content.structured.get("expires_at")
    return datetime.fromisoformat(raw) if isinstance(raw, str) else None


def _seen(record: MemoryRecord) -> set[str]:
    """Every source id this fact has already taken into account (value or conflicts)."""
    seen = set(record.source_ids)
    for conflict in record.content.structured.get("conflicts", []):
        seen.update(conflict.get("source_ids", []))
    return seen
