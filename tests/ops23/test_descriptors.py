"""``--max-connections`` and the process's descriptor limit (server/slow_clients.py
``fit_descriptors``), in a child process: a hard limit lowered there cannot be raised
again."""

from __future__ import annotations

import subprocess
import sys

import pytest

resource = pytest.importorskip("resource")

CHILD = """
import logging, resource, sys
logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="%(message)s")
from memstrata.server.slow_clients import fit_descriptors
soft, hard = {soft}, {hard}
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
print("cap", fit_descriptors({cap}))
print("soft", resource.getrlimit(resource.RLIMIT_NOFILE)[0])
"""


def _child(soft: int, hard: int, cap: int) -> str:
    done = subprocess.run([sys.executable, "-c", CHILD.format(soft=soft, hard=hard, cap=cap)],
                          capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    return done.stdout


def test_the_soft_limit_is_raised_to_fit_the_cap() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1100:
        pytest.skip(f"the hard descriptor limit here ({hard}) is below 1,064")
    out = _child(256, hard, 1000)
    assert "cap 1000\nsoft 1064\n" in out, out


def test_a_cap_over_the_hard_limit_is_lowered_and_said() -> None:
    out = _child(200, 300, 1000)
    assert "cap 236\nsoft 300\n" in out, out
    assert "does not fit the descriptor limit" in out, out


def test_no_cap_changes_nothing() -> None:
    assert "cap 0\nsoft 200\n" in _child(200, 300, 0)
