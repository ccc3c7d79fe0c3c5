"""Update modes (seed 000 §4): overwrite, append, merge (LLM or field-wise newer-wins)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import pytest

from memstrata.clock import FixedClock
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.errors import ConflictError, ValidationError
from memstrata.layers.base import LayerConfig, LayerContext
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.policies.update_modes import (
    UpdateMode,
    apply_update,
    merge_newer_wins,
    update_content,
)
from memstrata.records import Content, RecordType
from memstrata.scope import Scope
from memstrata.store import open_store
from memstrata.writes import note_record

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_overwrite_and_append() -> None:
    cur = Content("likes tea", structured={"history": ["a"], "x": 1})
    new = Content("likes coffee", structured={"history": ["b"], "x": 2})
    assert update_content("overwrite", cur, new) == new
    appended = update_content(UpdateMode.APPEND, cur, new)
    assert appended.raw == "likes tea\nlikes coffee"
    assert appended.structured == {"history": ["a", "b"], "x": 2}
    with pytest.raises(ValidationError, match="overwrite, append, merge"):
        update_content("replace", cur, new)


def test_merge_newer_wins_field_wise() -> None:
    cur = {"city": "Paris", "job": "chef", "pet": "cat"}
    inc = {"city": "Lisbon", "job": "", "age": "31"}
    assert merge_newer_wins(cur, inc) == {
        "city": "Lisbon",
        "job": "chef",
        "pet": "cat",
        "age": "31",
    }
    assert merge_newer_wins(cur, inc, incoming_is_newer=False)["city"] == "Paris"


class UpperMerge(HeuristicLLM):
    def merge_profile(
        self, current: Mapping[str, str], incoming: Mapping[str, str]
    ) -> dict[str, str]:
        return {"city": incoming["city"].upper()}


def test_merge_uses_the_llm_and_renders_fields() -> None:
    cur = Content("city: Paris", structured={"city": "Paris", "pet": "cat"})
    new = Content("city: Lisbon", structured={"city": "Lisbon"})
    merged = update_content("merge", cur, new, llm=UpperMerge())
    assert merged.structured == {"city": "LISBON", "pet": "cat"}
    assert merged.raw == "city: LISBON\npet: cat"


def test_apply_update_writes_a_version_and_locks() -> None:
    store = open_store("memory://")
    ctx = LayerContext(store, HashingEmbedder(), HeuristicLLM(), FixedClock(T0), LayerConfig())
    scope = Scope("acme", "alice")
    record = note_record(
        scope,
        "city: Paris",
        type=RecordType.NOTE,
        now=T0,
        model_id="x",
        dims=256,
        max_chars=1000,
        importance=0.5,
        structured={"city": "Paris"},
    )
    ctx.insert([record])
    updated = apply_update(
        ctx,
        scope,
        record,
        Content("", structured={"city": "Rome"}),
        "merge",
        observed_at=T0 + timedelta(days=1),
    )
    assert updated.version == 2 and store.get(scope, record.id).text == "city: Rome"
    assert [v.text for v in store.history(scope, record.id)] == ["city: Paris", "city: Rome"]
    with pytest.raises(ConflictError):
        apply_update(ctx, scope, record, Content("stale"), "overwrite")
    store.close()
