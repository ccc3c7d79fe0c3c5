"""``memstrata serve --rate-limit inf`` made every request a 500 (ZeroDivisionError in the
shared limiter's window), and ``--rate-limit -1`` / ``--tenant-rate-limit nan`` served with
no limit at all, without a word (session 28's audit). Now the rate must be finite and >= 0
(0: no limit): a ValidationError, and the command stops before it serves."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata import Memory, ValidationError
from memstrata.server.limits import RateLimiter, shared_limiter
from serving import free_port, refused


@pytest.mark.parametrize("rate", [float("inf"), float("nan"), -1.0])
def test_a_limiter_refuses_a_rate_that_is_not_a_finite_number(rate: float, tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="finite number >= 0"):
        RateLimiter(rate, 10)
    with (
        Memory(f"sqlite:///{tmp_path / 'r.db'}", embedder="hashing", background=False) as mem,
        pytest.raises(ValidationError, match="finite number >= 0"),
    ):
        shared_limiter(rate, 10, store=mem.store)


@pytest.mark.parametrize(
    "option", [["--rate-limit", "inf"], ["--rate-limit", "-1"], ["--tenant-rate-limit", "nan"]]
)
def test_serve_stops_before_serving(option: list[str], tmp_path: Path) -> None:
    done = refused(tmp_path, ["serve", "--port", str(free_port()), *option], timeout=60)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "finite number >= 0" in done.stderr, done.stderr[-2000:]
