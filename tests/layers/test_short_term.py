"""Short-term buffer: rounds, the 20-round FIFO, the token cap, rule compression."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from strata_kit import ALICE, T0, add_turns, layer_ctx, minutes_after, rounds

from memstrata.errors import ValidationError
from memstrata.layers.base import LayerConfig
from memstrata.layers.short_term import (
    ShortTermService,
    compress_for_context,
    group_rounds,
    is_acknowledgement,
    left_window,
    window_of,
)
from memstrata.records import Content, MemoryRecord, RecordType, Role
from memstrata.scope import Scope


def msg(i: int, role: str, text: str) -> MemoryRecord:
    when = T0 + timedelta(minutes=i)
    return MemoryRecord(
        id=f"m{i}",
        tenant="t",
        user="u",
        session="s",
        type=RecordType.MESSAGE,
        role=Role(role),
        content=Content(text),
        created_at=when,
        updated_at=when,
        observed_at=when,
    )


def test_rounds_open_at_user_turns_and_leading_turns_form_their_own() -> None:
    ms = [
        msg(0, "system", "be brief"),
        msg(1, "assistant", "hello"),
        msg(2, "user", "q1"),
        msg(3, "assistant", "a1"),
        msg(4, "tool", "out"),
        msg(5, "user", "q2"),
    ]
    grouped = group_rounds(list(reversed(ms)))  # input order does not matter
    assert [[m.id for m in r] for r in grouped] == [["m0", "m1"], ["m2", "m3", "m4"], ["m5"]]


def test_window_keeps_last_rounds_then_cuts_oldest_turns_to_the_token_cap() -> None:
    ms = [msg(i, "user" if i % 2 == 0 else "assistant", "x" * 40) for i in range(10)]  # 10 tok
    grouped = group_rounds(ms)
    assert [m.id for m in window_of(grouped, max_rounds=3, token_cap=1000)] == [
        f"m{i}" for i in range(4, 10)
    ]
    cut = window_of(grouped, max_rounds=3, token_cap=35)
    assert [m.id for m in cut] == ["m7", "m8", "m9"]  # newest kept, never over the cap
    assert [m.id for m in left_window(ms, cut)] == [f"m{i}" for i in range(7)]
    with pytest.raises(ValidationError):
        window_of(grouped, max_rounds=0, token_cap=10)


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_the_21st_round_overflows_and_the_20th_does_not(tmp_path: Path, kind: str) -> None:
    with layer_ctx(tmp_path, kind) as ctx:
        st = ShortTermService(ctx)
        add_turns(ctx, ALICE, rounds(1, 20))
        assert st.overflowed(ALICE) == []
        assert len(st.window(ALICE)) == 40
        first_of_21 = add_turns(ctx, ALICE, rounds(21, 21)[:1], start=minutes_after(40))
        left = st.overflowed(ALICE)
        assert [m.text for m in left] == [t for _, t in rounds(1, 1)]
        assert st.window(ALICE)[-1].id == first_of_21[0].id
        assert st.window(ALICE)[0].text.startswith("Round 2:")


def test_the_token_cap_cuts_the_oldest_first(tmp_path: Path) -> None:
    cfg = LayerConfig(short_term_token_cap=25)  # 10 tokens a turn
    with layer_ctx(tmp_path, config=cfg) as ctx:
        recs = add_turns(
            ctx,
            ALICE,
            [
                ("user", "a" * 40),
                ("assistant", "b" * 40),
                ("user", "c" * 40),
                ("assistant", "d" * 40),
            ],
        )
        st = ShortTermService(ctx)
        assert [m.id for m in st.window(ALICE)] == [recs[2].id, recs[3].id]
        assert [m.id for m in st.overflowed(ALICE)] == [recs[0].id, recs[1].id]


def test_window_needs_a_session_and_ignores_other_sessions(tmp_path: Path) -> None:
    with layer_ctx(tmp_path) as ctx:
        add_turns(ctx, ALICE, [("user", "mine")])
        add_turns(ctx, ALICE.with_session("s2"), [("user", "other session")])
        add_turns(ctx, Scope("acme", "bob", session="s1"), [("user", "bob's")])
        st = ShortTermService(ctx)
        assert [m.text for m in st.window(ALICE)] == ["mine"]
        with pytest.raises(ValidationError):
            st.window(ALICE.with_session(None))


def test_rule_compression_truncates_tool_output_drops_acks_and_repeated_errors() -> None:
    ms = [
        msg(0, "user", "run the tests please"),
        msg(1, "tool", "y" * 600),
        msg(2, "assistant", "ok"),
        msg(3, "user", "好的，谢谢"),
        msg(4, "user", "Thanks!"),
        msg(5, "tool", "Error: connection refused"),
        msg(6, "tool", "Error:  connection refused"),
        msg(7, "tool", "Error: disk full"),
        msg(8, "assistant", "y" * 600),
        msg(9, "user", "yes"),
    ]
    out = compress_for_context(ms)
    assert [m.id for m in out] == ["m0", "m1", "m5", "m7", "m8", "m9"]
    tool = out[1]
    assert tool.text.startswith("y" * 500) and "truncated 100 chars" in tool.text
    assert len(out[4].text) == 600  # only tool output is truncated
    assert ms[1].text == "y" * 600  # the stored record is untouched


@pytest.mark.parametrize(
    ("text", "ack"),
    [
        ("ok", True),
        ("OK thanks!!", True),
        ("好的", True),
        ("好的谢谢", True),
        ("嗯嗯，收到", True),
        ("ok, the budget is 10k", False),
        ("yes", False),
        ("thanks for the long explanation!", False),
        ("", False),
        ("好的，我明天去北京", False),
    ],
)
def test_acknowledgements(text: str, ack: bool) -> None:
    assert is_acknowledgement(text) is ack


def test_render_compresses_the_window(tmp_path: Path) -> None:
    with layer_ctx(tmp_path) as ctx:
        add_turns(ctx, ALICE, [("user", "question"), ("assistant", "thanks")])
        assert [m.text for m in ShortTermService(ctx).render(ALICE)] == ["question"]


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_turns_of_one_moment_keep_their_order_in_the_window(tmp_path: Path, kind: str) -> None:
    """Turns with one ``observed_at`` (a batch given one time) are in the window in the
    order they were added, and it holds the newest 20 rounds: the page read newest first was
    sorted by time alone, so such turns came out reversed, and which of them made the window
    depended on the read's page size."""
    with layer_ctx(tmp_path, kind) as ctx:
        st = ShortTermService(ctx)
        turns = add_turns(ctx, ALICE, rounds(1, 60), step_minutes=0)
        window = st.window(ALICE)
        assert [m.id for m in window] == [m.id for m in turns[-40:]]
        assert [m.id for m in st.render(ALICE)] == [m.id for m in turns[-40:]]
        assert [m.id for m in st.recent(ALICE)] == [m.id for m in turns[-len(st.recent(ALICE)) :]]
