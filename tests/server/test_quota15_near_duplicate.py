"""``POST /v1/users/{user}/memories`` at a full records quota: a near duplicate of a stored
memory merges into it (201 with the stored record, ``mentions`` counted, no new record), a
new memory is a 429 ``quota_exceeded`` that writes nothing. Before, both were 429.
Served natively (``AsyncMemory``) and through a sync ``Memory``."""

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

U = "/v1/users/alice/memories"
ALICE = Scope("acme", "alice")
QUOTAS = Quotas(per_user=Quota(max_records=2, embeddings_per_day=6))
STORED = ["The spare key is under the blue flowerpot", "Take 7 pills on Monday"]
NEAR = [
    "the spare key is under the blue flowerpot!",
    "Take seven pills on Monday.",
    "THE SPARE KEY IS UNDER THE BLUE FLOWERPOT.",
]


@pytest.fixture(params=["native", "sync"])
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, str, Memory]]:
    db = tmp_path / "quota.db"
    keys = SQLiteKeyStore(str(db))
    secret = keys.create("acme").secret
    look = Memory(f"sqlite:///{db}", embedder="hashing", background=False, clock=CLOCK)
    options: dict[str, Any] = {
        "embedder": "hashing",
        "background": False,
        "clock": CLOCK,
        "quotas": QUOTAS,
    }
    served: AsyncMemory | Memory
    if request.param == "native":
        served = AsyncMemory(f"sqlite:///{db}", **options)
        built = create_app(served, keys, limits=Limits(rate=0), on_close=served.aclose, mcp=False)
    else:
        served = Memory(f"sqlite:///{db}", **options)
        built = create_app(served, keys, limits=Limits(rate=0), on_close=served.close, mcp=False)
    with TestClient(built, raise_server_exceptions=False) as client:
        yield client, secret, look
    keys.close()
    look.close()


def _texts(look: Memory) -> list[str]:
    every = Filters(include_deleted=True, include_superseded=True)
    return sorted(r.text for r in look.store.list(ALICE, every))


def test_a_near_duplicate_merges_and_a_new_memory_is_refused(
    app: tuple[Any, str, Memory],
) -> None:
    client, secret, look = app
    h = {"Authorization": f"Bearer {secret}"}
    ids = [client.post(U, headers=h, json={"content": t}).json()["id"] for t in STORED]
    assert _texts(look) == sorted(STORED)
    mentions = {ids[0]: 1, ids[1]: 1}
    for text in NEAR:
        r = client.post(U, headers=h, json={"content": text})
        assert r.status_code == 201, r.text  # before: 429
        body = r.json()
        assert body["id"] in ids and body["content"]["raw"] in STORED
        mentions[body["id"]] += 1
        assert body["metadata"]["mentions"] == mentions[body["id"]]
    assert mentions == {ids[0]: 3, ids[1]: 2}
    before = _texts(look)
    r = client.post(U, headers=h, json={"content": "The car is parked on level three"})
    assert r.status_code == 429 and r.headers["Retry-After"] == "3600"
    error = r.json()["error"]
    assert error["code"] == "quota_exceeded" and "max_records (per user)" in error["message"]
    assert _texts(look) == before  # nothing written
    assert len(look.history(ALICE, ids[0])) == 3  # the record and its two merged versions


def test_the_embeddings_quota_bounds_what_a_full_records_quota_embeds(
    app: tuple[Any, str, Memory],
) -> None:
    """Each non-exact add at a full records quota costs one counted embedding (6 a day
    here): once they are used up, a 429 names both quotas and when to retry."""
    client, secret, look = app
    h = {"Authorization": f"Bearer {secret}"}
    for text in STORED:
        assert client.post(U, headers=h, json={"content": text}).status_code == 201
    for i in range(4):  # two stored + four decided: the six embeddings of the day
        text = NEAR[0] if i % 2 else f"A new memory, number {i}"
        assert client.post(U, headers=h, json={"content": text}).status_code == (
            201 if i % 2 else 429
        )
    r = client.post(U, headers=h, json={"content": NEAR[1]})
    assert r.status_code == 429
    message = r.json()["error"]["message"]
    assert "max_records (per user)" in message and "embeddings_per_day (per user)" in message
    assert 0 < int(r.headers["Retry-After"]) <= 12 * 3600 + 1  # UTC midnight (clock at noon)
    r = client.post(U, headers=h, json={"content": f" {STORED[1]} "})  # exact: no embedding
    assert r.status_code == 201 and r.json()["metadata"]["mentions"] == 2
    assert len(_texts(look)) == 2
