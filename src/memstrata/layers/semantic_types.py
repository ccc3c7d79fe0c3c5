"""Semantic memory's pure values and conflict rules (no store); re-exported by
:mod:`memstrata.layers.semantic`."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from memstrata.audit_types import PURGED
from memstrata.llm._language import is_cjk
from memstrata.records import Content, MemoryRecord
from memstrata.text import content_hash

# ``metadata["origin"]`` of a fact the semantic layer extracted from the user's turns: it
# repeats their words, so it follows them when they go (rederive.py); a fact without it was
# set by the user (``mem.facts.upsert``, ``mem.add``) and keeps its value.
EXTRACTED = "extracted"

__all__ = [
    "EXTRACTED",
    "FactAction",
    "FactDecision",
    "FactOutcome",
    "current_rank",
    "decide",
    "fact_sources",
    "fact_text",
    "fact_value",
    "fact_without",
    "holds",
    "is_expired",
    "is_set_key",
    "same_value",
]


class FactAction(StrEnum):
    INSERTED = "inserted"
    CONFIRMED = "confirmed"
    REPLACED = "replaced"
    CONFLICT = "conflict"
    UNCHANGED = "unchanged"  # the same evidence seen again (an ingest job run twice)
    EARLIER = "earlier"  # a value said before the current one began: kept in the history


@dataclass(frozen=True, slots=True)
class FactDecision:
    action: FactAction
    confidence: float  # of the fact that is current afterwards
    mentions: int


_PREFERENCES = frozenset({"likes", "dislikes", "prefers"})


def fact_text(
    key: str, value: str, conflicts: Sequence[Mapping[str, Any]] = (), *, ended: bool = False
) -> str:
    """What a fact reads as, in search and in context: ``"allergy: peanuts"``. A preference's
    key names its object, so that several stay apart (``likes_hiking``, ``likes_jazz``); its
    text does not say it twice (``"likes: hiking"``, not ``"likes_hiking: hiking"``). Other
    values the user said that did not replace it (``conflicts``, the newest two) are shown
    with it, so a reader sees both: ``"location: Paris (also said: Lyon)"``. A value the user
    said no longer holds (``ended``) reads ``"location: no longer Berlin"`` (不再是柏林)."""
    if ended:
        value = f"不再是{value}" if is_cjk(value) else f"no longer {value}"
    head, sep, _ = key.partition("_")
    text = f"{head}: {value}" if sep and head in _PREFERENCES else f"{key}: {value}"
    others = list(
        dict.fromkeys(
            str(c["value"])
            for c in reversed(conflicts)
            if "value" in c and not same_value(str(c["value"]), value)
        )
    )[:2]
    if not others:
        return text
    if is_cjk(value + "".join(others)):
        return f"{text}（也说过：{'、'.join(others)}）"
    return f"{text} (also said: {', '.join(others)})"


def same_value(a: str, b: str) -> bool:
    return " ".join(a.casefold().split()) == " ".join(b.casefold().split())


def holds(value: str, left: str) -> bool:
    """Whether a fact's ``value`` names ``left``, a value the user says they left: the same
    value, or one that contains it ("去金锅小炒吃火锅" holds "金锅小炒")."""
    needle = " ".join(left.casefold().split())
    return len(needle) >= 2 and needle in " ".join(value.casefold().split())


# A fact that carries out a plan, by key: the plan's key. "I moved to Porto" carries out
# "moving_to: Porto, next month", which then ends, superseded by the move.
PLANS: Mapping[str, str] = {"location": "moving_to"}


def carries_out(plan_value: str, value: str) -> bool:
    """Whether ``value`` ("Porto") is the place of a planned value ("Porto, next month"; the
    plan's when follows its place after ", ")."""
    return same_value(plan_value.partition(", ")[0], value)


def is_set_key(key: str) -> bool:
    """A key one of several values share (``likes_hiking``, ``likes_jazz``), not a slot
    with one current value (``location``, ``favorite_city``)."""
    return key.partition("_")[0] in _PREFERENCES


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
    current_left: bool = False,
    current_ended: bool = False,
    incoming_ended: bool = False,
    confirm_step: float = 0.05,
) -> FactDecision:
    """Seed 001's conflict rules (pure); see the module docstring. ``current_left``: the
    statement says the user left the current value ("I've stopped going to X"), which
    replaces it whatever the confidences.

    ``incoming_ended``: the statement says its value no longer holds ("I no longer live in
    Berlin"); it ends a current value that holds it (replaced by the ended fact, whatever the
    confidences), confirms an ended one of the same value, and leaves any other value alone
    (``UNCHANGED``: nothing it says is about the current value). ``current_ended``: the
    current fact is such an ending, which any value the user then states replaces."""
    if current_value is None:
        return FactDecision(FactAction.INSERTED, incoming_confidence, 1)
    if incoming_ended:
        if current_ended and same_value(current_value, incoming_value):
            return FactDecision(
                FactAction.CONFIRMED,
                round(min(1.0, current_confidence + confirm_step), 6),
                current_mentions + 1,
            )
        if not current_ended and holds(current_value, incoming_value):
            return FactDecision(FactAction.REPLACED, incoming_confidence, 1)
        return FactDecision(FactAction.UNCHANGED, current_confidence, current_mentions)
    if current_ended:
        return FactDecision(FactAction.REPLACED, incoming_confidence, 1)
    if same_value(current_value, incoming_value) and not current_expired:
        return FactDecision(
            FactAction.CONFIRMED,
            round(min(1.0, current_confidence + confirm_step), 6),
            current_mentions + 1,
        )
    if current_expired or current_left or incoming_confidence > current_confidence:
        return FactDecision(FactAction.REPLACED, incoming_confidence, 1)
    return FactDecision(FactAction.CONFLICT, current_confidence, current_mentions)


