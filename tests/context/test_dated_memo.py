"""The builder keeps each turn's resolved dates and question share between builds (the same
turns come back build after build); what it keeps is what computing gives (dates per zone),
and a purge drops it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from memstrata.context import builder
from memstrata.context.question_turns import question_share
from memstrata.context.relative import annotate_relative_dates


def test_kept_text_is_the_resolved_text_in_each_zone() -> None:
    builder.forget_texts()
    text = "We met yesterday at the lake."
    late_utc = datetime(2024, 5, 8, 23, 30, tzinfo=UTC)
    # the same instant, already the 9th in UTC+2: "yesterday" is another day there
    same_instant = late_utc.astimezone(timezone(timedelta(hours=2)))
    assert late_utc == same_instant
    first = builder._resolved(text, late_utc)
    second = builder._resolved(text, same_instant)
    assert first == annotate_relative_dates(text, late_utc) != text
    assert second == annotate_relative_dates(text, same_instant)
    assert first != second
    assert builder._resolved(text, None) == text


def test_a_purge_drops_the_kept_sentences() -> None:
    builder.forget_texts()
    builder._resolved("a secret said yesterday", datetime(2024, 5, 8, tzinfo=UTC))
    builder._question_share("Did you hear my secret?")
    assert builder._dated.cache_info().currsize == 1
    assert builder._asked.cache_info().currsize == 1
    builder.forget_texts()  # what Memory.purge calls
    assert builder._dated.cache_info().currsize == 0
    assert builder._asked.cache_info().currsize == 0


def test_kept_question_shares_are_the_computed_ones() -> None:
    builder.forget_texts()
    for text in ["A statement.", "What happened? I was out.", "Where? Why？", "Can I come?"]:
        for _ in range(2):  # computed, then kept
            assert builder._question_share(text) == question_share(text)
