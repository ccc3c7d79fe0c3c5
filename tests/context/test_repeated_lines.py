"""A line said word for word on several days is shown once, with its other dates (assemble).

On the synthetic Chinese set, 14% of the lines of 1,000-token contexts repeated another line
of the same context ("周涛: 我们聊过的那部剧你看完了吗？" on five days); each copy cost a
whole line and told nothing but its date.
"""

from __future__ import annotations

from datetime import UTC, datetime

from memstrata.context.assemble import ContextItem, assemble
from memstrata.context.budget import allocate
from memstrata.context.dates import format_date
from memstrata.tokens import count_tokens

D = [datetime(2023, 5, d, 10, 0, tzinfo=UTC) for d in (3, 9, 14, 20, 27)]


def _turn(text: str, when: datetime, score: float, rid: str) -> ContextItem:
    return ContextItem(
        "relevant",
        text,
        "messages",
        score,
        rid,
        (rid,),
        when,
        group=format_date(when, text),
    )


def _build(items: list[ContextItem], budget: int = 1000):
    plan = allocate(budget, reserve_ratio=0.0)
    return assemble(
        plan=plan, system_prompt=None, query="q?", items=items, history=[], count=count_tokens
    )


def test_repeats_shown_once_with_their_other_dates() -> None:
    said = "Hiro: Did you finish that series we talked about?"
    items = [
        _turn(said, D[2], 0.5, "a"),
        _turn(said, D[0], 0.7, "b"),
        _turn(said, D[4], 0.2, "c"),
        _turn("Hiro: We adopted a puppy.", D[1], 0.6, "d"),
    ]
    ctx = _build(items)
    text = ctx.messages[0]["content"]
    assert text.count("Did you finish that series") == 1
    assert f"{said} (also 14 May 2023, 27 May 2023)" in text
    assert "[3 May 2023]" in text  # the best-scored copy keeps its own date line
    (merged,) = [it for it in ctx.items if "series" in it.text]
    assert merged.record_id == "b" and set(merged.source_ids) == {"a", "b", "c"}
    assert [it.record_id for it in ctx.items] == ["b", "d"]


def test_chinese_dates_and_many_repeats() -> None:
    said = "周涛: 我们聊过的那部剧你看完了吗？"
    items = [_turn(said, d, 0.5 - i / 100, str(i)) for i, d in enumerate(D)]
    text = _build(items).messages[0]["content"]
    assert text.count("那部剧") == 1
    assert f"{said}（也在2023年5月9日、2023年5月14日、2023年5月20日、…）" in text


def test_same_day_repeats_add_no_date_and_other_lines_are_untouched() -> None:
    items = [
        _turn("Ana: Thanks!", D[0], 0.4, "a"),
        _turn("Ana:  Thanks!", D[0].replace(hour=11), 0.3, "b"),  # same words, same day
        _turn("Ben: Thanks!", D[1], 0.3, "c"),  # another speaker: another line
    ]
    ctx = _build(items)
    text = ctx.messages[0]["content"]
    assert "Ana: Thanks!\n" in text + "\n" and "(also" not in text
    assert sorted(it.record_id for it in ctx.items) == ["a", "c"]


def test_the_freed_room_carries_another_line() -> None:
    """At a budget that the copies filled, the line they crowded out now fits."""
    said = "Grace: Someday we should paint the living room navy blue, honestly."
    items = [_turn(said, d, 0.9 - i / 100, str(i)) for i, d in enumerate(D)]
    answer = _turn("Grace: I moved to Oslo last week.", D[3], 0.1, "oslo")
    ctx = _build([*items, answer], 90)
    assert [it.record_id for it in ctx.items] == ["0", "oslo"]
    assert "paint the living room" in ctx.messages[0]["content"]
