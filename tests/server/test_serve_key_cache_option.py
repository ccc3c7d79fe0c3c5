"""`memstrata serve --key-cache 0`: a key revoked outside the server (`memstrata keys revoke`,
another process) gets 401 at its very next request; a negative value is refused."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx2

from memstrata.server.keys import open_key_store
from serving import CLI, serve


def test_key_cache_zero_revokes_at_the_next_request(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'k.db'}"
    keys = open_key_store(db)
    key = keys.create("acme")
    try:
        with serve(db, tmp_path, "--key-cache", "0", "--rate-limit", "0") as s:
            auth = {"Authorization": f"Bearer {key.secret}"}
            assert httpx2.get(f"{s.url}/v1/whoami", headers=auth).status_code == 200
            keys.revoke(key.key.id)  # outside the server, as `memstrata keys revoke` does
            assert httpx2.get(f"{s.url}/v1/whoami", headers=auth).status_code == 401
    finally:
        keys.close()


def test_a_negative_key_cache_is_refused() -> None:
    done = subprocess.run(
        [*CLI, "--db", "memory://", "serve", "--key-cache", "-1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "key-cache" in done.stderr
