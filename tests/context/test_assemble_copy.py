"""assemble's copy of a kept item with its cost carries every field (it is written out
instead of ``dataclasses.replace`` for speed), and the token estimate's ASCII shortcut
counts as the pattern does."""

from __future__ import annotations

import math
from dataclasses import fields, replace
from datetime import UTC, datetime

from memstrata.context.assemble import ContextItem, _with_tokens
from memstrata.tokens import _CJK, estimate_tokens


def test_every_field_is_carried() -> None:
    values: dict[str, object] = {
        "block": "relevant",
        "text": "said once",
        "layer": "messages",
        "score": 0.25,
        "record_id": "r1",
        "source_ids": ("r1", "r0"),
        "observed_at": datetime(2024, 5, 3, tzinfo=UTC),
        "priority": 2,
        "tokens": 3,
        "group": "3 May 2024",
        "digest": True,
    }
    assert {f.name for f in fields(ContextItem)} == set(values), "a new field: copy it too"
    item = ContextItem(**values)  # type: ignore[arg-type]
    assert _with_tokens(item, 11) == replace(item, tokens=11)


def test_ascii_shortcut_counts_as_the_pattern() -> None:
    for text in ["", "a", "abcd", "abcde", "x" * 401, "tabs\tand\nnewlines", "😀 no", "你好 hi"]:
        cjk = len(_CJK.findall(text))
        expected = math.ceil(cjk / 1.5 + (len(text) - cjk) / 4.0) if text else 0
        assert estimate_tokens(text) == expected
