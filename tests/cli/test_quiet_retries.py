"""Issue 11: expected job retries (a record changed under the job) are debug log lines, not
output; an unexpected failure is one warning; nothing reaches stdout or stderr."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from memstrata.clock import FixedClock
from memstrata.errors import ConflictError
from memstrata.jobs import Job
from memstrata.records import new_id
from memstrata.store.memory import InMemoryStore
from memstrata.worker import JobRunner

NOW = datetime(2026, 1, 5, 12, tzinfo=UTC)


def _run_failing_once(exc: Exception) -> tuple[int, int]:
    store = InMemoryStore()
    calls = {"n": 0}

    def handler(job: Job) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise exc

    store.enqueue(
        [
            Job(
                id=new_id(),
                kind="k",
                tenant="t",
                user="u",
                payload={},
                created_at=NOW,
                run_after=NOW,
            )
        ]
    )
    runner = JobRunner(store, {"k": handler}, FixedClock(NOW))
    try:
        first = runner.run_pending()
        second = runner.run_pending(include_delayed=True)
    finally:
        runner.close()
        store.close()
    return first.retried, second.done


@pytest.mark.parametrize(
    ("exc", "level"),
    [
        (ConflictError("record r changed under the job"), logging.DEBUG),
        (RuntimeError("provider down"), logging.WARNING),
    ],
)
def test_retries_are_logged_at_the_right_level_and_never_printed(
    exc: Exception,
    level: int,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG, logger="memstrata")
    assert _run_failing_once(exc) == (1, 1)
    retries = [r for r in caplog.records if "will retry" in r.getMessage()]
    assert [r.levelno for r in retries] == [level]
    out, err = capfd.readouterr()
    assert out == "" and err == ""
