"""Every surface that runs jobs reports every count of the run: ``claimed`` and the six
outcomes that add up to it (``done``, ``retried``, ``failed``, ``lost``, ``revoked``,
``given_back``), plus ``waiting``.

Before session 24 ``memstrata worker --once``, ``memstrata end-session`` and the HTTP
routes ``POST .../sessions/{s}/end`` and ``POST .../jobs/run`` gave only ``done``,
``retried`` and ``failed``: a run whose jobs were taken back by a purge, lost or given
back looked like a run that did less than it claimed, with nothing to say why.

Each run here is real and claims a job that fails for good (a queued job of a kind no
handler runs, as an older or newer version may leave), beside jobs that are done."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
from typer.testing import CliRunner

from memstrata.cli.app import app
from memstrata.jobs import Job
from memstrata.records import new_id
from memstrata.server.keys import SQLiteKeyStore
from memstrata.store import open_store
from serving import serve

OUTCOMES = ("done", "retried", "failed", "lost", "revoked", "given_back")
EVERY = ("claimed", *OUTCOMES, "waiting", "errors")


def _queue_unrunnable(db: Path, tenant: str, user: str, session: str | None = None) -> None:
    now = datetime.now(UTC)
    store = open_store(f"sqlite:///{db}")
    try:
        store.enqueue(
            [
                Job(
                    id=new_id(),
                    kind="ops24-no-such-kind",
                    tenant=tenant,
                    user=user,
                    session=session,
                    payload={},
                    created_at=now,
                    run_after=now,
                )
            ]
        )
    finally:
        store.close()


def _adds_up(report: dict[str, Any]) -> None:
    assert set(EVERY) <= set(report), report
    assert report["claimed"] == sum(report[k] for k in OUTCOMES), report
    assert report["failed"] == 1 and report["done"] >= 1, report
    assert any("ops24-no-such-kind" in e for e in report["errors"]), report


def _cli(db: Path, *args: str, session: str | None = None) -> Any:
    base = ["--db", f"sqlite:///{db}", "--tenant", "t", "--user", "u", "--embedder", "hashing"]
    if session:
        base += ["--session", session]
    res = CliRunner().invoke(app, [*base, *args])
    assert res.exit_code == 0, res.output
    return res


def test_worker_once_reports_every_count(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    _cli(db, "add", "I keep bees in my garden", "--role", "user", session="s1")
    _queue_unrunnable(db, "t", "u")
    report = json.loads(_cli(db, "worker", "--once", "--json").stdout)
    _adds_up(report)
    _cli(db, "add", "My sister is Ana", "--role", "user", session="s1")
    text = _cli(db, "worker", "--once").output
    for label in ("claimed", "done", "retried", "failed", "lost", "revoked", "given back"):
        assert label in text, text


def test_end_session_reports_every_count(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    for text in ("I keep bees in my garden", "My sister is Ana"):
        _cli(db, "add", text, "--role", "user", session="s1")
    _queue_unrunnable(db, "t", "u", "s1")
    report = json.loads(_cli(db, "end-session", "--json", session="s1").stdout)
    _adds_up(report)
    _cli(db, "add", "I have two cats", "--role", "user", session="s2")
    text = _cli(db, "end-session", session="s2").output
    assert "given back" in text and "revoked" in text and "claimed" in text, text


def test_http_flush_routes_report_every_count(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    keys = SQLiteKeyStore(str(db))
    key = keys.create("acme", role="admin").secret
    keys.close()
    auth = {"Authorization": f"Bearer {key}"}
    user = "/v1/users/alice"
    with (
        serve(f"sqlite:///{db}", tmp_path, "--rate-limit", "0", "--no-mcp", "--no-background") as s,
        httpx2.Client(base_url=s.url, headers=auth, timeout=30) as c,
    ):
        for text in ("I keep bees in my garden", "My sister is Ana"):
            r = c.post(f"{user}/sessions/s1/messages", json={"role": "user", "content": text})
            assert r.status_code == 201, r.text
        _queue_unrunnable(db, "acme", "alice")
        ran = c.post(f"{user}/jobs/run")
        assert ran.status_code == 200, ran.text
        _adds_up(ran.json())
        r = c.post(
            f"{user}/sessions/s1/messages", json={"role": "user", "content": "I have two cats"}
        )
        assert r.status_code == 201, r.text
        _queue_unrunnable(db, "acme", "alice", "s1")
        ended = c.post(f"{user}/sessions/s1/end")
        assert ended.status_code == 200, ended.text
        _adds_up(ended.json())
        schema = c.get("/openapi.json").json()["components"]["schemas"]["RunReportOut"]
        assert set(EVERY) <= set(schema["properties"]), schema
