"""``make fuzz``'s profile (tests/conftest.py): ``MEMSTRATA_FUZZ=<n>`` multiplies every
property test's examples by n (a test's own ``max_examples`` too, which a profile alone
cannot) and draws them at random; unset, a test runs what it says, and under ``CI=true``
derandomised as before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]


def test_examples_are_the_tests_own_times_the_factor() -> None:
    drawn: list[str] = []

    @settings(max_examples=7, database=None)
    @given(st.text(min_size=3))
    def run(text: str) -> None:
        drawn.append(text)

    run()
    fuzz = os.environ.get("MEMSTRATA_FUZZ")
    assert len(drawn) == 7 * int(fuzz or 1)
    ci = os.environ.get("CI") == "true"
    assert settings.default.derandomize is (ci and not fuzz)


@pytest.mark.parametrize(
    "env",
    [{"MEMSTRATA_FUZZ": "3"}, {"MEMSTRATA_FUZZ": "3", "CI": "true"}, {"CI": "true"}, {}],
    ids=["fuzz", "fuzz-under-ci", "ci", "plain"],
)
def test_profile_in_a_fresh_session(env: dict[str, str]) -> None:
    """The profile is chosen when the suite starts: each case is its own pytest."""
    clean = {k: v for k, v in os.environ.items() if k not in ("MEMSTRATA_FUZZ", "CI")}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            f"{__file__}::test_examples_are_the_tests_own_times_the_factor",
        ],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout
