"""Profile facts follow the turns they repeat (issue 10 §6's rule for derived records).

A fact the semantic layer extracted from a turn repeats its words: its value, and its
``conflicts`` — the value and sentence another turn said when it did not replace the fact.
Before, a purged turn left both behind: the conflict entry kept its value, its sentence and
its id (the conflicts were not among the fact's sources), and an extracted fact whose only
turn was purged kept its value (extracted facts were taken for the user's own words).
Facts the user set keep their value; only the purged sentence goes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.filters import Filters
from memstrata.llm.models import ExtractedFact

S1, S2 = Scope("acme", "alice", session="s1"), Scope("acme", "alice", session="s2")
EVERY = Filters(include_deleted=True, include_superseded=True)


def _file(path: Path) -> bytes:
    return b"".join(
        Path(f"{path}{s}").read_bytes() for s in ("", "-wal") if Path(f"{path}{s}").exists()
    )


def _says(mem: Memory, word: str) -> list[str]:
    """Every version of every record of the user that holds ``word`` anywhere."""
    hits = []
    for r in mem.store.list(S1.user_scope, EVERY, limit=10_000):
        for v in mem.history(S1.user_scope, r.id):
            blob = v.text + json.dumps(v.content.structured, ensure_ascii=False)
            if word in blob:
                hits.append(f"{v.type.value} v{v.version}: {v.text}")
    return hits


def _tell(mem: Memory, scope: Scope, text: str) -> str:
    rid = mem.add_message(scope, "user", text).id
    mem.end_session(scope)
    return rid


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "m.db"


@pytest.fixture
def sqlite_mem(path: Path, clock: FixedClock) -> Iterator[Memory]:
    """On a SQLite file, to scan its bytes (the other tests take every store: ``mem``)."""
    m = Memory(f"sqlite:///{path}", embedder="hashing", background=False, clock=clock)
    yield m
    m.close()


def test_a_purged_turn_leaves_no_conflict_in_a_fact(sqlite_mem: Memory, path: Path) -> None:
    mem = sqlite_mem
    _tell(mem, S1, "I live in Paris.")
    said = _tell(mem, S2, "I live in Zorbville.")  # same confidence: recorded as a conflict
    fact = mem.facts.get(S2, "location")
    assert fact is not None and fact.content.structured["conflicts"]
    mem.purge(S2, [said])
    fact = mem.facts.get(S2, "location")
    assert fact is not None and fact.text == "location: Paris"
    assert fact.content.structured["conflicts"] == []
    assert _says(mem, "Zorbville") == []
    mem.close()
    data = _file(path)
    assert b"Zorbville" not in data  # (the audit log keeps the purge event with its id)


def test_an_extracted_fact_goes_with_its_only_turn(sqlite_mem: Memory, path: Path) -> None:
    mem = sqlite_mem
    said = _tell(mem, S1, "I'm allergic to quuxberries.")
    assert mem.facts.get(S1, "allergy") is not None
    mem.purge(S1, [said])
    assert mem.facts.get(S1, "allergy") is None
    assert _says(mem, "quuxberr") == []
    mem.close()
    assert b"quuxberr" not in _file(path)


def test_a_conflict_left_takes_the_place_of_a_purged_value(mem: Memory) -> None:
    said = _tell(mem, S1, "I live in Zorbville.")
    _tell(mem, S2, "I live in Lyon.")
    mem.purge(S1, [said])
    fact = mem.facts.get(S2, "location")
    assert fact is not None and fact.text == "location: Lyon"
    assert fact.content.structured["conflicts"] == []
    assert _says(mem, "Zorbville") == []


def test_a_fact_the_user_set_keeps_its_value_but_not_the_purged_sentence(mem: Memory) -> None:
    said = mem.add_message(S1, "user", "note: my dentist is Dr Quill").id
    mem.facts.upsert(
        S1,
        ExtractedFact(
            category="relation",
            key="dentist",
            value="Dr Quill",
            confidence=0.9,
            evidence="my dentist is Dr Quill",
        ),
        [said],
    )
    mem.purge(S1, [said])
    fact = mem.facts.get(S1, "dentist")
    assert fact is not None and fact.text == "dentist: Dr Quill"
    assert fact.source_ids == () and not fact.content.structured.get("evidence")


def test_a_forgotten_turn_forgets_its_extracted_fact_restorably(mem: Memory) -> None:
    said = _tell(mem, S1, "I'm allergic to quuxberries.")
    fact = mem.facts.get(S1, "allergy")
    assert fact is not None
    mem.forget(S1, [said])
    mem.maintain(S1)
    assert mem.facts.get(S1, "allergy") is None
    assert not mem.get(S1.user_scope, fact.id, include_deleted=True).is_active  # soft: restorable


@pytest.mark.parametrize("how", ["purge", "forget"])
def test_an_update_that_goes_gives_the_previous_value_back(mem: Memory, how: str) -> None:
    _tell(mem, S1, "I live in Paris.")
    moved = _tell(mem, S2, "We just moved to Zorbville!")  # a stated change: replaces Paris
    fact = mem.facts.get(S2, "location")
    assert fact is not None and fact.text == "location: Zorbville"
    if how == "purge":
        mem.purge(S2, [moved])
        assert _says(mem, "Zorbville") == []
    else:
        mem.forget(S2, [moved])
        mem.maintain(S2)
    back = mem.facts.get(S2, "location")
    assert back is not None and back.text == "location: Paris"
    assert back.valid_to is None and back.superseded_by is None
