"""assemble's copy of a kept item with its cost carries every field (it is written out
instead of ``dataclasses.replace`` for speed), and the token estimate's ASCII shortcut
counts as its general path does."""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from memstrata.context.assemble import ContextItem, _with_tokens
from memstrata.tokens import estimate_tokens


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


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=300))
def test_ascii_shortcut_counts_as_the_general_path(text: str) -> None:
    """An ASCII text is counted without the non-ASCII patterns; one Cyrillic letter more
    (0.4 of a token, tokens.py) sends it down the general path, which must agree."""
    n = estimate_tokens(text)
    assert estimate_tokens(text + "\u0439") - n in (0, 1)
