"""A key memory's edit with nothing to change (no text, no priority): the library, the HTTP
API (``PATCH .../key-memory/ID`` with only ``expected_version``) and ``memstrata key edit
ID`` each wrote a new version equal to the last one ("key memory ... is now version 2").
Now each refuses it: a ``ValidationError``, a 422, exit 2 with one line; nothing written
(session 34's audit; as ``update`` of a memory)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata.errors import ValidationError

from .surfaces import USERS, Surfaces

SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture
def surfaces(tmp_path: Path) -> Iterator[Surfaces]:
    s = Surfaces(f"sqlite:///{tmp_path / 'm.db'}", tmp_path)
    yield s
    s.close()


def test_a_key_edit_with_nothing_to_change_is_refused_everywhere(
    surfaces: Surfaces, tmp_path: Path
) -> None:
    s = surfaces
    ids = {w: s.mem.key.set(s.scope(w), "never book flights before 9am").id for w in USERS}
    before = {w: s.snapshot(w) for w in USERS}
    with pytest.raises(ValidationError, match="^nothing to change"):
        s.mem.key.edit(s.scope("lib"), ids["lib"], expected_version=1)
    with pytest.raises(ValidationError, match="^nothing to change"):
        s.loop.run_until_complete(s.amem.key.edit(s.scope("aio"), ids["aio"], expected_version=1))
    path = f"/v1/users/{USERS['http']}/key-memory/{ids['http']}"
    r = s.http("PATCH", path, {"expected_version": 1})
    assert r.status_code == 422 and "nothing to change" in r.json()["error"]["message"], r.text
    cmd = [sys.executable, "-m", "memstrata", "--db", s.url, "--embedder", "hashing"]
    cmd += ["--tenant", "acme", "--user", USERS["mcp"], "key", "edit", ids["mcp"]]
    done = subprocess.run(
        cmd, capture_output=True, env={**os.environ, "PYTHONPATH": SRC}, timeout=120, check=False
    )
    err = done.stderr.decode()
    assert done.returncode == 2 and err.strip().splitlines() == [
        "error: nothing to change: pass text or priority (or both)"
    ], (done.returncode, err)
    assert {w: s.snapshot(w) for w in USERS} == before
