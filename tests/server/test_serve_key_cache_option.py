"""`memstrata serve --key-cache 0`: a key revoked outside the server (`memstrata keys revoke`,
another process) gets 401 at its very next request; a negative value is refused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx2

from memstrata.server.keys import open_key_store

from .conftest import free_port

CLI = [sys.executable, "-c", "from memstrata.cli.app import main; main()"]


def test_key_cache_zero_revokes_at_the_next_request(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'k.db'}"
    keys = open_key_store(db)
    key = keys.create("acme")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with open(tmp_path / "serve.log", "w+b") as log:
        proc = subprocess.Popen(
            [*CLI, "--db", db, "--embedder", "hashing", "serve", "--port", str(port)]
            + ["--key-cache", "0", "--rate-limit", "0", "--log-level", "warning"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 120
            while True:
                assert proc.poll() is None, log.seek(0) or log.read()[-2000:]
                try:
                    if httpx2.get(f"{url}/readyz", timeout=5).status_code == 200:
                        break
                except httpx2.HTTPError:
                    pass
                assert time.monotonic() < deadline, "serve did not become ready"
                time.sleep(0.3)
            auth = {"Authorization": f"Bearer {key.secret}"}
            assert httpx2.get(f"{url}/v1/whoami", headers=auth).status_code == 200
            keys.revoke(key.key.id)  # outside the server, as `memstrata keys revoke` does
            assert httpx2.get(f"{url}/v1/whoami", headers=auth).status_code == 401
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
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
