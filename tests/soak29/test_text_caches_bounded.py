"""The module-level caches of users' texts are bounded in bytes, not only in entries
(session 29).

``fts5.tokens`` kept 200,000 terms and ``tokens.estimate_tokens`` 8,192 texts, whatever
their length; a term or a text may be 100,000 characters long (a record's limit), so a
long-running server fed long distinct texts kept gigabytes. Long ones are now computed at
each call instead. Each test feeds long distinct texts and asserts what stays allocated.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime

from memstrata.store import fts5
from memstrata.tokens import estimate_tokens
from memstrata.traces import forget_words

LONG = 20_000  # characters of each text
TEXTS = 200  # distinct ones: 4 MB of text, ~12 MB kept before


def _kept(call: Callable[[str], object], make: Callable[[int], str]) -> int:
    """Bytes still allocated after ``call`` on TEXTS distinct long texts (the caches emptied
    first, so a full cache evicting older entries cannot hide the growth). Each text is made
    at its call and dropped after it: only a cache keeps it."""
    forget_words()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(TEXTS):
            call(make(i))
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        forget_words()


def test_fts5_does_not_keep_long_terms() -> None:
    kept = _kept(fts5.tokens, lambda i: "ü" + "x" * LONG + str(i))  # not plain: asks FTS5
    assert kept < 1_000_000
    # still tokenised right: one token, bounded as every word over 1,000 bytes is since
    # session 31 (audit31: its start and a hash, fts5.bounded)
    assert fts5.tokens("ü" + "x" * LONG) == (fts5.bounded("ü" + "x" * LONG),)
    assert fts5.tokens("ü" + "x" * 500) == ("ü" + "x" * 500,)


def test_token_estimates_do_not_keep_long_texts() -> None:
    kept = _kept(estimate_tokens, lambda i: f"word{i} " * (LONG // 6))
    assert kept < 1_000_000
    text = "word " * (LONG // 5)
    assert estimate_tokens(text) == estimate_tokens(text + "")  # the same count, uncached


def test_context_builder_does_not_keep_long_texts() -> None:
    from memstrata.context import builder

    at = datetime(2026, 1, 1, tzinfo=UTC)

    def each(text: str) -> None:
        builder._terms(text)
        builder._resolved(text, at)
        builder._question_share(text + "?")

    kept = _kept(each, lambda i: f"what about word{i} " * (LONG // 18))
    assert kept < 1_000_000
