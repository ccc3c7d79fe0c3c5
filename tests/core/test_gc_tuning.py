"""The collector's first threshold: raised by the CLI and the server, never by the library."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata.errors import ValidationError
from memstrata.gc_tuning import OWNED_THRESHOLD, tune_gc, tune_gc_setting

SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture(autouse=True)
def _restore_gc() -> Iterator[None]:
    saved, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_raises_only_the_first_threshold() -> None:
    assert tune_gc() is True
    assert gc.get_threshold() == (OWNED_THRESHOLD, 10, 10)
    assert tune_gc() is False  # already there


def test_never_lowers_a_higher_setting() -> None:
    gc.set_threshold(50_000, 20, 5)
    assert tune_gc(5000) is False
    assert gc.get_threshold() == (50_000, 20, 5)


def test_leaves_a_disabled_collector_alone() -> None:
    gc.disable()
    assert tune_gc() is False
    assert gc.get_threshold() == (700, 10, 10)
    assert not gc.isenabled()


@pytest.mark.parametrize("bad", [0, -5, True, 2.5, "5000", None])
def test_bad_threshold(bad: object) -> None:
    with pytest.raises(ValidationError, match="positive integer"):
        tune_gc(bad)  # type: ignore[arg-type]
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, OWNED_THRESHOLD), ("", OWNED_THRESHOLD), (" 20000 ", 20_000), ("0", 700)],
)
def test_setting_text(value: str | None, expected: int) -> None:
    tune_gc_setting(value)
    assert gc.get_threshold()[0] == expected


@pytest.mark.parametrize("value", ["abc", "-3", "1e4"])
def test_bad_setting_text(value: str) -> None:
    with pytest.raises(ValidationError, match="MEMSTRATA_GC_THRESHOLD"):
        tune_gc_setting(value)
    assert gc.get_threshold() == (700, 10, 10)


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "MEMSTRATA_GC_THRESHOLD"}
    full.update(PYTHONPATH=SRC, **env)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120
    )


_CLI = (
    "import gc, sys\n"
    "gc.set_threshold(700, 10, 10)\n"
    "from memstrata.cli.app import main\n"
    "sys.argv = ['memstrata', '--help']\n"
    "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
    "print('THRESHOLD', gc.get_threshold()[0], file=sys.stderr)\n"
)


def test_the_cli_owns_its_process() -> None:
    run = _run(_CLI)
    assert f"THRESHOLD {OWNED_THRESHOLD}" in run.stderr, run.stderr


def test_the_cli_setting_wins() -> None:
    assert "THRESHOLD 700" in _run(_CLI, MEMSTRATA_GC_THRESHOLD="0").stderr
    assert "THRESHOLD 12345" in _run(_CLI, MEMSTRATA_GC_THRESHOLD="12345").stderr
    bad = _run(_CLI, MEMSTRATA_GC_THRESHOLD="lots")
    assert "MEMSTRATA_GC_THRESHOLD must be a whole number" in bad.stderr + bad.stdout
    assert "Traceback" not in bad.stderr


def test_each_server_process_owns_its_process(tmp_path: Path) -> None:
    config = json.dumps({"url": f"sqlite:///{tmp_path / 's.db'}", "background": False})
    code = (
        "import gc\ngc.set_threshold(700, 10, 10)\n"
        "from memstrata.server.factory import app_from_env\napp_from_env()\n"
        "print('THRESHOLD', gc.get_threshold()[0])\n"
    )
    run = _run(code, MEMSTRATA_SERVE_CONFIG=config)
    assert f"THRESHOLD {OWNED_THRESHOLD}" in run.stdout, run.stderr


def test_the_library_leaves_its_host_alone(tmp_path: Path) -> None:
    code = (
        "import gc\ngc.set_threshold(700, 10, 10)\n"
        "from memstrata import Memory, Scope\n"
        f"mem = Memory('sqlite:///{tmp_path / 'l.db'}', embedder='hashing', background=False)\n"
        "s = Scope('t', 'u', session='s1')\n"
        "mem.add_message(s, 'user', 'I live in Lyon')\n"
        "mem.search(s, 'where do I live')\nmem.build_context(s, 'where do I live')\n"
        "mem.close()\nprint('THRESHOLD', gc.get_threshold()[0])\n"
    )
    run = _run(code)
    assert "THRESHOLD 700" in run.stdout, run.stderr
