"""Turns that only react to the other speaker rank below statements in build_context
(ContextConfig.reaction_penalty, context/reactions.py; docs/measurements.md, "Session 33").

On LoCoMo, reactions ("Wow Nate! Congrats on winning!", "So proud of you!") ranked above the
turn that said what happened and filled a 1,000-token context before it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memstrata import Memory, Message, Role, Scope, ValidationError
from memstrata.context.config import ContextConfig
from memstrata.context.reactions import reaction_share


@pytest.mark.parametrize(
    ("text", "share"),
    [
        # statements: something said of the one speaking, or of a third person or thing
        ("I was in the final of a big Valorant tournament last Saturday, and I won!", 0.0),
        ("The tournament was in Seattle.", 0.0),
        ("我上周去了杭州。", 0.0),
        ("我们养了一只兔子！", 0.0),
        ("", 0.0),
        # a digit makes a short sentence a statement
        ("At 5!", 0.0),
        ("3 个！", 0.0),
        # bare interjections and sentences to the other one
        ("That's great!", 1.0),
        ("Wow!", 1.0),
        ("太好了！", 1.0),
        ("太好了！恭喜你！", 1.0),
        ("So proud of you for winning that tournament, that's awesome!", 1.0),
        # the speaker's name is not part of what was said
        ("Joanna: Congrats, Nate!", 1.0),
        ("Joanna：太棒了！", 1.0),
        # questions are question_share's, not counted here
        ("What game was it?", 0.0),
        ("你呢？", 0.0),
        ("Wow Nate! Congrats on winning! Tell me more - what game was it?", 29 / 63),
        ("太好了！我们明天去杭州。", 4 / 12),
        ("Hey Joanna! I won my fourth tournament.", 11 / 39),
    ],
)
def test_reaction_share(text: str, share: float) -> None:
    assert reaction_share(text) == pytest.approx(share)


@pytest.mark.parametrize("value", [-0.1, 10.5, float("nan")])
def test_reaction_penalty_is_checked(value: float) -> None:
    with pytest.raises(ValidationError, match="reaction_penalty"):
        ContextConfig(reaction_penalty=value)


def test_reaction_penalty_is_on_by_default_and_off_before_the_levers() -> None:
    assert ContextConfig().reaction_penalty == 0.1
    assert ContextConfig.before().reaction_penalty == 0.0


_T0 = datetime(2022, 11, 7, 18, 0, tzinfo=UTC)

_TURNS = [
    ("Nate", "I won a big Valorant tournament last Saturday, in the final."),
    ("Joanna", "Wow, Nate! Congrats on winning the tournament final! So proud of you!"),
    ("Joanna", "Nate winning a big tournament final, that's awesome! You must feel great!"),
    ("Nate", "My turtles love strawberries."),
    ("Joanna", "I finished the intro to my next movie script."),
]


def _relevant(
    turns: list[tuple[str, str]], question: str, penalty: float
) -> list[tuple[str, float]]:
    """The relevant turns of a 2,000-token context (the speaker's words as stored, and the
    score), best first, with ``reaction_penalty=penalty``."""
    mem = Memory("memory://", embedder="hashing", background=False)
    try:
        mem.context_config = ContextConfig(reaction_penalty=penalty)
        chat = Scope("t", "joanna", session="s1")
        written = mem.add_messages(
            chat,
            [
                Message(
                    role=Role.USER,
                    content=f"{who}: {text}",
                    metadata={"speaker": who},
                    observed_at=_T0 + timedelta(seconds=10 * i),
                )
                for i, (who, text) in enumerate(turns)
            ],
        )
        mem.flush()
        ctx = mem.build_context(Scope("t", "joanna"), question, token_budget=2000, reserve_ratio=0)
        stored = {rec.id: rec.text for rec in written}
        scored = sorted(
            (it for it in ctx.items if it.block == "relevant"), key=lambda it: -it.score
        )
        return [(stored[it.record_id or ""], it.score) for it in scored]
    finally:
        mem.close()


def _check_moves_up(turns: list[tuple[str, str]], question: str, said: str) -> None:
    off, on = _relevant(turns, question, 0.0), _relevant(turns, question, 1.0)
    assert len(off) == len(on) == len(turns)
    # each turn loses its reaction share
    before = dict(off)
    for text, score in on:
        assert score == pytest.approx(before[text] - reaction_share(text), abs=1e-6)
    rank_off = [t for t, _ in off].index(said)
    rank_on = [t for t, _ in on].index(said)
    assert rank_off >= 2  # two reactions above the statement without the penalty
    assert rank_on < rank_off


def test_a_reaction_ranks_below_the_turn_that_says_what_happened() -> None:
    _check_moves_up(_TURNS, "Which tournament final did Nate win?", "Nate: " + _TURNS[0][1])


def test_a_chinese_reaction_ranks_below_the_statement() -> None:
    turns = [
        ("小王", "我上周六在杭州的象棋比赛里赢了。"),
        ("小李", "哇，小王赢了象棋比赛决赛！太厉害了！恭喜你！"),
        ("小李", "小王赢了象棋比赛决赛，你真棒！"),
        ("小王", "我的乌龟喜欢吃草莓。"),
        ("小李", "我写完了新剧本的开头。"),
    ]
    _check_moves_up(turns, "小王在哪个城市赢了象棋比赛决赛？", "小王: " + turns[0][1])


def test_an_assistants_reply_is_not_read_for_reactions() -> None:
    """An assistant's replies speak to the user ("You could try ..."): asked what it
    recommended, its reply keeps its score; the user's own reaction does not."""
    scores = []
    written_texts: list[str] = []
    for penalty in (0.0, 1.0):
        mem = Memory("memory://", embedder="hashing", background=False)
        try:
            mem.context_config = ContextConfig(reaction_penalty=penalty)
            written = mem.add_messages(
                Scope("t", "ana", session="s1"),
                [
                    Message(role=Role.USER, content="Any fantasy novel for the trip?"),
                    Message(
                        role=Role.ASSISTANT,
                        content="You could try The Name of the Wind, you will love it!",
                    ),
                    Message(role=Role.USER, content="Wow, you are great! Thanks!"),
                ],
            )
            ctx = mem.build_context(
                Scope("t", "ana"),
                "Which fantasy novel did you recommend for the trip?",
                token_budget=2000,
                reserve_ratio=0,
            )
            by_id = {it.record_id: it.score for it in ctx.items if it.block == "relevant"}
            scores.append([by_id[rec.id] for rec in written])
            written_texts = [rec.text for rec in written]
        finally:
            mem.close()
    off, on = scores
    assert reaction_share(written_texts[1]) > 0.9  # "You could try ..." reads as one
    assert on[1] == pytest.approx(off[1])  # the assistant's reply
    assert on[2] == pytest.approx(off[2] - reaction_share(written_texts[2]))  # the user's
