"""A postgresql:// URL without the `postgres` extra: a clear error naming the extra, with
its square brackets (issue 11), never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BLOCK = "import sys\nfor m in ('psycopg', 'psycopg_pool', 'pgvector'):\n    sys.modules[m] = None\n"


def test_the_cli_names_the_extra_to_install(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSTRATA_", "OPENAI_"))}
    code = BLOCK + "from memstrata.cli.app import main\nmain()\n"
    url = "postgresql://nobody@127.0.0.1:1/none"
    res = subprocess.run(
        [sys.executable, "-c", code, "--db", url, "--tenant", "t", "--user", "u", "list"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and "pip install 'memstrata[postgres]'" in res.stderr


def test_the_library_raises_missing_dependency_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from memstrata.errors import MissingDependencyError
    from memstrata.store.url import open_store

    for name in list(sys.modules):
        if name.startswith("memstrata.store.postgres"):
            monkeypatch.delitem(sys.modules, name)
    for name in ("psycopg", "psycopg_pool", "pgvector"):
        monkeypatch.setitem(sys.modules, name, None)  # type: ignore[arg-type]
    with pytest.raises(MissingDependencyError, match=r"memstrata\[postgres\]"):
        open_store("postgresql://nobody@127.0.0.1:1/none")
