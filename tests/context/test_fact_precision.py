"""Precision of the heuristic fact extractor (issue 13): reactions to what was just said and
passing states are no profile facts; standing preferences and identities still are."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata.llm.fact_patterns import extract_explicit_facts


def _facts(text: str) -> dict[str, str]:
    return {f.key: f.value for f in extract_explicit_facts([text])}


@pytest.mark.parametrize(
    "text",
    [
        "I love how you use it to tell your stories.",
        "I love that you chose pottery for your art.",
        "I love the self-acceptance and love theme.",
        "I love all the yellow leaves, it looks so cozy.",
        "I like their design.",
        "I love it when you make coconut milk icecream.",
        "I love what I do.",
        "I'm a bit nervous this week.",
        "I'm a little tired today.",
        "Call me crazy, but I think so.",
        "我喜欢你的画。",
        "我喜欢这个颜色。",
        "I'm 5 minutes away.",
        "I'm 34 weeks pregnant.",
        "我34岁的时候去了北京。",
    ],
)
def test_reactions_and_passing_states_are_not_facts(text: str) -> None:
    assert _facts(text) == {}


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("I love live music.", "likes_live_music", "live music"),
        (
            "I love camping trips with my fam.",
            "likes_camping_trips_with_my_fam",
            "camping trips with my fam",
        ),
        ("I'm a big fan of pottery - the creativity is awesome.", "likes_pottery", "pottery"),
        ("I'm a fan of jazz.", "likes_jazz", "jazz"),
        ("I don't like dark beer.", "dislikes_dark_beer", "dark beer"),
        ("I'm a nurse.", "self_description", "nurse"),
        ("I'm an expert hiker.", "self_description", "expert hiker"),
        ("Call me Ishmael.", "name", "Ishmael"),
        ("我喜欢爬山。", "likes_爬山", "爬山"),
        ("我最喜欢的饺子店是蓝灯笼。", "favorite_饺子店", "蓝灯笼"),
        ("My dog's name is Rex.", "pet_dog", "Rex"),
        ("My cat is called Mimi.", "pet_cat", "Mimi"),
        ("I'm 34 years old.", "age", "34"),
        ("I am 34 and I live in Rome.", "age", "34"),
        ("我今年34岁。", "age", "34"),
        ("我三十四岁了。", "age", "三十四"),
        ("我的狗叫旺财。", "pet_狗", "旺财"),
    ],
)
def test_standing_preferences_and_identities_stay(text: str, key: str, value: str) -> None:
    assert _facts(text).get(key) == value


@given(st.text(max_size=200))
def test_any_text_extracts_without_error(text: str) -> None:
    for fact in extract_explicit_facts([text]):
        assert fact.value.strip() == fact.value and fact.value
