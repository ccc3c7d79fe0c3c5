"""A purge empties what this process keeps of the purged sentences between builds: the
terms of long assistant replies that ``build_context`` trims (context/builder.py)."""

from __future__ import annotations

from pathlib import Path

from memstrata import FixedClock, Memory, Scope
from memstrata.context import builder


def test_a_purge_forgets_the_trimmed_sentences(tmp_path: Path, clock: FixedClock) -> None:
    mem = Memory(
        f"sqlite:///{tmp_path / 'p.db'}", embedder="hashing", clock=clock, background=False
    )
    me = Scope("acme", "zoe", session="s1")
    secret = "Your neighbour Ingrid Halvorsen keeps the spare key under the blue flowerpot."
    reply = " ".join(
        [secret]
        + [f"General advice sentence number {i} about gardens and the weather." for i in range(30)]
    )
    mem.add_messages(
        me,
        [
            {"role": "user", "content": "Where do I keep my spare key?"},
            {"role": "assistant", "content": reply},
        ],
    )
    later = Scope("acme", "zoe", session="s2")  # the reply is a relevant memory, not history
    ctx = mem.build_context(later, "Where is the spare key kept?", 2000, reserve_ratio=0)
    assert "…" in ctx.text  # the long reply was trimmed, its sentences looked at
    assert builder._kept_terms.cache_info().currsize > 0
    mem.purge(me)
    assert builder._kept_terms.cache_info().currsize == 0
    mem.close()
