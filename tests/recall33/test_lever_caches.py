"""What the two levers keep of users' sentences between builds: emptied by a purge, and
never a long text (as the builder's other caches, session 29)."""

from __future__ import annotations

from pathlib import Path

from memstrata import FixedClock, Memory, Scope
from memstrata.context import builder
from memstrata.context.config import ContextConfig

_CACHES = (builder._reacted, builder._kept_names, builder._kept_time)


def test_a_purge_forgets_what_the_levers_kept(tmp_path: Path, clock: FixedClock) -> None:
    mem = Memory(
        f"sqlite:///{tmp_path / 'p.db'}", embedder="hashing", clock=clock, background=False
    )
    try:
        mem.context_config = ContextConfig(reaction_penalty=0.2, answer_type_boost=0.2)
        me = Scope("acme", "zoe", session="s1")
        mem.add_messages(
            me,
            [
                {"role": "user", "content": "Ingrid Halvorsen hid the key in May 2024."},
                {"role": "user", "content": "Wow, so proud of you!"},
            ],
        )
        later = Scope("acme", "zoe", session="s2")
        for question in ("When was the key hidden?", "Who hid the key?"):
            mem.build_context(later, question, 2000, reserve_ratio=0)
        assert all(cache.cache_info().currsize > 0 for cache in _CACHES)
        mem.purge(me)
        assert all(cache.cache_info().currsize == 0 for cache in _CACHES)
    finally:
        mem.close()


def test_long_texts_are_not_kept() -> None:
    for cache in _CACHES:
        cache.cache_clear()
    long = "Ingrid went to Oslo in May 2024 and you were great! " * 200
    assert len(long) > builder._KEPT_CHARS
    assert builder._reaction_share(long) > 0
    for kind in ("time", "number", "name"):
        assert builder._holds(kind, long, frozenset())  # type: ignore[arg-type]
    assert all(cache.cache_info().currsize == 0 for cache in _CACHES)
