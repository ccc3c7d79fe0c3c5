"""``memstrata serve --vector-cache-rows`` and ``memstrata mcp --vector-cache-rows``: the
store's vector cache bound set by an operator (session 30; before: no such option, exit 2)."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

from memstrata.cli import serve_commands
from memstrata.server.factory import ServeConfig, open_server_memory
from memstrata.server.keys import open_key_store
from memstrata.store.vector_bound import VECTOR_CACHE_ROWS
from serving import CLI, mcp_http, serve

WORDS = "harbour violin tram coffee garden rain mountain river sailing bread chess".split()


def test_the_clis_default_is_the_stores() -> None:
    """The CLI writes the default itself (its --help imports no store code)."""
    assert serve_commands.VECTOR_CACHE_ROWS == VECTOR_CACHE_ROWS


def test_the_server_config_reaches_the_store(tmp_path: Path) -> None:
    async def run() -> int:
        config = ServeConfig(
            url=f"sqlite:///{tmp_path / 's.db'}", embedder="hashing", vector_cache_rows=99
        )
        mem = open_server_memory(config)
        await mem.open()
        try:
            return int(mem._store.sync._vectors.max_rows)  # type: ignore[attr-defined]
        finally:
            await mem.aclose()

    assert asyncio.run(run()) == 99


def test_serve_with_a_small_bound_serves_every_users_searches(tmp_path: Path) -> None:
    """Four users' memories searched in turn with a bound of 1 row (each search drops the
    user searched before): each finds its own notes, as with the default."""
    db = f"sqlite:///{tmp_path / 'v.db'}"
    keys = open_key_store(db)
    try:
        key = keys.create("acme").secret
    finally:
        keys.close()
    auth = {"Authorization": f"Bearer {key}"}
    rng = random.Random(30)
    notes = {f"u{i}": [" ".join(rng.sample(WORDS, 4)) for _ in range(10)] for i in range(4)}
    found: dict[str, list[list[str]]] = {}
    for extra in ([], ["--vector-cache-rows", "1"]):
        with (
            serve(db, tmp_path, "--no-background", *extra) as s,
            httpx2.Client(base_url=s.url, headers=auth) as c,
        ):
            if not extra:
                for user, texts in notes.items():
                    for text in texts:
                        got = c.post(f"/v1/users/{user}/memories", json={"content": text})
                        assert got.status_code == 201, got.text
            rounds = []
            for _ in range(2):
                for user in notes:
                    got = c.post(
                        f"/v1/users/{user}/search",
                        json={
                            "query": "violin harbour",
                            "top_k": 5,
                            "filters": {"types": ["note"]},
                        },
                    )
                    assert got.status_code == 200, got.text
                    hits = got.json()["hits"]
                    assert hits, got.text
                    assert all(h["record"]["content"]["raw"] in notes[user] for h in hits), hits
                    rounds.append([h["record"]["id"] for h in hits])
            found[" ".join(extra) or "default"] = rounds
    assert found["--vector-cache-rows 1"] == found["default"]


@pytest.mark.parametrize("command", ["serve", "mcp"])
@pytest.mark.parametrize("value", ["0", "-1", "1.5", "many"])
def test_a_bad_vector_cache_rows_is_a_usage_error(command: str, value: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [*CLI, "--db", f"sqlite:///{tmp_path / 'x.db'}", command, "--vector-cache-rows", value],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Invalid value for '--vector-cache-rows'" in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / "x.db").exists()  # refused before anything opened the store


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_the_option_is_listed(command: str) -> None:
    done = subprocess.run(
        [*CLI, command, "--help"], capture_output=True, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "200", "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "--vector-cache-rows" in done.stdout


def test_mcp_over_http_starts_with_the_option(tmp_path: Path) -> None:
    with mcp_http(f"sqlite:///{tmp_path / 'm.db'}", tmp_path, "--vector-cache-rows", "64") as m:
        assert m.proc.poll() is None
