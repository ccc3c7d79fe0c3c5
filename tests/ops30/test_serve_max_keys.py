"""``memstrata serve --max-keys`` (and ``mcp --max-keys``): the keys a process keeps
rate-limit state for (session 29's ``Limits(max_keys=)``) were settable from the library
only; a server operator had the default 100,000 whatever their memory (session 30)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx2
import pytest

from memstrata.server.keys import open_key_store
from serving import CLI, serve


def _admitted_in_turn(url: str, first: str, second: str, requests: int) -> int:
    """Requests of ``first`` answered 200 (before its first 429) when each is followed by
    one of ``second``."""
    admitted = 0
    for _ in range(requests):
        got = httpx2.get(f"{url}/v1/whoami", headers={"Authorization": f"Bearer {first}"})
        if got.status_code == 429:
            break
        assert got.status_code == 200, got.text
        admitted += 1
        other = httpx2.get(f"{url}/v1/whoami", headers={"Authorization": f"Bearer {second}"})
        assert other.status_code in (200, 429), other.text
    return admitted


@pytest.mark.parametrize("max_keys", [None, "1"])
def test_max_keys_bounds_the_keys_a_serving_process_holds(
    max_keys: str | None, tmp_path: Path
) -> None:
    """Two keys in turn, a window of 10,000 s admitting 100 requests taken 10 at a time from
    the store's counters: with ``--max-keys 1`` each key's state is dropped by the other's
    request, so every request of a key takes a new batch of 10 and the key's window is spent
    after 10 requests; by default (100,000) the process holds both keys' batches and all 30
    requests pass. (Failed before: no such option, exit 2.)"""
    db = f"sqlite:///{tmp_path / 'k.db'}"
    keys = open_key_store(db)
    try:
        a, b = keys.create("acme"), keys.create("acme")
    finally:
        keys.close()
    extra = ["--rate-limit", "0.01", "--burst", "100"]
    if max_keys is not None:
        extra += ["--max-keys", max_keys]
    with serve(db, tmp_path, *extra) as s:
        admitted = _admitted_in_turn(s.url, a.secret, b.secret, 30)
    assert admitted == (30 if max_keys is None else 10)


@pytest.mark.parametrize("command", ["serve", "mcp"])
@pytest.mark.parametrize("value", ["0", "-1", "1.5", "many"])
def test_a_bad_max_keys_is_a_usage_error(command: str, value: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [*CLI, "--db", f"sqlite:///{tmp_path / 'x.db'}", command, "--max-keys", value],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Invalid value for '--max-keys'" in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / "x.db").exists()  # refused before anything opened the store
