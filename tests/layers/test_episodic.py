"""Episodic memory: the recall formula, the importance filter, the writers."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from memstrata.clock import FixedClock
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.filters import Filters
from memstrata.layers.base import LayerConfig, LayerContext
from memstrata.layers.episodic import ConversationEpisodeStep, EpisodeService, recall_score
from memstrata.llm.base import Reflection, TaskOutcome
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.records import Content, MemoryRecord, RecordType, Role
from memstrata.scope import Scope
from memstrata.store import open_store

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ALICE = Scope("acme", "alice", session="s1")


@pytest.fixture
def ctx() -> Iterator[LayerContext]:
    store = open_store("sqlite://:memory:")
    yield LayerContext(store, HashingEmbedder(), HeuristicLLM(), FixedClock(T0), LayerConfig())
    store.close()


def test_recall_score_is_the_seed_formula() -> None:
    assert recall_score(0.8, 10, 0.6) == pytest.approx(0.5 * 0.8 + 0.3 * 0.95**10 + 0.2 * 0.6)
    assert recall_score(1.0, 0, 1.0) == pytest.approx(1.0)
    assert recall_score(0.0, 2, 0.0, decay=0.5) == pytest.approx(0.3 * 0.25)


def test_recall_ranks_by_score_and_drops_unimportant_episodes(ctx: LayerContext) -> None:
    episodes = EpisodeService(ctx)
    task = TaskOutcome(goal="clean the sales data", steps=["drop nulls"], outcome="done")
    old = episodes.record_task(
        ALICE, task, Reflection(summary="cleaned sales data", importance=0.8)
    )
    ctx.clock.advance(days=30)  # type: ignore[attr-defined]
    new = episodes.record_task(
        ALICE, task, Reflection(summary="cleaned sales data", importance=0.8)
    )
    low = episodes.record_task(
        ALICE, task, Reflection(summary="cleaned sales data", importance=0.3)
    )
    hits = episodes.recall(ALICE.user_scope, "cleaned sales data", k=5)
    assert [h.record.id for h in hits] == [new.id, old.id]  # 0.3 is not > 0.3
    assert low.id not in {h.record.id for h in hits}
    top = hits[0]
    assert top.score == pytest.approx(recall_score(top.similarity, 0.0, 0.8))
    assert hits[1].score == pytest.approx(recall_score(hits[1].similarity, 30.0, 0.8))
    assert len(episodes.recall(ALICE.user_scope, "cleaned sales data")) == 2  # top_k 3


def test_feedback_episode_has_importance_0_9(ctx: LayerContext) -> None:
    record = EpisodeService(ctx).record_feedback(ALICE, "Your last method was wrong, use ARIMA")
    assert record.importance == 0.9 and record.type is RecordType.EPISODE
    assert record.content.structured["kind"] == "feedback"


def _msg(i: int, role: Role, text: str) -> MemoryRecord:
    when = T0 + timedelta(minutes=i)
    return MemoryRecord(
        id=f"m{i}",
        tenant="acme",
        user="alice",
        session="s1",
        type=RecordType.MESSAGE,
        role=role,
        content=Content(text),
        created_at=when,
        updated_at=when,
        observed_at=when,
        source_ids=(f"m{i}",),
    )


def test_session_end_writes_one_conversation_episode(ctx: LayerContext) -> None:
    messages = [
        _msg(0, Role.USER, "I need a budget for the Lisbon trip in May."),
        _msg(1, Role.ASSISTANT, "Here is a budget: flights 300 EUR, hotel 500 EUR."),
    ]
    ctx.insert(messages)
    step = ConversationEpisodeStep(ctx)
    step.on_session_end(ALICE)
    step.on_session_end(ALICE)  # idempotent
    found = ctx.store.list(ALICE, Filters(types=frozenset({RecordType.EPISODE})))
    assert len(found) == 1
    episode = found[0]
    data = episode.content.structured
    assert data["kind"] == "conversation" and data["message_count"] == 2
    assert set(episode.source_ids) == {"m0", "m1"}
    assert "budget" in data["topics"] and data["actions"]
    assert episode.observed_at == T0 + timedelta(minutes=1)
