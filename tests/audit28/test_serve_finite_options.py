"""``memstrata serve --header-timeout nan`` (and ``--body-timeout``, ``--min-body-rate``,
``--key-cache``): click's FloatRange lets NaN through, and the server ran with that
protection silently off (``min_body_rate > 0`` is false for NaN; no slow-loris deadline).
Session 28's audit: now a usage error before it serves."""

from __future__ import annotations

from pathlib import Path

import pytest

from serving import free_port, refused


@pytest.mark.parametrize(
    "option", ["--header-timeout", "--body-timeout", "--min-body-rate", "--key-cache"]
)
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_serve_refuses_a_deadline_that_is_not_finite(
    option: str, value: str, tmp_path: Path
) -> None:
    done = refused(tmp_path, ["serve", "--port", str(free_port()), option, value], timeout=30)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "must be a finite number" in done.stderr, done.stderr[-2000:]


@pytest.mark.parametrize(
    "option",
    [
        ["serve", "--port", "99999"],  # served on 34463 (99999 mod 65536), announcing 99999
        ["serve", "--port", "-1"],
        ["serve", "--workers", "0"],
        ["serve", "--burst", "-1"],  # silently a burst of 1
        ["mcp", "--transport", "http", "--port", "70000"],
    ],
)
def test_serve_refuses_a_port_out_of_range_and_no_processes(
    option: list[str], tmp_path: Path
) -> None:
    args = ["--tenant", "t", "--user", "u", *option]
    if "--port" not in option:
        args += ["--port", str(free_port())]
    done = refused(tmp_path, args, timeout=20)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Invalid value for '--" in done.stderr, done.stderr[-2000:]
