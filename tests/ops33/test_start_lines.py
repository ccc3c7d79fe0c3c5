"""Every long-running command writes one start line on stderr with the same fields: the
store (password redacted), where it listens, its processes, how long finished jobs are kept
and the vector cache (cli/start_line.py). Real processes.

Before session 33: ``serve`` printed its line on stdout (no vector cache, the URL whole),
``serve --workers N`` and ``mcp`` (stdio and HTTP) printed none, ``worker`` printed
``worker running on <URL with its password>`` on stdout."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata import Memory, Scope
from ops33.started import run_until_started, start_lines
from serving import free_port
from stdio_mcp import stdio_answers

FIELDS = {"command", "store", "listen", "workers", "done_jobs_days", "vector_cache_rows"}


def _seed(url: str) -> None:
    with Memory(url, embedder="hashing", background=False) as mem:
        mem.add(Scope("t", "u"), "I keep bees")


def _serve(url: str, *more: str) -> list[str]:
    port = free_port()
    return ["--db", url, "--embedder", "hashing", "serve", "--port", str(port),
            "--log-level", "info", *more]  # fmt: skip


def test_serve_says_its_settings_on_stderr(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 's.db'}"
    _seed(db)
    args = _serve(db, "--vector-cache-rows", "1234", "--no-mcp")
    out, err = run_until_started(args, tmp_path, "memstrata.start")
    assert out == ""  # the line went to stdout, wrapped at the terminal's width
    (line,) = start_lines(err)
    assert set(line) >= FIELDS | {"time", "level", "message"}, line
    port = args[args.index("--port") + 1]
    assert line["store"] == db and line["listen"] == f"http://127.0.0.1:{port}"
    assert (line["workers"], line["done_jobs_days"], line["vector_cache_rows"]) == (1, 7, 1234)
    message = line["message"]
    assert message.startswith("memstrata serve starting: store sqlite:///"), message
    assert "1 process;" in message and "finished jobs kept 7 days" in message, message
    assert "vector cache 1,234 rows" in message and "MCP" not in message, message  # --no-mcp


def test_serve_with_workers_says_it_once(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'w.db'}"
    _seed(db)
    args = ["--done-jobs-days", "keep", *_serve(db, "--workers", "2")]
    _, err = run_until_started(args, tmp_path, "Application startup complete", times=2)
    (line,) = start_lines(err)  # the supervisor's, not one per process
    assert line["workers"] == 2 and line["done_jobs_days"] is None, line
    assert "2 processes;" in line["message"] and "kept forever" in line["message"], line


def test_mcp_over_stdio_says_it_on_stderr_only(tmp_path: Path) -> None:
    add = {"name": "memory_add", "arguments": {"content": "herons nest by the river"}}
    answers, err = stdio_answers(
        tmp_path / "m.db", [{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": add}]
    )  # every stdout line parsed as JSON: a start line there would fail here
    assert all(a["jsonrpc"] == "2.0" and "id" in a for a in answers), answers
    assert [a["id"] for a in answers] == [0, 1], answers
    (line,) = start_lines(err)
    assert line["command"] == "mcp" and line["listen"] == "stdio", line
    assert line["store"].startswith("sqlite:///") and line["vector_cache_rows"] == 500_000, line


def test_mcp_over_http_says_it(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'h.db'}"
    port = free_port()
    args = ["--db", db, "--embedder", "hashing", "--done-jobs-days", "2.5", "mcp",
            "--transport", "http", "--port", str(port)]  # fmt: skip
    out, err = run_until_started(args, tmp_path, "Application startup complete")
    assert out == ""
    (line,) = start_lines(err)
    assert line["listen"] == f"http://127.0.0.1:{port}/mcp", line
    assert line["done_jobs_days"] == 2.5 and "kept 2.5 days" in line["message"], line


def test_worker_says_it_on_stderr(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'k.db'}"
    _seed(db)
    args = ["--db", db, "--tenant", "t", "--user", "u", "--embedder", "hashing",
            "--vector-cache-rows", "99", "worker", "--poll", "0.5"]  # fmt: skip
    out, err = run_until_started(args, tmp_path, "memstrata worker starting")
    assert out == ""  # stdout carries the runs' lines only
    (line,) = [x for x in err.splitlines() if "starting" in x]
    assert line.startswith(f"memstrata worker starting: store {db}; no address"), line
    assert "1 process; finished jobs kept 7 days; vector cache 99 rows" in line, line


@pytest.mark.parametrize("how", ["serve", "workers", "mcp", "worker"])
def test_the_password_is_never_written(pg_url: str, tmp_path: Path, how: str) -> None:
    """A PostgreSQL URL with a password in its user part and as a parameter (the test server
    trusts its socket, so both are ignored by it): neither reaches the line."""
    url = pg_url.replace("postgresql://postgres:@", "postgresql://postgres:Sekr1t@")
    url = url.replace("postgresql://postgres@", "postgresql://postgres:Sekr1t@")
    url += "&password=Sekr1t"
    assert url.count("Sekr1t") == 2, pg_url
    _seed(url)
    if how == "worker":
        args = ["--db", url, "--tenant", "t", "--user", "u", "--embedder", "hashing", "worker"]
        out, err = run_until_started(args, tmp_path, "memstrata worker starting")
    elif how == "mcp":
        port = free_port()
        args = ["--db", url, "--embedder", "hashing", "mcp", "--transport", "http",
                "--port", str(port)]  # fmt: skip
        out, err = run_until_started(args, tmp_path, "memstrata.start")
    else:
        more = ["--workers", "2"] if how == "workers" else []
        out, err = run_until_started(_serve(url, *more), tmp_path, "memstrata.start")
    started = [x for x in (out + err).splitlines() if "starting: store" in x]
    assert len(started) == 1, out + err
    assert "Sekr1t" not in out + err, started
    assert "postgresql://postgres:***@" in started[0], started
    assert "password=***" in started[0], started
