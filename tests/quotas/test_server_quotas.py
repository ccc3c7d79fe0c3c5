"""``memstrata serve --user-quota ... --tenant-quota ...`` enforces quotas over HTTP (issue
10 §5; before, ``ServeConfig`` had no quota and a server enforced none): two server
processes (``--workers 2``) on one SQLite file or one PostgreSQL schema, concurrent
requests each on a new connection. Exactly the quota is admitted between the processes;
every refusal is a 429 ``quota_exceeded`` with a ``Retry-After`` (seconds to UTC midnight
for a daily quota) and writes nothing. A bad quota is refused before the server starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest

from memstrata.server.keys import open_key_store

CLI = [sys.executable, "-c", "from memstrata.cli.app import main; main()"]


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(db: str, tmp_path: Path, *extra: str) -> Iterator[str]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    log = open(tmp_path / "serve.log", "w+b")  # noqa: SIM115 - closed below
    args = ["--db", db, "--embedder", "hashing", "serve", "--workers", "2", "--port", str(port)]
    proc = subprocess.Popen(
        [*CLI, *args, "--rate-limit", "0", "--log-level", "warning", *extra],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"serve exited {proc.returncode}: {log.read()[-3000:]!r}")
            try:
                if httpx2.get(f"{url}/readyz", timeout=5).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("serve --workers 2 did not become ready in 180 s")
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    db = (
        f"sqlite:///{tmp_path / 'srv.db'}"
        if request.param == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    keys = open_key_store(db)
    key = keys.create("acme").secret
    keys.close()
    quotas = ["--user-quota", "embeddings_per_day=5,records=50", "--tenant-quota", "records=8"]
    for url in _serve(db, tmp_path, *quotas):
        yield url, key


def _post_many(url: str, key: str, user: str, n: int) -> list[Any]:
    def one(i: int) -> Any:
        with httpx2.Client(base_url=url, timeout=120) as c:  # a new connection each
            return c.post(
                f"/v1/users/{user}/memories",
                headers={"Authorization": f"Bearer {key}"},
                json={"content": f"{user} note number {i} about kites", "dedup": False},
            )

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(one, range(n)))


def _total(url: str, key: str, user: str) -> int:
    r = httpx2.get(
        f"{url}/v1/users/{user}/memories",
        headers={"Authorization": f"Bearer {key}"},
        params={"limit": 100},
        timeout=60,
    )
    assert r.status_code == 200, r.text
    return int(r.json()["total"])


def test_quotas_are_enforced_across_server_processes(served: tuple[str, str]) -> None:
    url, key = served
    # the user's daily embeddings (5): exactly 5 of 10 concurrent writes
    alice = _post_many(url, key, "alice", 10)
    codes = sorted(r.status_code for r in alice)
    assert codes == [201] * 5 + [429] * 5, [r.text for r in alice]
    now = datetime.now(UTC)
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    for r in (r for r in alice if r.status_code == 429):
        body = r.json()
        assert body["error"]["code"] == "quota_exceeded", body
        assert "embeddings_per_day (per user)" in body["error"]["message"]
        wait = int(r.headers["Retry-After"])
        assert abs(wait - (midnight - now).total_seconds()) < 120, wait
    assert _total(url, key, "alice") == 5
    # the tenant's records (8): bob gets the 3 left
    bob = _post_many(url, key, "bob", 6)
    assert sorted(r.status_code for r in bob) == [201] * 3 + [429] * 3, [r.text for r in bob]
    refused = [r for r in bob if r.status_code == 429]
    assert all("max_records (per tenant)" in r.json()["error"]["message"] for r in refused)
    assert all(int(r.headers["Retry-After"]) > 0 for r in refused)
    assert _total(url, key, "bob") == 3
    processes = {r.headers.get("x-memstrata-process") for r in alice + bob}
    assert processes - {None}, "the answers name their server process"


def test_a_bad_quota_is_refused_before_serving(tmp_path: Path) -> None:
    out = subprocess.run(
        [*CLI, "--db", f"sqlite:///{tmp_path / 'b.db'}", "serve", "--user-quota", "records=-3"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        timeout=120,
    )
    assert out.returncode != 0
    assert "max_records must be an integer >= 1" in out.stdout + out.stderr
