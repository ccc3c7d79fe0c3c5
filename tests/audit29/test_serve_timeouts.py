"""``memstrata serve --keep-alive -1`` and ``--worker-timeout -1`` (or 0) started and
served: a negative keep-alive closed every connection after its first answer, and a worker
timeout of 0 or less has the supervisor ping each process with no time to answer, so with
``--workers 2`` every process was killed as hung and replaced, again and again. Session 29's
audit: a usage error before anything starts, as audit28 made the other options."""

from __future__ import annotations

from pathlib import Path

import pytest

from serving import free_port, refused


@pytest.mark.parametrize(
    "option",
    [
        ["--keep-alive", "-1"],
        ["--worker-timeout", "-1"],
        ["--worker-timeout", "0"],
        ["--keep-alive", "100000000000"],  # past a day: a typo, not a deadline
        ["--worker-timeout", "100000000000"],  # multiprocessing's poll: OverflowError
    ],
)
def test_serve_refuses_a_timeout_out_of_range(option: list[str], tmp_path: Path) -> None:
    done = refused(tmp_path, ["serve", "--port", str(free_port()), *option], timeout=20)
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"Invalid value for '{option[0]}'" in done.stderr, done.stderr[-2000:]
