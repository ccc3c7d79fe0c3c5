"""Profile facts: seed 001's conflict rules, expiry, history and the extraction step."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memstrata.clock import FixedClock
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.errors import ProviderError
from memstrata.layers.base import LayerConfig, LayerContext
from memstrata.layers.semantic import (
    FactAction,
    FactExtractionStep,
    FactService,
    decide,
)
from memstrata.llm.base import ExtractedFact
from memstrata.llm.chat import PromptedLLM
from memstrata.llm.fake import ScriptedChat
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.records import Content, MemoryRecord, RecordType, Role, Source
from memstrata.scope import Scope
from memstrata.store import open_store

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ALICE = Scope("acme", "alice", session="s1")


@pytest.fixture(params=["sqlite", "memory"])
def ctx(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LayerContext]:
    url = f"sqlite:///{tmp_path / 'f.db'}" if request.param == "sqlite" else "memory://"
    store = open_store(url)
    yield LayerContext(store, HashingEmbedder(), HeuristicLLM(), FixedClock(T0), LayerConfig())
    store.close()


def fact(value: str, confidence: float, key: str = "favorite_drink") -> ExtractedFact:
    return ExtractedFact(category="preference", key=key, value=value, confidence=confidence)


# --- the pure rules -------------------------------------------------------------------
def test_decide_same_value_confirms_and_caps_confidence() -> None:
    d = decide("Matcha latte", 0.8, 2, "matcha  latte", 0.7)
    assert (d.action, d.confidence, d.mentions) == (FactAction.CONFIRMED, 0.85, 3)
    assert decide("x", 0.98, 1, "x", 0.5).confidence == 1.0


def test_decide_different_value_replaces_only_when_more_confident() -> None:
    assert decide("tea", 0.8, 4, "coffee", 0.9).action is FactAction.REPLACED
    assert decide("tea", 0.8, 4, "coffee", 0.8).action is FactAction.CONFLICT
    assert decide("tea", 0.8, 4, "coffee", 0.5).action is FactAction.CONFLICT
    assert decide("tea", 0.8, 4, "coffee", 0.5, current_expired=True).action is FactAction.REPLACED
    assert decide(None, 0.0, 0, "coffee", 0.5).action is FactAction.INSERTED


# --- the service ------------------------------------------------------------------------
def test_same_value_adds_a_mention_and_a_version(ctx: LayerContext) -> None:
    facts = FactService(ctx)
    first = facts.upsert(ALICE, fact("matcha latte", 0.8), ["m1"])
    again = facts.upsert(ALICE, fact("Matcha latte", 0.7), ["m2"])
    assert first.action is FactAction.INSERTED and again.action is FactAction.CONFIRMED
    current = facts.get(ALICE, "favorite_drink")
    assert current is not None and current.id == first.record.id
    assert current.version == 2 and current.confidence == pytest.approx(0.85)
    assert current.content.structured["mentions"] == 2
    assert current.source_ids == ("m1", "m2")
    assert current.session is None and current.text == "favorite_drink: matcha latte"


def test_more_confident_change_supersedes_and_keeps_the_old_value(ctx: LayerContext) -> None:
    facts = FactService(ctx)
    old = facts.upsert(ALICE, fact("tea", 0.7), ["m1"]).record
    ctx.clock.advance(days=1)  # type: ignore[attr-defined]
    out = facts.upsert(ALICE, fact("coffee", 0.9), ["m2"])
    assert out.action is FactAction.REPLACED
    current = facts.get(ALICE, "favorite_drink")
    assert current is not None and current.content.structured["value"] == "coffee"
    assert current.source == Source.CORRECTED_MEMORY
    assert set(current.source_ids) == {"m2", old.id}
    kept = ctx.store.get(ALICE.user_scope, old.id)
    assert kept.superseded_by == current.id and kept.valid_to == T0 + timedelta(days=1)
    assert kept.is_active and kept.content.structured["value"] == "tea"
    values = [v.content.structured["value"] for v in facts.history(ALICE, "favorite_drink")]
    assert values == ["tea", "tea", "coffee"]


def test_less_confident_change_is_recorded_as_a_conflict(ctx: LayerContext) -> None:
    facts = FactService(ctx)
    facts.upsert(ALICE, fact("tea", 0.9), ["m1"])
    out = facts.upsert(ALICE, fact("coffee", 0.6), ["m2"])
    assert out.action is FactAction.CONFLICT
    current = facts.get(ALICE, "favorite_drink")
    assert current is not None and current.content.structured["value"] == "tea"
    conflicts = current.content.structured["conflicts"]
    assert [(c["value"], c["source_ids"]) for c in conflicts] == [("coffee", ["m2"])]
    # the same evidence again is not a second conflict
    assert facts.upsert(ALICE, fact("coffee", 0.6), ["m2"]).action is FactAction.UNCHANGED


def test_expired_facts_are_not_returned(ctx: LayerContext) -> None:
    facts = FactService(ctx)
    facts.upsert(
        ALICE,
        fact("in Paris this week", 0.9, key="location"),
        ["m1"],
        expires_at=T0 + timedelta(days=7),
    )
    assert facts.get(ALICE, "location") is not None
    assert [r.metadata["key"] for r in facts.relevant(ALICE, "where is she")] == ["location"]
    ctx.clock.advance(days=8)  # type: ignore[attr-defined]
    assert facts.get(ALICE, "location") is None
    assert facts.relevant(ALICE, "where is she") == []
    assert facts.relevant(ALICE) == []


def test_relevant_applies_the_confidence_floor_and_limit(ctx: LayerContext) -> None:
    facts = FactService(ctx)
    facts.upsert(ALICE, fact("jazz", 0.9, key="music"), ["m1"])
    facts.upsert(ALICE, fact("maybe cats", 0.4, key="pet"), ["m2"])
    keys = [r.metadata["key"] for r in facts.relevant(ALICE, "music jazz")]
    assert keys == ["music"]
    assert len(facts.relevant(ALICE, None, limit=5, min_confidence=0.0)) == 2


# --- the ingest step --------------------------------------------------------------------
def message(text: str, role: Role = Role.USER, mid: str = "msg1") -> MemoryRecord:
    return MemoryRecord(
        id=mid,
        tenant="acme",
        user="alice",
        session="s1",
        type=RecordType.MESSAGE,
        role=role,
        content=Content(text),
        created_at=T0,
        updated_at=T0,
        observed_at=T0,
        source_ids=(mid,),
    )


def test_extraction_step_reads_user_messages_only_and_is_idempotent(ctx: LayerContext) -> None:
    step = FactExtractionStep(ctx)
    batch = [
        message("My favorite drink is matcha latte.", mid="u1"),
        message("My favorite drink is espresso.", Role.ASSISTANT, mid="a1"),
    ]
    step.on_messages(ALICE, batch)
    step.on_messages(ALICE, batch)  # a job that ran twice
    current = FactService(ctx).get(ALICE, "favorite_drink")
    assert current is not None and current.content.structured["value"] == "matcha latte"
    assert current.source_ids == ("u1",) and current.content.structured["mentions"] == 1


class BrokenLLM(HeuristicLLM):
    """An LLM whose extraction endpoint is down."""

    def extract_facts(self, texts: object) -> list[ExtractedFact]:
        raise ProviderError("endpoint unreachable")


def test_extraction_falls_back_to_the_heuristic(ctx: LayerContext) -> None:
    for llm in (BrokenLLM(), PromptedLLM(ScriptedChat("not json", "still {not json"))):
        c = LayerContext(ctx.store, ctx.embedder, llm, ctx.clock, ctx.config)
        FactExtractionStep(c).on_messages(ALICE, [message("我叫李雷", mid=f"zh-{llm.name}")])
    current = FactService(ctx).get(ALICE, "name")
    assert current is not None and current.content.structured["value"] == "李雷"
    assert current.content.structured["mentions"] == 2
