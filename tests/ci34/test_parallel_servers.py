"""Under pytest-xdist (``make test`` runs the suite on several workers) every worker starts its
own PostgreSQL and Redis (tests/servers.py keeps them per process): no worker sees another's
schemas, keys or restarts. Run here on two workers of a pytest of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xdist", reason="pytest-xdist is in the test extra (make test installs it)")

TESTS = Path(__file__).resolve().parents[1]
SRC = TESTS.parent / "src"

CONFTEST = """
from servers import pg_server, shared_redis  # noqa: F401
"""

PROBE = """
import json, os
from pathlib import Path

import psycopg
import redis


def test_servers(pg_server, shared_redis):
    worker = os.environ["PYTEST_XDIST_WORKER"]
    with psycopg.connect(pg_server.admin_url, autocommit=True) as conn:
        data_dir = conn.execute("SHOW data_directory").fetchone()[0]
        conn.execute(f"CREATE TABLE IF NOT EXISTS public.owner_{worker} (x int)")
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE tablename LIKE 'owner_%'")]
    client = redis.Redis.from_url(shared_redis.url)
    client.set("owner", worker)
    keys = sorted(k.decode() for k in client.keys("*"))
    owner = client.get("owner").decode()
    client.close()
    out = Path(os.environ["CI34_OUT"]) / f"{worker}.json"
    out.write_text(json.dumps({"data_dir": data_dir, "redis": shared_redis.url,
                               "tables": tables, "keys": keys, "owner": owner}))
"""


def test_each_xdist_worker_has_servers_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_probe.py").write_text(PROBE)
    out = tmp_path / "out"
    out.mkdir()
    env = {
        **os.environ,
        "CI34_OUT": str(out),
        "PYTHONPATH": os.pathsep.join([str(SRC), str(TESTS), *sys.path]),
    }
    for own in ("MEMSTRATA_TEST_POSTGRES_URL", "MEMSTRATA_TEST_REDIS_URL"):
        env.pop(own, None)  # a server of the user's own is shared on purpose
    # --dist each: the probe runs once on each of the two workers, at the same time
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-n",
            "2",
            "--dist",
            "each",
            "--rootdir",
            str(tmp_path),
            "-c",
            os.devnull,
            str(tmp_path),
        ],  # fmt: skip
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    seen = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    assert sorted(seen) == ["gw0", "gw1"], seen
    a, b = seen["gw0"], seen["gw1"]
    assert a["data_dir"] != b["data_dir"] and a["redis"] != b["redis"], seen
    # each sees its own table and key only: the other worker's writes went elsewhere
    for worker, got in seen.items():
        assert got["tables"] == [f"owner_{worker}"], seen
        assert got["keys"] == ["owner"] and got["owner"] == worker, seen
