"""``build_context`` over a real Memory never exceeds the budget (English and Chinese), a
budget too small for the system prompt is a clear error, and a garbage-returning LLM falls
back without losing a message."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.context.assemble import AssembledContext
from memstrata.errors import BudgetError
from memstrata.filters import Filters
from memstrata.llm.chat import PromptedLLM
from memstrata.llm.fake import ScriptedChat
from memstrata.records import Message, RecordType
from memstrata.tokens import count_tokens

T0 = datetime(2026, 2, 1, 9, 0, tzinfo=UTC)
BUDGETS = (200, 500, 1000, 4000)

EN_TOPICS = [
    "the harbour renovation",
    "my sister's wedding in Porto",
    "a broken bicycle",
    "the quarterly tax return",
    "learning the cello",
    "a hiking trip in the Alps",
    "the new database migration",
    "a sourdough starter that will not rise",
]
ZH_TOPICS = [
    "周末去杭州西湖旅游",
    "公司新项目的数据库迁移",
    "学习弹钢琴的进度",
    "妹妹在广州的婚礼",
    "自行车坏了需要修理",
    "准备季度税务申报",
    "在阿尔卑斯山徒步",
    "做酸面包总是发不起来",
]


def english_turns(n: int) -> list[tuple[str, str]]:
    out = []
    for i in range(n):
        topic = EN_TOPICS[i % len(EN_TOPICS)]
        out.append(
            (
                "user",
                f"Round {i}: I keep thinking about {topic}. " * 6
                + f"My favourite colour is {'blue' if i % 2 else 'green'}, by the way.",
            )
        )
        out.append(
            (
                "assistant",
                f"About {topic} (round {i}): here is a long, careful answer "
                "with several steps, caveats and a summary at the end. " * 8,
            )
        )
    return out


def chinese_turns(n: int) -> list[tuple[str, str]]:
    out = []
    for i in range(n):
        topic = ZH_TOPICS[i % len(ZH_TOPICS)]
        out.append(("user", f"第{i}轮：我一直在想{topic}的事情。" * 8 + "我住在上海。"))
        out.append(
            (
                "assistant",
                f"关于{topic}（第{i}轮），这里有一个详细的回答，包括几个步骤、"
                "注意事项和最后的总结。" * 8,
            )
        )
    return out


def fill(mem: Memory, scope: Scope, turns: list[tuple[str, str]]) -> list[str]:
    ids = []
    for i in range(0, len(turns), 10):  # several add_messages calls, like a live chat
        batch = [
            Message(role=r, content=c, observed_at=T0 + timedelta(minutes=j))  # type: ignore[arg-type]
            for j, (r, c) in enumerate(turns[i : i + 10], start=i)
        ]
        ids += [r.id for r in mem.add_messages(scope, batch)]
    report = mem.flush(scope)
    assert report.failed == 0 and report.retried == 0, report.errors
    return ids


def recount(ctx: AssembledContext) -> int:
    return sum(count_tokens(m["content"]) + 4 for m in ctx.messages)


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Memory, Scope, Scope]]:
    path = tmp_path_factory.mktemp("budget") / "b.db"
    mem = Memory(
        f"sqlite:///{path}",
        embedder="hashing",
        llm="heuristic",
        clock=FixedClock(T0 + timedelta(days=1)),
        background=False,
    )
    en, zh = Scope("acme", "ellen", session="en"), Scope("acme", "zhang", session="zh")
    fill(mem, en, english_turns(35))
    fill(mem, zh, chinese_turns(35))
    mem.key.set(en, "Keep answers short and practical. " * 5)
    mem.key.set(zh, "回答要简短实用。" * 5)
    mem.tasks.start(en, "Plan the harbour renovation budget", ["collect quotes", "compare"])
    yield mem, en, zh
    mem.close()


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_build_context_never_exceeds_the_usable_budget(
    filled: tuple[Memory, Scope, Scope], lang: str, budget: int
) -> None:
    mem, en, zh = filled
    scope = en if lang == "en" else zh
    query = (
        "What did we decide about the harbour renovation and what is my favourite colour?"
        if lang == "en"
        else "我们上次关于数据库迁移说了什么？我住在哪里？"
    )
    system = "You are a careful assistant." if lang == "en" else "你是一个细心的助手。"
    ctx = mem.build_context(scope, query, budget, system_prompt=system)
    assert ctx.plan.total == budget
    assert recount(ctx) <= ctx.plan.usable
    assert ctx.tokens == recount(ctx)
    # the fixed parts are never cut
    assert ctx.messages[0]["content"] == system
    assert ctx.messages[-1] == {"role": "user", "content": query}
    if budget >= 1000:
        # room for memory (the user's key memory first), and still something had to be cut
        assert ctx.items and ctx.items[0].layer == "key"
        assert ctx.dropped
    if budget == 4000:
        # and for the latest turns (a long Chinese answer alone can outgrow a 1000 budget's
        # history share: the history is kept contiguous from the newest turn back)
        assert ctx.history and ctx.history[-1].content.endswith(
            chinese_turns(35)[-1][1] if lang == "zh" else english_turns(35)[-1][1]
        )


def test_a_bigger_budget_never_holds_less(filled: tuple[Memory, Scope, Scope]) -> None:
    mem, en, _ = filled
    sizes = [mem.build_context(en, "harbour renovation quotes?", b).tokens for b in BUDGETS]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]


@pytest.mark.parametrize("reserve_ratio", [0.0, 0.5])
def test_reserve_ratio_is_respected(
    filled: tuple[Memory, Scope, Scope], reserve_ratio: float
) -> None:
    mem, _, zh = filled
    ctx = mem.build_context(zh, "数据库迁移怎么样了？", 1000, reserve_ratio=reserve_ratio)
    assert ctx.plan.reserve == int(1000 * reserve_ratio)
    assert recount(ctx) <= ctx.plan.usable == 1000 - ctx.plan.reserve


def test_a_budget_too_small_for_the_system_prompt_is_a_budget_error(
    filled: tuple[Memory, Scope, Scope],
) -> None:
    mem, en, zh = filled
    long_system = "Follow every house rule carefully. " * 60  # ~500 tokens
    with pytest.raises(BudgetError, match="system prompt"):
        mem.build_context(en, "hello?", 200, system_prompt=long_system)
    with pytest.raises(BudgetError):
        mem.build_context(zh, "你好", 100, system_prompt="请遵守所有规则。" * 40)
    for bad in (0, -5):
        with pytest.raises(BudgetError):
            mem.build_context(en, "hello?", bad)
    # the same prompt fits a budget that can hold it
    ctx = mem.build_context(en, "hello?", 2000, system_prompt=long_system)
    assert recount(ctx) <= ctx.plan.usable


def test_a_garbage_llm_falls_back_and_loses_no_message(tmp_path: Path) -> None:
    garbage = [
        "Sure! Here is your summary:",
        "<html>500 Internal Server Error</html>",
        "{not json at all",
        "[1, 2,",
        "",
        "null?",
        "¯\\_(ツ)_/¯",
    ]
    chat = ScriptedChat(*(garbage * 200))
    mem = Memory(
        f"sqlite:///{tmp_path / 'g.db'}",
        embedder="hashing",
        llm=PromptedLLM(chat),
        clock=FixedClock(T0 + timedelta(days=1)),
        background=False,
    )
    try:
        scope = Scope("acme", "gary", session="g1")
        turns = english_turns(12)
        turns[0] = ("user", "I am allergic to shellfish and I live in Dublin.")
        ids = fill(mem, scope, turns)
        report = mem.end_session(scope)
        assert report.failed == 0 and report.retried == 0, report.errors
        assert chat.calls, "the garbage LLM was never asked"

        stored = mem.list(
            scope,
            filters=Filters(types=frozenset({RecordType.MESSAGE})),
            limit=1000,
            newest_first=False,
        )
        assert [r.id for r in stored] == ids
        assert [r.text for r in stored] == [c for _, c in turns]
        # summaries and facts came from the fallback, not from the garbage
        summaries = mem.layers.summaries.summaries(scope)
        assert [
            (s.content.structured["step_start"], s.content.structured["step_end"])
            for s in summaries
        ] == [(1, 10), (11, 12)]
        for s in summaries:
            assert s.text.strip() and s.text not in garbage and not s.text.startswith("{")
        fact = mem.facts.get(scope, "allergy")
        assert fact is not None and fact.content.structured["value"] == "shellfish"
        assert mem.episodes.conversation_episode(scope) is not None
        for budget in BUDGETS:
            ctx = mem.build_context(scope, "what am I allergic to?", budget)
            assert recount(ctx) <= ctx.plan.usable
        assert "shellfish" in mem.build_context(scope, "what am I allergic to?", 2000).text
    finally:
        mem.close()
