"""HeuristicLLM: the offline default must be useful in English and Chinese."""

from __future__ import annotations

import pytest

from memstrata.llm._language import word_count
from memstrata.llm.base import LLM, TaskOutcome
from memstrata.llm.heuristic import HeuristicLLM

llm = HeuristicLLM()


def facts_of(text: str) -> dict[str, str]:
    return {f.key: f.value for f in llm.extract_facts([text])}


def test_is_an_llm() -> None:
    assert isinstance(llm, LLM) and llm.name == "heuristic"


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("Hi, my name is Alice Smith.", "name", "Alice Smith"),
        ("I live in Berlin and I love it.", "location", "Berlin"),
        ("I work as a nurse.", "occupation", "nurse"),
        ("I work at Acme Corp.", "employer", "Acme Corp"),
        ("I'm a software engineer.", "self_description", "software engineer"),
        (
            "I love hiking in the mountains.",
            "likes_hiking_in_the_mountains",
            "hiking in the mountains",
        ),
        ("I don't like cilantro.", "dislikes_cilantro", "cilantro"),
        ("I hate running, honestly.", "dislikes_running", "running"),
        ("My favorite drink is green tea.", "favorite_drink", "green tea"),
        ("I'm allergic to peanuts!", "allergy", "peanuts"),
        ("My birthday is March 3rd.", "birthday", "March 3rd"),
        ("I have a dog named Rex.", "pet_dog", "Rex"),
        ("My wife's name is Carol.", "wife_name", "Carol"),
        ("I prefer window seats.", "prefers_window_seats", "window seats"),
    ],
)
def test_english_fact_patterns(text: str, key: str, value: str) -> None:
    assert facts_of(text).get(key) == value


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("我叫李雷。", "name", "李雷"),
        ("我的名字是韩梅梅", "name", "韩梅梅"),
        ("我住在上海。", "location", "上海"),
        ("我是一名程序员。", "occupation", "程序员"),
        ("我在腾讯工作。", "employer", "腾讯"),
        ("我喜欢爬山。", "likes_爬山", "爬山"),
        ("我不喜欢跑步。", "dislikes_跑步", "跑步"),
        ("我讨厌下雨天。", "dislikes_下雨天", "下雨天"),
        ("我最喜欢的水果是芒果。", "favorite_水果", "芒果"),
        ("我对花生过敏。", "allergy", "花生"),
        ("我的生日是五月三日。", "birthday", "五月三日"),
        ("我养了一只猫，叫咪咪。", "pet_猫", "咪咪"),
        ("我老婆叫韩梅梅。", "wife_name", "韩梅梅"),
    ],
)
def test_chinese_fact_patterns_keep_the_language(text: str, key: str, value: str) -> None:
    assert facts_of(text).get(key) == value


def test_facts_have_confidence_and_evidence() -> None:
    facts = llm.extract_facts(["The weather is nice. I'm allergic to shellfish. Bye."])
    assert len(facts) == 1
    assert 0.8 <= facts[0].confidence <= 0.95
    assert facts[0].evidence == "I'm allergic to shellfish."
    assert llm.extract_facts(["I like it.", "ok thanks", "I don't like to be rushed"]) != []
    assert [f.value for f in llm.extract_facts(["I like it."])] == []


def test_no_facts_from_questions_about_others() -> None:
    assert llm.extract_facts(["What is your name?", "He lives in Paris."]) == []


TEXT_EN = (
    "The memory system stores events for agents. Episodic memory keeps events with "
    "timestamps. Semantic memory keeps facts extracted from events. The weather was nice. "
    "Working memory holds the current conversation about events and facts."
)
TEXT_ZH = (
    "记忆系统为智能体存储事件。情景记忆保存带时间戳的事件。语义记忆保存从事件中提取的事实。"
    "今天天气很好。工作记忆保存当前关于事件和事实的对话。"
)


@pytest.mark.parametrize("max_words", [1, 5, 12, 25, 200])
def test_summary_within_budget_and_language(max_words: int) -> None:
    en = llm.summarize([TEXT_EN], max_words=max_words)
    zh = llm.summarize([TEXT_ZH], max_words=max_words)
    assert 0 < word_count(en) <= max_words and 0 < word_count(zh) <= max_words
    assert not any("\u4e00" <= c <= "\u9fff" for c in en)
    assert all(not c.isascii() for c in zh if c.isalpha())


def test_summary_is_extractive_and_prefers_central_sentences() -> None:
    summary = llm.summarize([TEXT_EN], max_words=20)
    assert "weather" not in summary
    assert all(s.strip() in TEXT_EN for s in summary.split(". ") if s.strip())
    assert llm.summarize([], max_words=10) == ""
    assert llm.summarize(["   "], max_words=10) == ""


def test_importance_ordering() -> None:
    pref = llm.score_importance("I prefer aisle seats on long flights.")
    remember = llm.score_importance("Remember: my passport expires on 2027-03-01.")
    chatter = llm.score_importance("what's up")
    ack = llm.score_importance("ok thanks")
    assert pref > chatter > ack
    assert remember > chatter
    assert llm.score_importance("我对青霉素过敏，一定要记住") > llm.score_importance("好的，谢谢")
    assert all(0.0 <= s <= 1.0 for s in (pref, remember, chatter, ack))


def test_reflect_success_and_failure() -> None:
    ok = llm.reflect(
        TaskOutcome(
            goal="book a flight",
            steps=["search", "pay"],
            step_statuses=["completed", "completed"],
            outcome="booked",
            tools=["browser"],
        )
    )
    bad = llm.reflect(
        TaskOutcome(
            goal="book a flight",
            steps=["search", "pay"],
            step_statuses=["completed", "failed"],
            success=False,
            feedback="use my saved card",
        )
    )
    assert ok.summary.startswith("Succeeded") and bad.summary.startswith("Failed")
    assert any("use my saved card" in lesson for lesson in bad.lessons)
    assert any("'pay'" in lesson for lesson in bad.lessons)
    assert bad.importance > ok.importance
    zh = llm.reflect(TaskOutcome(goal="订一张去北京的机票", success=False))
    assert zh.summary.startswith("任务失败")


def test_merge_profile_incoming_wins() -> None:
    merged = llm.merge_profile(
        {"name": "Al", "city": "Oslo"}, {"city": "Bergen", "pet": "", "job": "chef"}
    )
    assert merged == {"name": "Al", "city": "Bergen", "job": "chef"}


def test_extract_key_info() -> None:
    info = llm.extract_key_info(
        [
            "We must ship the report by Friday. The sky is blue.",
            "截止日期是周五。今天吃了面条。目标是减少延迟。",
        ]
    )
    assert info == ["We must ship the report by Friday.", "截止日期是周五。", "目标是减少延迟。"]
