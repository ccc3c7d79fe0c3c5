"""``memstrata --done-jobs-days DAYS|keep`` (or ``MEMSTRATA_DONE_JOBS_DAYS``): the
retention of finished jobs (jobs32's ``Retention.done_jobs_days``) for every command that
opens a memory (``maintain``, ``worker``, ``serve``, ``mcp``, ...), in real CLI processes on
SQLite.

Before jobs32b it was settable only through ``Memory(retention=Retention(...))``: the CLI
and the server always kept 7 days (the option was "No such option", exit 2; the variable
was ignored: these tests fail there)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest

from memstrata import Memory, Scope
from memstrata.errors import ValidationError
from memstrata.jobs import Job, JobStatus
from memstrata.maintenance_types import Retention, make_maintain_job
from memstrata.server.factory import ServeConfig, check_serve_config, open_server_memory
from memstrata.server.keys import open_key_store
from serving import CLI, serve

VARIABLE = "MEMSTRATA_DONE_JOBS_DAYS"


def _seed(db: str, *, maintain_job: bool = False) -> None:
    """Done jobs due 30 days ago (``old-*``) and 3 days ago (``young-*``), by the real
    clock; with ``maintain_job``, a maintenance job of ``t/u`` due now."""
    now = datetime.now(UTC)
    with Memory(db, embedder="hashing", background=False) as mem:
        store: Any = getattr(mem.store, "durable", mem.store)
        jobs = [
            Job(
                id=f"{name}-{i}",
                kind="k",
                tenant="t",
                user="u",
                payload={},
                created_at=now - timedelta(days=age),
                run_after=now - timedelta(days=age),
                status=JobStatus.DONE,
            )
            for name, age in (("old", 30), ("young", 3))
            for i in range(4)
        ]
        store.enqueue(jobs)
        if maintain_job:
            store.enqueue([make_maintain_job(Scope("t", "u"), now - timedelta(minutes=1), now)])


def _done(db: str) -> set[str]:
    with Memory(db, embedder="hashing", background=False) as mem:
        store: Any = getattr(mem.store, "durable", mem.store)
        return {j.id for j in store.list_jobs("t", "u", status="done") if j.kind == "k"}


def _cli(
    db: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = [*CLI, "--db", db, "--tenant", "t", "--user", "u", "--embedder", "hashing"]
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "200"}
    full_env.pop(VARIABLE, None)
    return subprocess.run(
        [*base, *args], capture_output=True, text=True, env={**full_env, **(env or {})},
        timeout=180,
    )  # fmt: skip


OLD = {f"old-{i}" for i in range(4)}
YOUNG = {f"young-{i}" for i in range(4)}


@pytest.mark.parametrize(
    ("how", "env", "swept", "left"),
    [
        ([], {}, 4, YOUNG),  # the default: 7 days
        (["--done-jobs-days", "2"], {}, 8, set()),
        ([], {VARIABLE: "2.5"}, 8, set()),
        (["--done-jobs-days", "keep"], {}, 0, OLD | YOUNG),
        ([], {VARIABLE: "KEEP"}, 0, OLD | YOUNG),
        (["--done-jobs-days", "60"], {VARIABLE: "2"}, 0, OLD | YOUNG),  # the option wins
    ],
)
def test_maintain_keeps_finished_jobs_as_long_as_told(
    tmp_path: Path, how: list[str], env: dict[str, str], swept: int, left: set[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    _seed(db)
    done = _cli(db, *how, "maintain", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["jobs_swept"] == swept
    assert _done(db) == left


def test_the_worker_runs_maintenance_with_the_setting(tmp_path: Path) -> None:
    """``memstrata worker`` runs the periodic maintenance jobs: with the retention given."""
    db = f"sqlite:///{tmp_path / 'w.db'}"
    _seed(db, maintain_job=True)
    done = _cli(db, "--done-jobs-days", "1", "worker", "--once", "--json")
    assert done.returncode == 0, done.stderr
    assert _done(db) == set()
    db = f"sqlite:///{tmp_path / 'k.db'}"
    _seed(db, maintain_job=True)
    done = _cli(db, "worker", "--once", "--json", env={VARIABLE: "keep"})
    assert done.returncode == 0, done.stderr
    assert _done(db) == OLD | YOUNG


@pytest.mark.parametrize("value", ["0", "-3", "nan", "inf", "1e400", "many", "7 days", " "])
def test_a_bad_value_is_a_usage_error_naming_it(tmp_path: Path, value: str) -> None:
    db = f"sqlite:///{tmp_path / 'x.db'}"
    for how, env in ((["--done-jobs-days", value], {}), ([], {VARIABLE: value})):
        done = _cli(db, *how, "add", "I moved to Lisbon in May", env=env)
        assert done.returncode == 2, (value, done.stderr)
        assert "Invalid value for '--done-jobs-days'" in done.stderr, done.stderr
        assert "number of days > 0, or 'keep'" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "x.db").exists()  # refused before any store was opened


def test_the_option_is_listed() -> None:
    done = subprocess.run(
        [*CLI, "--help"], capture_output=True, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "200", "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "--done-jobs-days" in done.stdout and VARIABLE in done.stdout


def test_the_server_config_reaches_the_memory() -> None:
    async def retention(config: ServeConfig) -> float | None:
        mem = open_server_memory(config)
        try:
            return mem.retention.done_jobs_days
        finally:
            await mem.aclose()

    assert ServeConfig().done_jobs_days == Retention().done_jobs_days == 7.0
    for days in (None, 2.0, 7.0):
        given = ServeConfig(embedder="hashing", done_jobs_days=days)
        config = ServeConfig.from_json(given.to_json())  # as --workers' processes get it
        assert asyncio.run(retention(config)) == days
    # what `serve --workers` checks before it starts any process
    with pytest.raises(ValidationError, match="done_jobs_days"):
        check_serve_config(ServeConfig(url="memory://", embedder="hashing", done_jobs_days=0))


def test_serve_says_and_uses_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = f"sqlite:///{tmp_path / 's.db'}"
    _seed(db)
    keys = open_key_store(db)
    try:
        key = keys.create("t", role="admin").secret
    finally:
        keys.close()
    monkeypatch.setenv(VARIABLE, "2")  # serve's process inherits it
    with (
        serve(db, tmp_path, "--no-background") as s,
        httpx2.Client(base_url=s.url, headers={"Authorization": f"Bearer {key}"}) as c,
    ):
        got = c.post("/v1/users/u/maintain", json={})
        assert got.status_code == 200, got.text
        assert got.json()["jobs_swept"] == 8
        assert "finished jobs kept 2 days" in " ".join(s.log_text().split())  # wrapped
    assert _done(db) == set()
