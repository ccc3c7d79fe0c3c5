"""``memstrata worker --poll nan`` (or ``inf``, ``-1``) and ``Memory.run_worker(poll_seconds=)``
(session 28's audit). Before: the worker started, then died on its first idle pause with a
bare ValueError ("Invalid value NaN", "sleep length must be non-negative") or OverflowError
("timestamp out of range for platform time_t") traceback. Now a ValidationError before it
starts, and one ``error:`` line from the CLI."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memstrata import AsyncMemory, Memory, ValidationError
from memstrata.cli.app import app

BAD = [float("nan"), float("inf"), -1.0, 10.0**9, "1", True]


@pytest.fixture(autouse=True)
def _worker_log_handlers() -> Iterator[None]:
    """The ``worker`` command puts its warnings on stderr with a handler it adds once per
    process; taken off after each test here, or every later test of this process that logs
    a worker warning prints it (tests/cli/test_quiet_retries.py)."""
    worker = logging.getLogger("memstrata.worker")
    kept = list(worker.handlers)
    yield
    for handler in [h for h in worker.handlers if h not in kept]:
        worker.removeHandler(handler)


@pytest.mark.parametrize("poll", BAD, ids=repr)
def test_run_worker_refuses_a_bad_pause(poll: object) -> None:
    with (
        Memory("memory://", embedder="hashing", background=False) as mem,
        pytest.raises(ValidationError, match="poll_seconds"),
    ):
        mem.run_worker(poll_seconds=poll, stop=lambda: True)  # type: ignore[arg-type]


@pytest.mark.parametrize("poll", BAD[:3], ids=repr)
def test_the_async_worker_refuses_a_bad_pause(poll: float) -> None:
    async def main() -> None:
        async with AsyncMemory("memory://", embedder="hashing", background=False) as mem:
            with pytest.raises(ValidationError, match="poll_seconds"):
                await mem.run_worker(poll_seconds=poll, stop=lambda: True)

    asyncio.run(main())


@pytest.mark.parametrize("poll", ["nan", "inf", "-1"])
def test_the_worker_command_says_what_is_wrong(tmp_path: Path, poll: str) -> None:
    args = ["--db", f"sqlite:///{tmp_path / 'w.db'}", "--tenant", "t", "--user", "u"]
    args += ["--embedder", "hashing"]
    assert CliRunner().invoke(app, [*args, "add", "I keep bees"]).exit_code == 0
    res = CliRunner().invoke(app, [*args, "worker", "--poll", poll])
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "poll_seconds must be a finite number" in res.stderr, res.stderr


def test_a_zero_pause_still_runs() -> None:
    with Memory("memory://", embedder="hashing", background=False) as mem:
        mem.run_worker(poll_seconds=0, stop=lambda: True)
