"""Knowledge chunks: sizes and overlap at the defaults, rejoin round-trips (EN and ZH)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from memstrata.clock import FixedClock
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.errors import ValidationError
from memstrata.layers.base import LayerConfig, LayerContext
from memstrata.layers.knowledge import KnowledgeService, rejoin
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.policies.chunking import chunk_text, join_chunks
from memstrata.records import RecordType
from memstrata.scope import Scope
from memstrata.store import open_store
from memstrata.tokens import estimate_tokens

ALICE = Scope("acme", "alice")


def english(paragraphs: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    words = [
        "memory",
        "layer",
        "token",
        "chunk",
        "overlap",
        "retrieval",
        "agent",
        "session",
        "summary",
        "fact",
    ]
    return "\n\n".join(
        " ".join(
            " ".join(rng.choice(words) for _ in range(rng.randint(6, 30))).capitalize() + "."
            for _ in range(rng.randint(2, 9))
        )
        for _ in range(paragraphs)
    )


def chinese(sentences: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    parts = [
        "我们讨论了记忆系统的设计",
        "用户喜欢喝抹茶拿铁",
        "下周三之前必须完成报告",
        "向量检索需要归一化",
        "长期记忆按重要性衰减",
    ]
    return "".join(rng.choice(parts) + rng.choice("。！？；") for _ in range(sentences))


@pytest.fixture
def ctx() -> Iterator[LayerContext]:
    store = open_store("sqlite://:memory:")
    yield LayerContext(
        store,
        HashingEmbedder(),
        HeuristicLLM(),
        FixedClock(datetime(2026, 1, 1, tzinfo=UTC)),
        LayerConfig(),
    )
    store.close()


@pytest.mark.parametrize("text", [english(200), chinese(3000)], ids=["en", "zh"])
def test_default_sizes_and_overlap(text: str) -> None:
    chunks = chunk_text(text, 2000, 200)
    assert len(chunks) >= 3
    sizes = [estimate_tokens(c.text) for c in chunks]
    assert max(sizes) <= 2000 and min(sizes[:-1]) >= 1000
    overlaps = [estimate_tokens(c.text[: c.overlap_chars]) for c in chunks[1:]]
    assert all(100 <= o <= 200 for o in overlaps), overlaps
    assert chunks[0].overlap_chars == 0
    assert join_chunks([(c.text, c.overlap_chars) for c in chunks]) == text


def test_chunks_prefer_sentence_ends() -> None:
    chunks = chunk_text(english(50), 300, 30)
    assert all(c.text.rstrip().endswith(".") for c in chunks)


def test_unbreakable_text_is_still_cut_within_budget() -> None:
    chunks = chunk_text("x" * 10_000, 500, 50)
    assert max(estimate_tokens(c.text) for c in chunks) <= 500
    assert join_chunks([(c.text, c.overlap_chars) for c in chunks]) == "x" * 10_000


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValidationError, match="overlap_tokens < chunk_tokens"):
        chunk_text("abc", 100, 100)


@pytest.mark.parametrize("text", [english(120), chinese(2000)], ids=["en", "zh"])
def test_ingest_and_rejoin_round_trip(ctx: LayerContext, text: str) -> None:
    records = KnowledgeService(ctx).ingest(ALICE, text, qa_id="doc-1", title="Design")
    assert all(r.type is RecordType.KNOWLEDGE for r in records)
    assert [r.metadata["chunk_index"] for r in records] == list(range(len(records)))
    assert {r.metadata["chunk_count"] for r in records} == {len(records)}
    shuffled = list(reversed(records))
    assert rejoin(shuffled) == [("doc-1", text)]
    stored = ctx.store.get_many(ALICE, [r.id for r in records])
    assert rejoin(stored) == [("doc-1", text)]


def test_rejoin_marks_gaps_and_keeps_document_order(ctx: LayerContext) -> None:
    service = KnowledgeService(ctx)
    a = service.ingest(ALICE, english(120, seed=1), qa_id="a")
    b = service.ingest(ALICE, "A short answer about embeddings.", qa_id="b")
    assert len(a) >= 3
    joined = rejoin([b[0], a[2], a[0]])
    assert [qa for qa, _ in joined] == ["b", "a"]
    assert joined[1][1] == a[0].text + "\n…\n" + a[2].text
