"""After a purge, the purging process itself holds no live Python string with the purged
words: not in ``build_context``'s kept sentences, speaker names, FTS5's term cache, the
hashing embedder's word cache (memstrata.traces). Before, a purge of some records emptied
only the trimmed sentences, and no purge emptied the term or name caches."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

import pytest

from memstrata import AsyncMemory, Memory, Scope

SECRET = "Zyxwvutsrquonym"  # a word no library string holds


def _holders() -> list[str]:
    """What refers to a live string holding the secret (other than the constant itself)."""
    needle = SECRET.lower()  # terms are kept lower-cased
    gc.collect()
    found = []
    for obj in gc.get_objects():
        for ref in gc.get_referents(obj):
            if (
                isinstance(ref, str)
                and needle in ref.lower()
                and ref is not SECRET
                and ref is not needle
            ):
                found.append(type(obj).__name__)  # not the text: the list would hold it
    return found


def _messages() -> list[dict[str, object]]:
    reply = " ".join(
        [f"Your neighbour Ingrid {SECRET} keeps the spare key under the blue flowerpot."]
        + [f"General advice sentence number {i} about gardens and the weather." for i in range(30)]
    )
    return [
        {"role": "user", "content": "Where do I keep my spare key?"},
        {"role": "assistant", "content": reply, "metadata": {"speaker": f"Ingrid {SECRET}"}},
        {
            "role": "user",
            "content": f"Ask {SECRET} about the flowerpot.",
            "metadata": {"speaker": "Zoe"},
        },
    ]


@pytest.mark.parametrize("which", ["user", "records"])
def test_the_purging_process_keeps_no_purged_word(url: str, which: str) -> None:
    mem = Memory(url, embedder="hashing", background=False)
    zoe, later = Scope("acme", "zoe", session="s1"), Scope("acme", "zoe", session="s2")
    try:
        mem.add_messages(zoe, _messages())
        mem.flush()
        ctx = mem.build_context(
            later, f"Where is the spare key {SECRET} kept?", 2000, reserve_ratio=0
        )
        assert "…" in ctx.text
        del ctx
        assert _holders(), "nothing kept the word: the test would show nothing"
        if which == "user":
            mem.purge(Scope("acme", "zoe"))
        else:
            records = mem.list(Scope("acme", "zoe"))
            ids = [
                r.id for r in records if SECRET in str(r.content.text) or SECRET in str(r.metadata)
            ]
            del records
            mem.purge(Scope("acme", "zoe"), ids)
        assert _holders() == []
    finally:
        mem.close()


def test_the_purging_process_keeps_no_purged_word_async(tmp_path: Path) -> None:
    async def main() -> tuple[list[str], list[str]]:
        mem = AsyncMemory(f"sqlite:///{tmp_path / 'a.db'}", embedder="hashing", background=False)
        try:
            await mem.add_messages(Scope("acme", "zoe", session="s1"), _messages())
            await mem.flush()
            ctx = await mem.build_context(
                Scope("acme", "zoe", session="s2"), f"Who is {SECRET}?", 2000, reserve_ratio=0
            )
            del ctx
            before = _holders()
            await mem.purge(Scope("acme", "zoe"))
            return before, _holders()
        finally:
            await mem.close()

    before, after = asyncio.run(main())
    assert before, "nothing kept the word: the test would show nothing"
    assert after == []
