"""``memstrata mcp`` over stdio logs as ``memstrata serve`` does (session 31): JSON lines on
stderr at ``--log-level`` (info by default), the PostgreSQL driver's warnings among them;
stdout carries the protocol only. Before, stdio kept the one-shot commands' rule (cli30:
memstrata's and psycopg's own handlers silent unless ``-v``), and what reached stderr was
the MCP SDK's console handler on the root logger: each warning boxed over several lines
with a time and a source file (``[11/28/26 18:24:23] WARNING  discarding closed
connection:     pool_async.py:810``), twice with ``-v``, and ``--log-level`` did nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg

from memstrata.server.pg_keys import PostgresKeyStore
from ops21.conftest import OwnPostgres
from serving import SRC


def _message(rid: int | None, method: str, params: dict[str, Any] | None = None) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if rid is not None:
        body["id"] = rid
    if params is not None:
        body["params"] = params
    return json.dumps(body).encode() + b"\n"


def _call(rid: int, tool: str, **arguments: Any) -> bytes:
    return _message(rid, "tools/call", {"name": tool, "arguments": arguments})


def _cut(pg: OwnPostgres) -> None:
    """End every client connection but this one, waiting until each backend has exited."""
    with psycopg.connect(pg.admin_url, autocommit=True) as conn:
        ended = conn.execute(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
            "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        ).fetchall()
    assert ended and all(row[0] for row in ended), ended


def _session(pg: OwnPostgres, tmp_path: Path, *options: str) -> tuple[list[str], list[str]]:
    """A stdio session: add a note, cut the server's connections, search; its stdout and
    stderr lines."""
    url = pg.url()
    keys = PostgresKeyStore(url)
    key = keys.create("acme").secret
    keys.close()
    cmd = [sys.executable, "-m", "memstrata", "--db", url, "--embedder", "hashing",
           "--user", "alice", *options[:1], "mcp", *options[1:]]  # fmt: skip
    cmd = [c for c in cmd if c]
    env = {**os.environ, "PYTHONPATH": SRC, "MEMSTRATA_API_KEY": key}
    err_path = tmp_path / "stderr.txt"
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env
        )
        assert proc.stdin is not None and proc.stdout is not None
        try:
            init = {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}  # fmt: skip
            proc.stdin.write(_message(0, "initialize", init))
            proc.stdin.write(_message(None, "notifications/initialized"))
            proc.stdin.write(_call(1, "memory_add", content="herons nest by the river"))
            proc.stdin.flush()
            out = [proc.stdout.readline().decode(), proc.stdout.readline().decode()]
            assert json.loads(out[1])["id"] == 1, out
            _cut(pg)
            proc.stdin.write(_call(2, "memory_search", query="herons"))
            proc.stdin.flush()
            out.append(proc.stdout.readline().decode())  # answered before stdin ends
            proc.stdin.close()
            out += [x.decode() for x in proc.stdout]
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            if not proc.stdin.closed:
                proc.stdin.close()
    return out, err_path.read_text(errors="replace").splitlines()


def _driver(err: list[str]) -> list[dict[str, Any]]:
    lines = []
    for x in err:
        try:
            entry = json.loads(x)
        except ValueError:
            continue
        if str(entry.get("logger", "")).startswith("psycopg"):
            lines.append(entry)
    return lines


def _protocol_only(out: list[str]) -> None:
    answers = [json.loads(x) for x in out]
    assert all(a.get("jsonrpc") == "2.0" for a in answers), out
    (searched,) = [a for a in answers if a.get("id") == 2]
    assert "herons" in json.dumps(searched["result"]), searched  # served after the cut


def test_the_drivers_warnings_reach_stderr_as_json(own_pg: OwnPostgres, tmp_path: Path) -> None:
    out, err = _session(own_pg, tmp_path, "")
    _protocol_only(out)
    driver = _driver(err)
    assert driver, "\n".join(err)
    assert any("discarding closed connection" in d["message"] for d in driver), driver
    assert all(d["level"] == "warning" for d in driver), driver


def test_log_level_applies_to_stdio(own_pg: OwnPostgres, tmp_path: Path) -> None:
    out, err = _session(own_pg, tmp_path, "", "--log-level", "error")
    _protocol_only(out)
    assert _driver(err) == [], err
    assert not any("discarding closed connection" in x for x in err), err


def test_verbose_does_not_change_it(own_pg: OwnPostgres, tmp_path: Path) -> None:
    """-v is the one-shot commands' switch; a server's log is its --log-level (as serve)."""
    _, err = _session(own_pg, tmp_path, "-v")
    assert _driver(err), err
    assert not any(x.startswith("WARNING psycopg") for x in err), err
