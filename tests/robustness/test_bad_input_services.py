"""Bad input to the layer services and to ``forget`` / ``maintain`` that did not fail but did
the wrong thing (found by ``test_fuzz_services``); each is refused now with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memstrata import Memory, Scope, ValidationError
from memstrata.llm.chat import PromptedLLM
from memstrata.llm.fake import ScriptedChat
from memstrata.llm.models import ExtractedFact

from .conftest import snapshot

S = Scope("acme", "alice", session="s1")


def test_one_string_is_not_a_list_of_ids(mem: Memory) -> None:
    said = mem.add_message(S, "user", "I live in Paris.")
    before = snapshot(mem, S)
    with pytest.raises(ValidationError, match=r"record_ids must be a list.*\[.abc.\]"):
        mem.forget(S, "abc")  # was read as the ids "a", "b", "c"
    fact = ExtractedFact(category="identity", key="location", value="Paris", confidence=0.9)
    with pytest.raises(ValidationError, match="source_ids must be a list"):
        mem.facts.upsert(S, fact, said.id)  # the fact cited "0", "1", ... as its sources
    assert snapshot(mem, S) == before


def test_a_dry_run_flag_must_be_a_bool(mem: Memory) -> None:
    mem.add_message(S, "user", "I live in Paris.")
    before = snapshot(mem, S)
    with pytest.raises(ValidationError, match="dry_run must be"):
        mem.maintain(S, dry_run="no")  # a non-empty string was true: a dry run, not a pass
    assert snapshot(mem, S) == before


def test_a_fact_may_be_a_mapping_of_its_fields_but_not_anything(mem: Memory) -> None:
    out = mem.facts.upsert(
        S, {"category": "identity", "key": "location", "value": "Paris", "confidence": 0.9}
    )
    assert out.record.text == "location: Paris"
    before = snapshot(mem, S)
    with pytest.raises(ValidationError, match="fact is not valid"):
        mem.facts.upsert(S, {"key": "location"})
    with pytest.raises(ValidationError, match="fact must be"):
        mem.facts.upsert(S, "location: Paris")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="observed_at"):
        mem.facts.upsert(S, out.record.content.structured, observed_at="yesterday")  # type: ignore[arg-type]
    assert snapshot(mem, S) == before


def test_a_malformed_fact_from_a_model_is_skipped_not_retried(tmp_path: Path) -> None:
    """The extraction job keeps the model's good facts and skips a blank one, instead of
    failing (and retrying) the whole message."""
    reply = json.dumps(
        {
            "facts": [
                {"category": "identity", "key": "name", "value": "   ", "confidence": 0.9},
                {"category": "identity", "key": "location", "value": "Oslo", "confidence": 0.9},
            ]
        }
    )
    llm = PromptedLLM(ScriptedChat(reply))
    with Memory(f"sqlite:///{tmp_path}/m.db", embedder="hashing", llm=llm, background=False) as m:
        m.add_message(S, "user", "I live in Oslo.")
        m.flush(S)
        assert [f.text for f in m.facts.all(S)] == ["location: Oslo"]
        assert not [j for j in m.store.list_jobs("acme", "alice") if j.status.value != "done"]


def test_an_id_given_twice_is_forgotten_once(mem: Memory) -> None:
    """Found by the services fuzz test: the second soft delete of the same record raised a
    ``ConflictError`` after the first was written (a refusal that changed the store)."""
    said = mem.add_message(S, "user", "I live in Paris.")
    entries = mem.forget(S, [said.id, said.id])
    assert [e.record_id for e in entries] == [said.id]
    assert not mem.get(S, said.id, include_deleted=True).is_active


@pytest.mark.parametrize(
    ("tag", "importance", "match"),
    [
        ("\ud800", 0.5, "surrogate"),  # reached SQLite: UnicodeEncodeError
        ("travel", 10**400, "importance"),  # OverflowError in the forgetting policy's check
        ("   ", 0.5, "tag must be"),
    ],
    ids=["surrogate-tag", "huge-importance", "blank-tag"],
)
def test_set_importance_by_tag_checks_its_arguments(
    mem: Memory, tag: str, importance: float, match: str
) -> None:
    mem.add(S, "window seat, please", tags=["travel"])
    before = snapshot(mem, S)
    with pytest.raises(ValidationError, match=match):
        mem.set_importance_by_tag(S, tag, importance)
    assert snapshot(mem, S) == before
