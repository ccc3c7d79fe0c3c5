"""Sentence splitting and word counting that treat Chinese/Japanese text fairly."""

from __future__ import annotations

import re

__all__ = ["cjk_ratio", "is_cjk", "split_sentences", "truncate_words", "word_count"]

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[^\W\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_SENTENCE = re.compile(r"[^.!?。！？；;\n]+(?:[.!?。！？；;]+|$)", re.MULTILINE)
# A Chinese "word" is about 1.5 characters, so 1.5 characters count as one word.
CJK_CHARS_PER_WORD = 1.5


def cjk_ratio(text: str) -> float:
    letters = sum(1 for c in text if c.isalnum())
    return len(_CJK.findall(text)) / letters if letters else 0.0


def is_cjk(text: str) -> bool:
    return cjk_ratio(text) >= 0.3


def word_count(text: str) -> float:
    """Latin-script words plus CJK characters / 1.5."""
    return len(_LATIN_WORD.findall(text)) + len(_CJK.findall(text)) / CJK_CHARS_PER_WORD


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def truncate_words(text: str, max_words: float) -> str:
    """The longest prefix of ``text`` whose :func:`word_count` is at most ``max_words``."""
    if word_count(text) <= max_words:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # binary search on the prefix length; word_count is monotone in it
        mid = (lo + hi + 1) // 2
        if word_count(text[:mid]) <= max_words:
            lo = mid
        else:
            hi = mid - 1
    cut = text[:lo]
    if not is_cjk(cut) and " " in cut and lo < len(text) and text[lo].isalnum():
        cut = cut.rsplit(" ", 1)[0]  # do not end on half a word
    return cut.rstrip(" ,;:，、") + "…"
