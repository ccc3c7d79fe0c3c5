"""``memstrata serve --user-quota ... --tenant-quota ...`` enforces quotas over HTTP (issue
10 §5; before, ``ServeConfig`` had no quota and a server enforced none): two server
processes (``--workers 2``) on one SQLite file or one PostgreSQL schema, concurrent
requests each on a new connection. Exactly the quota is admitted between the processes;
every refusal is a 429 ``quota_exceeded`` with a ``Retry-After`` (seconds to UTC midnight
for a daily quota) and writes nothing. A bad quota is refused before the server starts."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest

from memstrata.server.keys import open_key_store
from serving import serve  # the one runner of `memstrata serve` processes

CLI = [sys.executable, "-c", "from memstrata.cli.app import main; main()"]


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
    with serve(db, tmp_path, "--no-mcp", "--no-background", "--rate-limit", "0", *quotas,
               workers=2) as s:  # fmt: skip
        yield s.url, key


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
