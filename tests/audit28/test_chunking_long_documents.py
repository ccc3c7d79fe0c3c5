"""``knowledge.ingest`` (``POST .../knowledge``, any member key, up to 10 M characters) of a
long document with few breaks (session 28's audit).

Before: the chunker counted the tokens of the whole remaining text for every chunk (and
again in each step of its binary search), so the work grew with the square of the length:
1 MB of Chinese took 175 s with the hashing embedder (a combining-mark run 100 s, emoji
64 s), 10 MB would take hours, one request holding a core. Now each chunk's searches look
only as far as a span that is too long (doubling from 8 x chunk_tokens characters); the
chunks are the same."""

from __future__ import annotations

import pytest

from memstrata import Memory, Scope
from memstrata.policies.chunking import chunk_text, join_chunks
from memstrata.tokens import estimate_tokens

TEXTS = {
    "chinese": "记忆" * 200_000,
    "one token": "x" * 400_000,
    "combining marks": "e" + "\u0301" * 399_999,
    "english": ("The quick brown fox jumps over the lazy dog. " * 9000)[:400_000],
    "paragraphs": ("A short paragraph about bees.\n\n" * 14000)[:400_000],
}


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_chunking_counts_each_character_a_bounded_number_of_times(name: str) -> None:
    text = TEXTS[name]
    counted = 0

    def counter(span: str) -> int:
        nonlocal counted
        counted += len(span)
        return estimate_tokens(span)

    chunks = chunk_text(text, 2000, 200, counter=counter)
    assert join_chunks([(c.text, c.overlap_chars) for c in chunks]) == text
    assert all(estimate_tokens(c.text) <= 2000 for c in chunks)
    # 20-30 times the text's length; before, 80-250 times at this length (the whole rest
    # of the text per count), growing with it
    assert counted <= 35 * len(text), counted / len(text)


def test_a_megabyte_of_chinese_is_ingested() -> None:
    with Memory("memory://", embedder="hashing", background=False) as mem:
        chunks = mem.knowledge.ingest(Scope("t", "u"), "记忆" * 500_000, title="long")
        assert len(chunks) == 556
