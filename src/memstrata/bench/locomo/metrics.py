"""LoCoMo's measures as pure functions.

- evidence recall@k = |gold ∩ covered(top k)| / |gold|, where covered(top k) is the set of
  ``dia_id``s of every message a top-k hit came from (its ``source_ids``);
- answer recall in context = |T(answer) ∩ T(context)| / |T(answer)|, where T is LoCoMo's
  normalisation (``task_eval/evaluation.py``): drop commas, lower-case, drop punctuation,
  drop the words a/an/the/and (LoCoMo's code removes "and" too), split on whitespace,
  Porter-stem each token (nltk's ``PorterStemmer``, which needs no download); a word that
  holds Chinese (or other CJK) characters counts by its character bigrams instead;
- p50/p95 by linear interpolation between closest ranks (numpy's default).
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

__all__ = [
    "answer_recall",
    "answer_tokens",
    "context_tokens",
    "covered_dia_ids",
    "evidence_recall",
    "mean",
    "normalize_answer",
    "percentile",
    "summarize_by_category",
]

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    from nltk.stem import PorterStemmer  # type: ignore[import-untyped]

    return PorterStemmer()


def normalize_answer(text: str) -> str:
    """LoCoMo's ``normalize_answer``: lower, strip punctuation and a/an/the/and, squash spaces."""
    text = str(text).replace(",", "")
    text = text.lower().translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


@lru_cache(maxsize=65536)
def _stem(token: str) -> str:
    return str(_stemmer().stem(token))


_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")


def _bigrams(word: str) -> list[str]:
    """Character bigrams of each punctuation-free stretch of ``word`` (a lone char: itself)."""
    out: list[str] = []
    part: list[str] = []
    for ch in [*word, "。"]:
        if not unicodedata.category(ch).startswith(("P", "S")):
            part.append(ch)
            continue
        if len(part) == 1:
            out.append(part[0])
        out.extend(part[i] + part[i + 1] for i in range(len(part) - 1))
        part = []
    return out


def answer_tokens(text: str) -> list[str]:
    """Normalised, Porter-stemmed tokens of an answer (duplicates kept, order kept).

    A word with CJK characters in it (Chinese is written without spaces) becomes the
    character bigrams of its stretches between punctuation: ``"2024年5月8日"`` →
    ``20, 02, 24, 4年, ...``.
    """
    out: list[str] = []
    for word in normalize_answer(text).split():
        out.extend(_bigrams(word) if _CJK.search(word) else [_stem(word)])
    return out


def context_tokens(text: str) -> frozenset[str]:
    return frozenset(answer_tokens(text))


def answer_recall(answer: str, context: str | frozenset[str]) -> float | None:
    """Share of the answer's normalised tokens present in the context; None for no tokens."""
    gold = answer_tokens(answer)
    if not gold:
        return None
    have = context if isinstance(context, frozenset) else context_tokens(context)
    return sum(1 for t in gold if t in have) / len(gold)


def covered_dia_ids(
    hit_source_ids: Sequence[Sequence[str]], id_to_dia: Mapping[str, str], k: int
) -> set[str]:
    """The ``dia_id``s the first ``k`` hits cover through their ``source_ids``."""
    out: set[str] = set()
    for sources in hit_source_ids[:k]:
        for sid in sources:
            dia = id_to_dia.get(sid)
            if dia is not None:
                out.add(dia)
    return out


def evidence_recall(gold: Iterable[str], covered: set[str]) -> float | None:
    """|gold ∩ covered| / |gold|; None when the question has no evidence (it is skipped)."""
    g = set(gold)
    if not g:
        return None
    return len(g & covered) / len(g)


def mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0–100) by linear interpolation; None for no values."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summarize_by_category(
    rows: Iterable[tuple[int, float | None]],
) -> dict[str, dict[str, float | int | None]]:
    """Mean and count per category id (as a string key) and ``"all"``; None values skipped."""
    buckets: dict[str, list[float]] = defaultdict(list)
    for cat, value in rows:
        if value is None:
            continue
        buckets[str(cat)].append(value)
        buckets["all"].append(value)
    out: dict[str, dict[str, float | int | None]] = {}
    for key in sorted(buckets, key=lambda k: (k == "all", k)):
        vals = buckets[key]
        out[key] = {"mean": sum(vals) / len(vals), "n": len(vals)}
    return out
