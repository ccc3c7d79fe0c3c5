"""The app over an ``AsyncMemory`` (what ``memstrata serve`` runs): its lifespan opens the
memory on the server's loop and closes it, calls are awaited (no thread per call), the
shared rate limits use the memory's store counters, the jobs metric reads its store."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from memstrata import AsyncMemory, Filters, Memory, Scope
from memstrata.ratelimit import SharedRateLimiter
from memstrata.server import create_app
from memstrata.server.app import Limits
from memstrata.server.backend import Backend
from memstrata.server.calls import awaited, in_thread
from memstrata.server.factory import ServeConfig, build_app
from memstrata.server.keys import SQLiteKeyStore
from memstrata.server.state import state_of

U = "/v1/users/alice"


def _native(db: Path) -> AsyncMemory:
    return AsyncMemory(f"sqlite:///{db}", embedder="hashing", background=False)


def test_the_lifespan_opens_the_memory_and_on_close_closes_it(tmp_path: Path) -> None:
    db = tmp_path / "n.db"
    mem = _native(db)
    keys = SQLiteKeyStore(str(db))
    secret = keys.create("acme").secret
    app = create_app(mem, keys, limits=Limits(rate=0), on_close=mem.aclose)
    backend = state_of(app).backend
    assert isinstance(backend, Backend) and backend._call is awaited
    assert not mem.closed
    with TestClient(app) as client:
        h = {"Authorization": f"Bearer {secret}"}
        r = client.post(f"{U}/memories", headers=h, json={"content": "Alice keeps bees"})
        assert r.status_code == 201, r.text
        hits = client.post(f"{U}/search", headers=h, json={"query": "bees"}).json()
        assert hits["hits"][0]["record"]["content"]["raw"] == "Alice keeps bees"
        layers = client.get(f"{U}/layers", headers=h).json()
        assert layers["counts"]["notes"] == 1
        assert client.get("/readyz").status_code == 200
    assert mem.closed
    keys.close()
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as sync:
        [note] = sync.list(Scope("acme", "alice"))
        assert note.text == "Alice keeps bees"


def test_a_sync_memory_is_still_served_on_threads(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with Memory(f"sqlite:///{db}", embedder="hashing", background=False) as mem:
        keys = SQLiteKeyStore(str(db))
        app = create_app(mem, keys, limits=Limits(rate=0))
        backend = state_of(app).backend
        assert isinstance(backend, Backend) and backend._call is in_thread
        secret = keys.create("acme").secret
        with TestClient(app) as client:
            r = client.post(
                f"{U}/memories",
                headers={"Authorization": f"Bearer {secret}"},
                json={"content": "Alice keeps bees"},
            )
            assert r.status_code == 201, r.text
        assert mem.store.count(Scope("acme", "alice"), Filters()) == 1
        keys.close()


def test_the_shared_limit_draws_on_the_async_memorys_store(tmp_path: Path) -> None:
    """Two apps, each with its own AsyncMemory on one SQLite file: one limit between them."""
    db = tmp_path / "l.db"
    keys = SQLiteKeyStore(str(db))
    secret = keys.create("acme").secret
    h = {"Authorization": f"Bearer {secret}"}
    limits = Limits(rate=1e-6, burst=2, shared_batch=1)
    mems = [_native(db), _native(db)]
    apps = [create_app(m, keys, limits=limits, mcp=False, on_close=m.aclose) for m in mems]
    assert all(isinstance(state_of(a).limiter, SharedRateLimiter) for a in apps)
    with TestClient(apps[0]) as one, TestClient(apps[1]) as two:
        codes = [c.get(f"{U}/memories", headers=h).status_code for c in (one, two, one, two)]
    assert codes == [200, 200, 429, 429]
    keys.close()


def test_build_app_serves_an_async_memory_and_reports_its_jobs(tmp_path: Path) -> None:
    db = tmp_path / "f.db"
    config = ServeConfig(url=f"sqlite:///{db}", embedder="hashing", rate=0, mcp=False)
    app, mem, keys = build_app(config)
    assert isinstance(mem, AsyncMemory)
    secret = keys.create("acme").secret
    with TestClient(app) as client:
        r = client.post(
            f"{U}/sessions/s1/messages",
            headers={"Authorization": f"Bearer {secret}"},
            json={"role": "user", "content": "I keep bees"},
        )
        assert r.status_code == 201, r.text
        metrics = client.get("/metrics").text
        assert "memstrata_jobs_pending" in metrics
    assert mem.closed


def test_background_jobs_run_on_the_servers_loop(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    config = ServeConfig(url=f"sqlite:///{db}", embedder="hashing", rate=0, mcp=False)
    app, mem, keys = build_app(config)
    secret = keys.create("acme", role="admin").secret
    h = {"Authorization": f"Bearer {secret}"}
    with TestClient(app) as client:
        assert mem._worker is not None  # the memory's task, on the client's loop
        for i in range(3):
            r = client.post(
                f"{U}/sessions/s1/messages",
                headers=h,
                json={"role": "user", "content": f"I keep bees, hive {i}"},
            )
            assert r.status_code == 201, r.text
        assert client.post(f"{U}/sessions/s1/end", headers=h).status_code == 200
        assert client.post(f"{U}/jobs/run", headers=h).status_code == 200
        jobs = client.get(f"{U}/jobs", headers=h).json()["jobs"]
        assert jobs and all(j["status"] != "failed" for j in jobs)
    assert mem.closed
