"""Layer services given the wrong kind of object, an import line with a vector that is not
base64, and API-key stores given ids and names their database cannot hold: each answered
with a raw ``AttributeError``/``TypeError``/``ValueError`` or a store-dependent
``StoreError`` before session 20's audit."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from memstrata import (
    ImportFormatError,
    Memory,
    NotFoundError,
    RecordType,
    Scope,
    ValidationError,
)
from memstrata.llm.models import Reflection, TaskOutcome
from memstrata.server.keys import InMemoryKeyStore, KeyStore, SQLiteKeyStore
from robustness.conftest import snapshot

ALICE = Scope("acme", "alice", session="s1")
BOB = Scope("globex", "bob", session="s9")
TASK = TaskOutcome(goal="fix the login bug", steps=["reproduce", "patch"])
REFLECTION = Reflection(summary="Reproducing first made the patch small", lessons=["test"])


def _refused(mem: Memory, call: Any, says: str) -> None:
    before = snapshot(mem, ALICE)
    with pytest.raises(ValidationError) as err:
        call()
    assert says in str(err.value)
    assert snapshot(mem, ALICE) == before


@pytest.mark.parametrize(
    ("name", "call", "says"),
    [
        ("promote a string", lambda m: m.key.promote(ALICE, "c1"), "cluster must be"),
        ("promote None", lambda m: m.key.promote(ALICE, None), "cluster must be"),
        ("record_task list", lambda m: m.episodes.record_task(ALICE, ["x"], REFLECTION), "task"),
        ("record_task None", lambda m: m.episodes.record_task(ALICE, TASK, None), "reflection"),
        (
            "record_task bad mapping",
            lambda m: m.episodes.record_task(ALICE, {"steps": []}, REFLECTION),
            "task.goal",
        ),
        (
            "task_episode bad importance",
            lambda m: m.episodes.task_episode(ALICE, TASK, {"summary": "s", "importance": 3}),
            "reflection.importance",
        ),
        ("conversation of strings", lambda m: m.episodes.record_conversation(ALICE, ["hi"]), "[0]"),
        (
            "conversation trigger",
            lambda m: m.episodes.record_conversation(ALICE, [], trigger=5),
            "trigger",
        ),
        ("learn a mapping", lambda m: m.procedures.learn(ALICE, {"goal": 1}, REFLECTION), "goal"),
        (
            "learn strategy",
            lambda m: m.procedures.learn(ALICE, TASK, REFLECTION, strategy=5),
            "strategy",
        ),
        ("lessons None", lambda m: m.procedures.lessons(ALICE, None, REFLECTION), "task"),
        ("store a string", lambda m: m.procedures.store_lessons(ALICE, "abc"), "learned"),
        ("store garbage", lambda m: m.procedures.store_lessons(ALICE, [("x", None)]), "pair"),
    ],
)
def test_services_refuse_the_wrong_kind_of_object(
    mem: Memory, name: str, call: Any, says: str
) -> None:
    mem.add(ALICE, "I live in Lisbon")
    _refused(mem, lambda: call(mem), says)


def test_a_mapping_of_a_task_and_its_reflection_is_accepted(mem: Memory) -> None:
    rec = mem.episodes.record_task(ALICE, TASK.model_dump(), REFLECTION.model_dump())
    assert rec.type is RecordType.EPISODE and rec.content.structured["task"] == TASK.goal


def test_store_lessons_writes_only_into_the_scopes_user(mem: Memory) -> None:
    """A lesson built for another tenant's user was written into that tenant through
    alice's scope."""
    theirs = mem.procedures.lessons(BOB, TASK, REFLECTION)
    assert theirs
    _refused(mem, lambda: mem.procedures.store_lessons(ALICE, theirs), "another user")
    assert mem.list(BOB.user_scope, filters={"types": ["procedure"]}) == []


def _export_line_with(mem: Memory, embedding: object) -> list[str]:
    mem.add(ALICE, "I live in Lisbon")
    lines = "".join(mem.export_chunks(ALICE, include_embeddings=True)).splitlines()
    head, record, *rest = lines
    item = json.loads(record)
    item["record"]["id"] = "imported-1"
    item["embedding"] = embedding
    return [head, json.dumps(item), *rest]


@pytest.mark.parametrize("embedding", [[0.1, 0.2], 5, {"v": 1}])
def test_an_import_vector_that_is_not_base64_text_is_an_import_error(
    mem: Memory, embedding: object
) -> None:
    """``base64.b64decode`` raised TypeError on a list (as another tool might write it)."""
    lines = _export_line_with(mem, embedding)
    before = snapshot(mem, ALICE)
    with pytest.raises(ImportFormatError, match="line 2: embedding must be base64 text"):
        mem.import_records(io.StringIO("\n".join(lines) + "\n"))
    assert snapshot(mem, ALICE) == before


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def keys(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        store: KeyStore = InMemoryKeyStore()
    elif request.param == "sqlite":
        store = SQLiteKeyStore(str(tmp_path / "keys.db"))
    else:
        from memstrata.server.pg_keys import PostgresKeyStore

        store = PostgresKeyStore(request.getfixturevalue("pg_url"))
    yield store
    store.close()


@pytest.mark.parametrize("name", ["a\x00b", "\ud800", 5])
def test_a_key_name_no_store_can_hold_is_refused_on_every_key_store(
    keys: KeyStore, name: object
) -> None:
    """PostgreSQL's key store raised StoreError (a 503 over HTTP) for a NUL or a lone
    surrogate in the name; SQLite and memory stored it."""
    with pytest.raises(ValidationError, match="name"):
        keys.create("acme", name=name)  # type: ignore[arg-type]
    assert keys.list() == []
    assert keys.create("acme", name="ci runner").key.name == "ci runner"


@pytest.mark.parametrize("key_id", ["ab\x00", "\ud800", "nope", 12])
def test_revoking_an_impossible_key_id_is_not_found_on_every_key_store(
    keys: KeyStore, key_id: object
) -> None:
    kept = keys.create("acme").key
    with pytest.raises(NotFoundError, match="no API key"):
        keys.revoke(key_id)  # type: ignore[arg-type]
    assert [k.active for k in keys.list()] == [True] and keys.list()[0].id == kept.id
