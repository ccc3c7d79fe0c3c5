"""The CLI owns its process and sets OpenMP's idle policy for it: a short spin before its
threads sleep (GNU OpenMP), PASSIVE for other runtimes; a policy the user chose wins."""

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


def test_the_cli_spins_briefly_then_sleeps() -> None:
    assert _cli_env({}) == {"GOMP_SPINCOUNT": "1000", "OMP_WAIT_POLICY": "PASSIVE"}


@pytest.mark.parametrize(
    ("user", "seen"),
    [
        ({"OMP_WAIT_POLICY": "ACTIVE"}, {"GOMP_SPINCOUNT": None, "OMP_WAIT_POLICY": "ACTIVE"}),
        ({"GOMP_SPINCOUNT": "5"}, {"GOMP_SPINCOUNT": "5", "OMP_WAIT_POLICY": "PASSIVE"}),
    ],
)
def test_a_users_setting_wins(user: dict[str, str], seen: dict[str, str | None]) -> None:
    assert _cli_env(user) == seen
