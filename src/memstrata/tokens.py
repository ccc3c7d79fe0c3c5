"""Token counting: a real tokenizer when one is configured, else a calibrated estimate.

The estimate errs towards over-counting, so that a context built with it stays inside the
budget for today's BPE tokenizers. It is calibrated against OpenAI's ``o200k_base`` (GPT-4o
and later), per kind of character (docs/measurements.md, "twenty-fourth session"):

- a Latin word costs a token per 4.5 letters, at least one token (an accented letter 0.3
  more), and a space a quarter;
- a run of digits a token per three digits (and a space before it a whole token), ASCII
  punctuation 0.8;
- CJK characters (Han, kana, Hangul, their punctuation) 1.0 each, Indic and Southeast Asian
  letters (Devanagari … Sinhala, Thai, Lao, Tibetan, Myanmar, Khmer) 0.5, Cyrillic 0.4,
  Greek, Armenian, Hebrew, Arabic, Syriac and Thaana 0.5, anything else (emoji, symbols)
  1.5.

Before session 24 it counted CJK at 1.5 characters per token and everything else at 4,
which ``o200k_base`` exceeds on every script but English and its neighbours (Chinese by
22%, Thai, Greek and Hebrew by half, emoji and identifiers by about double) and the older
``cl100k_base`` (GPT-4, GPT-3.5) by up to four times. ``cl100k_base`` still counts more
than this estimate outside English (Chinese 1.3x, Hindi 2.1x): count with
``tiktoken_counter("cl100k_base")`` for such models.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import lru_cache
from itertools import repeat
from typing import Protocol

from memstrata.traces import keeps_words

__all__ = ["TokenCounter", "count_tokens", "estimate_tokens", "tiktoken_counter"]

_ACCENTED = "\u00c0-\u024f\u1e00-\u1eff\u0300-\u036f"  # Latin-1 … Extended, marks
_WORD = re.compile(f"[A-Za-z{_ACCENTED}]+")
_DIGITS = re.compile("[0-9]+")
_SPACED_DIGITS = re.compile(" [0-9]")  # a space before digits is a token of its own
_ACCENT = re.compile(f"[{_ACCENTED}]")
# Other non-ASCII characters by kind, with their cost in tokens (o200k_base, rounded up).
_KINDS: tuple[tuple[re.Pattern[str], float], ...] = (
    (
        re.compile(
            "[\\u1100-\\u11ff\\u3000-\\u30ff\\u3130-\\u318f\\u3400-\\u4dbf\\u4e00-\\u9fff"
            "\\uac00-\\ud7af\\uf900-\\ufaff\\uff00-\\uffef]"
        ),
        1.0,
    ),
    (re.compile("[\\u0900-\\u0fff\\u1000-\\u109f\\u1780-\\u17ff]"), 0.5),
    (re.compile("[\\u0400-\\u052f]"), 0.4),
    (re.compile("[\\u0370-\\u03ff\\u0530-\\u07ff]"), 0.5),
)
_OTHER = 1.5  # a non-ASCII character of no kind above: emoji, symbols, other scripts


class TokenCounter(Protocol):
    def __call__(self, text: str) -> int: ...


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` takes, over-counted rather than under (see the module docstring)."""
    if not text:
        return 0
    return _estimate(text) if len(text) <= _CACHED_TEXT_CHARS else _count(text)


# build_context counts the same records' texts build after build (100-300 per build, ~5-20
# us each): the counts are kept, and emptied with the process's other copies of users'
# words at a purge (memstrata.traces). Only texts up to _CACHED_TEXT_CHARS: the cache's
# 8,192 entries are bounded in number, and a text may be 100,000 characters (800 MB for
# 8,192 of them; session 29). A longer one is counted at each call.
_CACHED_TEXT_CHARS = 4096


def _count(text: str) -> int:
    lengths = list(map(len, _WORD.findall(text)))
    runs = list(map(len, _DIGITS.findall(text)))
    digits = sum(runs)
    spaced = len(_SPACED_DIGITS.findall(text)) if runs else 0
    spaces = text.count(" ") + text.count("\n") + text.count("\t")
    ascii_count = len(text) if text.isascii() else len(text.encode("ascii", "ignore"))
    latin = sum(lengths)
    cost = (sum(map(max, lengths, repeat(4.5))) - len(lengths)) / 4.5  # a word: >= 1 token
    cost += sum((run + 2) // 3 for run in runs) + spaced * 0.75 + spaces / 4.0
    if ascii_count == len(text):
        return math.ceil(cost + 0.8 * (len(text) - latin - digits - spaces))
    accented = len(_ACCENT.findall(text))  # letters of the words above, 0.3 more each
    cost += 0.3 * accented
    rest = len(text) - ascii_count - accented
    for pattern, weight in _KINDS:
        found = len(pattern.findall(text))
        cost += weight * found
        rest -= found
    punct = ascii_count - (latin - accented) - digits - spaces
    return math.ceil(cost + 0.8 * punct + _OTHER * max(0, rest))


_estimate = lru_cache(maxsize=8192)(_count)
keeps_words(_estimate.cache_clear)


def count_tokens(text: str, counter: TokenCounter | None = None) -> int:
    return (counter or estimate_tokens)(text)


def tiktoken_counter(encoding: str = "cl100k_base") -> Callable[[str], int]:
    """A counter backed by ``tiktoken`` (needs the package and its encoding files)."""
    try:
        import tiktoken  # type: ignore[import-not-found]
    except ImportError:
        from .errors import MissingDependencyError

        raise MissingDependencyError(
            "tiktoken is not installed: pip install tiktoken, or use the built-in estimate"
        ) from None
    enc = tiktoken.get_encoding(encoding)
    return lambda text: len(enc.encode(text, disallowed_special=()))
