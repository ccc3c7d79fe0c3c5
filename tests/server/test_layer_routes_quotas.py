"""The layer services' writes over HTTP count against the operator's quotas like every other
write: the library's services write without them (``mem.add`` and ``add_messages`` admit
their records), so the server admits theirs; a write over a quota is a 429 that writes
nothing."""

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
QUOTAS = Quotas(per_user=Quota(max_records=4))
# each of these writes one new record (twice: a first and a second body)
ONE = [
    ("/facts", {"category": "identity", "key": "location", "value": "Lisbon", "confidence": 1},
     {"category": "identity", "key": "employer", "value": "Acme", "confidence": 1}),
    ("/episodes/feedback", {"text": "The plan was great"}, {"text": "The hotel was noisy"}),
    ("/procedures/failures", {"pattern": "p", "indicators": ["x"], "mitigation": "m"},
     {"pattern": "q", "indicators": ["y"], "mitigation": "n"}),
    ("/knowledge", {"text": "A short note on trams."}, {"text": "A short note on hills."}),
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
    assert _count(look) == 4
    for path, _, more in ONE:
        r = client.post(f"{U}{path}", headers=h, json=more)
        assert r.status_code == 429, (path, r.text)
        error = r.json()["error"]
        assert error["code"] == "quota_exceeded" and "max_records" in error["message"]
        assert r.headers["Retry-After"]
    assert _count(look) == 4


def test_a_document_is_admitted_by_its_chunks(quota_app: tuple[Any, str, Memory]) -> None:
    client, secret, look = quota_app
    h = {"Authorization": f"Bearer {secret}"}
    long = " ".join(f"Sentence {i} about the trams and hills of Lisbon." for i in range(1500))
    r = client.post(f"{U}/knowledge", headers=h, json={"text": long})
    assert r.status_code == 429  # eleven chunks, four allowed
    assert "max_records (per user)" in r.json()["error"]["message"]
    assert _count(look) == 0
    short = " ".join(f"Sentence {i} about the trams." for i in range(300))
    r = client.post(f"{U}/knowledge", headers=h, json={"text": short})
    assert r.status_code == 201 and len(r.json()["chunks"]) == _count(look) <= 4
