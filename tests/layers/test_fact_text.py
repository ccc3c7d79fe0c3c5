"""A fact reads as "key: value", and a preference does not name its object twice."""

from __future__ import annotations

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.layers.semantic_types import fact_text


@pytest.mark.parametrize(
    ("key", "value", "text"),
    [
        ("allergy", "peanuts", "allergy: peanuts"),
        (
            "likes_hiking_in_the_mountains",
            "hiking in the mountains",
            "likes: hiking in the mountains",
        ),
        ("dislikes_跑步", "跑步", "dislikes: 跑步"),
        ("prefers_window_seats", "window seats", "prefers: window seats"),
        ("favorite_drink", "matcha latte", "favorite_drink: matcha latte"),
        ("likes", "tea", "likes: tea"),
        ("likesx_y", "z", "likesx_y: z"),
    ],
)
def test_fact_text(key: str, value: str, text: str) -> None:
    assert fact_text(key, value) == text


def test_an_extracted_preference_reads_once(clock: FixedClock, tmp_path) -> None:  # type: ignore[no-untyped-def]
    mem = Memory(
        f"sqlite:///{tmp_path / 'f.db'}", embedder="hashing", clock=clock, background=False
    )
    me = Scope("acme", "mia", session="s1")
    mem.add_messages(
        me, [{"role": "user", "content": "我喜欢喝抹茶拿铁，不太喜欢咖啡。I love jazz."}]
    )
    mem.end_session(me)
    mem.flush(me)
    texts = sorted(f.text for f in mem.facts.all(me))
    assert "likes: jazz" in texts and "likes: 喝抹茶拿铁" in texts, texts
    keys = {f.content.structured["key"] for f in mem.facts.all(me)}
    assert {"likes_jazz", "likes_喝抹茶拿铁"} <= keys
    mem.close()
