"""The layer services' writes over HTTP count against the operator's quotas like every other
write: the library's services admit the records they write (the server calls them as it
calls ``mem.add``), so a write over a quota is a 429 that writes nothing — the facts,
feedback, failure patterns, documents (by their chunks), key memory, tasks and their
completion alike."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memstrata import AsyncMemory, Filters, Memory, Scope
from memstrata.quotas import Quota, Quotas
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.keys import SQLiteKeyStore

from .conftest import CLOCK

U = "/v1/users/alice"
ALICE = Scope("acme", "alice")
QUOTAS = Quotas(per_user=Quota(max_records=6))
# each of these writes one new record (twice: a first and a second body)
ONE = [
    ("/facts", {"category": "identity", "key": "location", "value": "Lisbon", "confidence": 1},
     {"category": "identity", "key": "employer", "value": "Acme", "confidence": 1}),
    ("/episodes/feedback", {"text": "The plan was great"}, {"text": "The hotel was noisy"}),
    ("/procedures/failures", {"pattern": "p", "indicators": ["x"], "mitigation": "m"},
     {"pattern": "q", "indicators": ["y"], "mitigation": "n"}),
    ("/knowledge", {"text": "A short note on trams."}, {"text": "A short note on hills."}),
    ("/key-memory", {"text": "Never book red-eye flights"}, {"text": "Answer in Portuguese"}),
    ("/sessions/s1/task", {"goal": "Plan a trip", "steps": ["book"]}, {"goal": "Pack"}),
]  # fmt: skip


@pytest.fixture(params=["native", "sync"])
def quota_app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, str, Memory]]:
    db = tmp_path / "quota.db"
    keys = SQLiteKeyStore(str(db))
    secret = keys.create("acme").secret
    look = Memory(f"sqlite:///{db}", embedder="hashing", background=False, clock=CLOCK)
    served: AsyncMemory | Memory
    if request.param == "native":
        served = AsyncMemory(
            f"sqlite:///{db}", embedder="hashing", background=False, clock=CLOCK, quotas=QUOTAS
        )
        app = create_app(served, keys, limits=Limits(rate=0), on_close=served.aclose, mcp=False)
    else:
        served = Memory(
            f"sqlite:///{db}", embedder="hashing", background=False, clock=CLOCK, quotas=QUOTAS
        )
        app = create_app(served, keys, limits=Limits(rate=0), on_close=served.close, mcp=False)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, secret, look
    keys.close()
    look.close()


def _count(look: Memory) -> int:
    return look.store.count(ALICE, Filters(include_deleted=True, include_superseded=True))


def test_layer_writes_are_admitted_under_the_records_quota(
    quota_app: tuple[Any, str, Memory],
) -> None:
    client, secret, look = quota_app
    h = {"Authorization": f"Bearer {secret}"}
    for path, body, _ in ONE:
        r = client.post(f"{U}{path}", headers=h, json=body)
        assert r.status_code in (200, 201), (path, r.text)
    assert _count(look) == 6
    for path, _, more in ONE:
        r = client.post(f"{U}{path}", headers=h, json=more)
        assert r.status_code == 429, (path, r.text)
        error = r.json()["error"]
        assert error["code"] == "quota_exceeded" and "max_records" in error["message"]
        assert r.headers["Retry-After"]
    assert _count(look) == 6


def test_a_document_is_admitted_by_its_chunks(quota_app: tuple[Any, str, Memory]) -> None:
    client, secret, look = quota_app
    h = {"Authorization": f"Bearer {secret}"}
    long = " ".join(f"Sentence {i} about the trams and hills of Lisbon." for i in range(1500))
    r = client.post(f"{U}/knowledge", headers=h, json={"text": long})
    assert r.status_code == 429  # eleven chunks, six allowed
    assert "max_records (per user)" in r.json()["error"]["message"]
    assert _count(look) == 0
    short = " ".join(f"Sentence {i} about the trams." for i in range(300))
    r = client.post(f"{U}/knowledge", headers=h, json={"text": short})
    assert r.status_code == 201 and len(r.json()["chunks"]) == _count(look) <= 6


def test_completing_a_task_over_the_quota_is_refused_and_leaves_it_active(
    quota_app: tuple[Any, str, Memory],
) -> None:
    client, secret, look = quota_app
    h = {"Authorization": f"Bearer {secret}"}
    task = f"{U}/sessions/s1/task"
    assert client.post(task, headers=h, json={"goal": "Plan a trip", "steps": ["book"]}).is_success
    for i in range(5):
        r = client.post(f"{U}/key-memory", headers=h, json={"text": f"Constraint {i}"})
        assert r.status_code == 201
    r = client.post(f"{task}/complete", headers=h, json={"success": True, "outcome": "Booked"})
    assert r.status_code == 429 and r.json()["error"]["code"] == "quota_exceeded"
    assert _count(look) == 6
    assert client.get(task, headers=h).json()["metadata"]["task_status"] == "active"


def test_a_document_posted_again_replaces_it(quota_app: tuple[Any, str, Memory]) -> None:
    client, secret, look = quota_app
    h = {"Authorization": f"Bearer {secret}"}
    for text in ("Trams climb the hills.", "Ferries cross the river.", "Ferries cross the river."):
        r = client.post(f"{U}/knowledge", headers=h, json={"text": text, "qa_id": "guide"})
        assert r.status_code == 201
    doc = client.get(f"{U}/knowledge/guide", headers=h).json()
    assert doc["text"] == "Ferries cross the river." and len(doc["chunks"]) == 1
    assert _count(look) == 2  # the first version, deleted (restorable), and the second
    # the store is full but for the new chunk: a third version is refused, the second stays
    for i in range(4):
        client.post(f"{U}/key-memory", headers=h, json={"text": f"Constraint {i}"})
    r = client.post(f"{U}/knowledge", headers=h, json={"text": "Buses.", "qa_id": "guide"})
    assert r.status_code == 429
    assert client.get(f"{U}/knowledge/guide", headers=h).json()["text"] == doc["text"]