@dataclass(frozen=True, slots=True)
class FactOutcome:
    action: FactAction
    record: MemoryRecord  # the current fact afterwards
    # the superseded version, when replaced; the value stored in the history, when earlier
    previous: MemoryRecord | None = None


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


def fact_sources(record: MemoryRecord) -> tuple[str, ...]:
    """The turns a fact repeats: its value's sources and every recorded conflict's (a
    conflict keeps the value and sentence another turn said)."""
    ids = list(record.source_ids)
    for conflict in record.content.structured.get("conflicts", []):
        ids.extend(str(i) for i in conflict.get("source_ids", []))
    return tuple(dict.fromkeys(ids))


def fact_without(
    record: MemoryRecord,
    gone: Collection[str],
    when: datetime,
    note: dict[str, Any],
    *,
    user_set: bool,
) -> MemoryRecord | None:
    """``record`` as its next version once the turns ``gone`` are gone: the conflicts they
    said are dropped; the value stays while a kept turn supports it or the user set it
    (its sentence goes with its last turn); an extracted value with no turn left gives way
    to the newest conflict left (a value the user also said), else ``None`` (nothing left
    to say it; the caller reinstates the fact it replaced). ``user_set``: the value is the
    user's own (see ``rederive._user_set``)."""
    data = dict(record.content.structured)
    conflicts = [
        {**c, "source_ids": left}
        for c in data.get("conflicts", [])
        if (left := [i for i in c.get("source_ids", []) if i not in gone])
        or not c.get("source_ids")
    ]
    link = data.get("replaces")  # the fact this one superseded: a link, not a turn
    turns = [i for i in record.source_ids if i != link]
    kept = tuple(i for i in turns if i not in gone)
    text, confidence = record.text, record.confidence
    if turns and not kept:
        if user_set:
            data["evidence"] = None  # the user's value stays; the purged sentence does not
        elif conflicts:
            newest = max(conflicts, key=lambda c: str(c.get("observed_at", "")))
            conflicts.remove(newest)
            kept = tuple(newest["source_ids"])
            confidence = float(newest.get("confidence", confidence))
            data.pop("ended", None)  # a value the user said, not the one they left
            data.update(
                value=newest["value"],
                evidence=newest.get("evidence"),
                confidence=confidence,
                mentions=1,
                last_updated=newest.get("observed_at", data.get("last_updated")),
            )
        else:
            return None
    if link and link not in gone and link != PURGED:  # a purged value: cited no more
        kept = (*kept, link)
    if "key" in data and "value" in data:  # written by the fact layer: "key: value (...)"
        text = fact_text(
            str(data["key"]), str(data["value"]), conflicts, ended=data.get("ended") is True
        )
    if "conflicts" in data:
        data["conflicts"] = conflicts
    return replace(
        record,
        version=record.version + 1,
        updated_at=when,
        confidence=confidence,
        source_ids=kept,
        content=Content(text, record.content.summary, data),
        content_hash=content_hash(text),
        metadata={**record.metadata, "refreshed": {**note, "left": len(kept)}},
    )


def current_rank(record: MemoryRecord) -> tuple[float, datetime, datetime, str]:
    """Which of a key's live facts is current: the most confident, then the one updated
    last, then the one created last, then the greatest id (an order every reader agrees
    on)."""
    return (record.confidence, record.updated_at, record.created_at, record.id)


def fact_value(record: MemoryRecord) -> str:
    """The value a fact record holds: its ``structured["value"]`` as the fact layer writes
    it, or for a fact written otherwise (``add(..., type="fact")``, an import) its text,
    without a leading ``"<key>: "`` (the fact layer's own text form)."""
    value = record.content.structured.get("value")
    if value is not None:
        return str(value)
    key = record.metadata.get("key")
    raw = record.content.raw
    return raw.removeprefix(f"{key}: ") if isinstance(key, str) else raw
