"""PromptedLLM over the scripted backend: parsing, retries, validation and fallback."""

from __future__ import annotations

import contextlib
import json
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata.errors import ProviderError, ValidationError
from memstrata.llm.base import LLM, TaskOutcome
from memstrata.llm.chat import ChatBackend, PromptedLLM
from memstrata.llm.factory import make_llm
from memstrata.llm.fake import ScriptedChat, ScriptExhaustedError
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.llm.json_output import parse_json_output

FACT = {
    "category": "preference",
    "key": "favorite_drink",
    "value": "绿茶",
    "confidence": 0.9,
    "evidence": "我最喜欢的饮料是绿茶",
}


def make(*replies: str | BaseException) -> tuple[PromptedLLM, ScriptedChat]:
    chat = ScriptedChat(*replies)
    return PromptedLLM(chat), chat


def test_protocols() -> None:
    llm, chat = make()
    assert isinstance(llm, LLM) and isinstance(chat, ChatBackend)


def test_valid_json() -> None:
    llm, chat = make(json.dumps({"facts": [FACT]}, ensure_ascii=False))
    facts = llm.extract_facts(["我最喜欢的饮料是绿茶"])
    assert [(f.key, f.value) for f in facts] == [("favorite_drink", "绿茶")]
    assert chat.json_modes == [True] and chat.remaining == 0
    system, user = chat.calls[0]
    assert system["role"] == "system" and "schema" in system["content"]
    assert "same language" in user["content"] and "我最喜欢的饮料是绿茶" in user["content"]


def test_json_in_code_fence_with_prose() -> None:
    llm, _ = make('Sure! Here it is:\n```json\n{"importance": 0.8}\n```\nHope that helps.')
    assert llm.score_importance("remember my passport number") == 0.8


def test_malformed_then_valid_retries_with_the_error() -> None:
    llm, chat = make("{not json at all", '{"summary": "A short summary."}')
    assert llm.summarize(["some long text"], max_words=10) == "A short summary."
    assert len(chat.calls) == 2
    retry = chat.calls[1]
    assert retry[-2] == {"role": "assistant", "content": "{not json at all"}
    assert "invalid" in retry[-1]["content"]


def test_garbage_twice_falls_back_to_heuristic(caplog: pytest.LogCaptureFixture) -> None:
    llm, chat = make("garbage", "more garbage")
    with caplog.at_level(logging.WARNING, logger="memstrata.llm.chat"):
        facts = llm.extract_facts(["My name is Alice."])
    assert [(f.key, f.value) for f in facts] == [("name", "Alice")]
    assert chat.remaining == 0
    assert "using heuristic" in caplog.text


@pytest.mark.parametrize("error", [ProviderError("endpoint down"), TimeoutError("slow")])
def test_backend_exception_falls_back(error: Exception) -> None:
    llm, chat = make(error)
    assert llm.score_importance("ok thanks") == HeuristicLLM().score_importance("ok thanks")
    assert len(chat.calls) == 1  # a failing backend is not hammered again


def test_schema_invalid_values_are_rejected() -> None:
    bad = dict(FACT, confidence=7)
    llm, chat = make(json.dumps({"facts": [bad]}), json.dumps({"facts": [bad]}))
    facts = llm.extract_facts(["I'm allergic to peanuts."])
    assert [(f.key, f.value, f.confidence) for f in facts] == [("allergy", "peanuts", 0.9)]
    assert "confidence" in chat.calls[1][-1]["content"]
    llm, _ = make('{"importance": 3}', '{"importance": 0.4}')
    assert llm.score_importance("x") == 0.4


def test_repairs_trailing_commas_and_single_quotes() -> None:
    llm, _ = make("{'items': ['must ship by Friday', 'budget 5k',],}")
    assert llm.extract_key_info(["..."]) == ["must ship by Friday", "budget 5k"]


def test_reflect_and_merge_profile() -> None:
    llm, chat = make(
        '{"summary": "done", "lessons": ["check dates"], "importance": 0.6}',
        '{"profile": {"city": "Bergen", "name": "Al"}}',
    )
    r = llm.reflect(TaskOutcome(goal="book"))
    assert (r.summary, r.lessons, r.importance) == ("done", ["check dates"], 0.6)
    assert llm.merge_profile({"name": "Al"}, {"city": "Bergen"}) == {"city": "Bergen", "name": "Al"}
    assert llm.merge_profile({}, {"a": "b"}) == {"a": "b"}  # nothing to reconcile: no call
    assert len(chat.calls) == 2


def test_summary_from_model_is_held_to_max_words() -> None:
    llm, _ = make(json.dumps({"summary": "word " * 50}))
    assert len(llm.summarize(["text"], max_words=5).split()) <= 5


def test_scripted_chat_runs_out_loudly() -> None:
    chat = ScriptedChat()
    with pytest.raises(ScriptExhaustedError, match="enqueue more"):
        chat.complete([{"role": "user", "content": "hi"}], json_mode=False)


def test_make_llm() -> None:
    assert isinstance(make_llm(None), HeuristicLLM)
    assert isinstance(make_llm("heuristic"), HeuristicLLM)
    mine, _ = make()
    assert make_llm(mine) is mine
    with pytest.raises(ValidationError, match="choose one of"):
        make_llm("gpt5")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("prefix [1, 2,] suffix", [1, 2]),
        ("```\n{'a': True, 'b': None}\n```", {"a": True, "b": None}),
        ('{"a": "x}"} {"b": 2}', {"a": "x}"}),
    ],
)
def test_parse_json_output(text: str, expected: object) -> None:
    assert parse_json_output(text) == expected


@given(st.text(max_size=400))
def test_parse_json_output_only_raises_provider_error(text: str) -> None:
    with contextlib.suppress(ProviderError):
        parse_json_output(text)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=20,
    ),
    st.text(max_size=30),
)
def test_parse_json_output_finds_embedded_objects(value: object, prose: str) -> None:
    wrapped = {"v": value}
    text = f"{prose.replace('{', '').replace('[', '')}\n{json.dumps(wrapped)}"
    assert parse_json_output(text) == wrapped
