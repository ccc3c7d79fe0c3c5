"""Task reflections and episodes follow the steps' statuses (issue 11).

A failed task never records "What worked"; a task marked succeeded with no step completed
is not summarised as if its steps worked; step status aliases (done, doing, fail) work.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from memstrata.clock import FixedClock
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.errors import ValidationError
from memstrata.layers.base import LayerConfig, LayerContext
from memstrata.layers.working import STEP_STATUS_ALIASES, StepStatus, TaskService
from memstrata.llm.base import TaskOutcome
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.scope import Scope
from memstrata.store import open_store

ALICE = Scope("acme", "alice", session="s1")
STEPS = ["fetch data", "clean", "plot"]
llm = HeuristicLLM()


@pytest.fixture
def tasks() -> Iterator[TaskService]:
    store = open_store("memory://")
    ctx = LayerContext(
        store,
        HashingEmbedder(),
        HeuristicLLM(),
        FixedClock(datetime(2026, 3, 1, tzinfo=UTC)),
        LayerConfig(),
    )
    yield TaskService(ctx)
    store.close()


def _text(lessons: list[str]) -> str:
    return "\n".join(lessons)


def test_failed_task_names_the_failed_step_and_claims_nothing_worked(tasks: TaskService) -> None:
    tasks.start(ALICE, "Chart the sales data", STEPS)
    tasks.update_step(ALICE, 0, "done", result="50000 rows")
    tasks.update_step(ALICE, 1, "fail", error="15% missing values")
    done = tasks.complete(ALICE, False, "no chart")
    lessons = _text(done.reflection.lessons)
    assert "What worked" not in lessons and "What worked" not in done.episode.text
    assert "failed at 'clean'" in lessons
    assert "Completed before failing: fetch data" in lessons
    assert done.episode.content.structured["step_statuses"] == ["completed", "failed", "pending"]
    assert done.reflection.key_decisions == ["fetch data"]


def test_failed_task_without_a_failed_step_names_where_it_stopped() -> None:
    r = llm.reflect(
        TaskOutcome(
            goal="g",
            steps=STEPS,
            step_statuses=["completed", "in_progress", "pending"],
            success=False,
        )
    )
    assert "stopped at 'clean'" in _text(r.lessons) and "What worked" not in _text(r.lessons)
    every = llm.reflect(
        TaskOutcome(goal="g", steps=STEPS, step_statuses=["completed"] * 3, success=False)
    )
    assert "Every step was completed but the task still failed" in _text(every.lessons)


def test_success_with_no_step_done_is_not_summarised_as_if_steps_worked(tasks: TaskService) -> None:
    tasks.start(ALICE, "Chart the sales data", STEPS)
    done = tasks.complete(ALICE, True, "chart delivered")
    lessons = _text(done.reflection.lessons)
    assert "What worked" not in lessons and "What worked" not in done.episode.text
    assert "no planned step was completed" in lessons
    assert "no planned step was marked completed" in done.reflection.summary
    assert done.reflection.key_decisions == []


def test_success_lists_only_the_completed_steps(tasks: TaskService) -> None:
    tasks.start(ALICE, "Chart the sales data", STEPS)
    tasks.update_step(ALICE, 0, StepStatus.COMPLETED)
    tasks.update_step(ALICE, 2, "completed")
    done = tasks.complete(ALICE, True, "chart delivered")
    assert "What worked: fetch data → plot" in done.reflection.lessons
    assert "clean" not in _text(done.reflection.lessons)


def test_chinese_reflection_follows_the_statuses_too() -> None:
    r = llm.reflect(
        TaskOutcome(
            goal="订机票",
            steps=["搜索航班", "付款"],
            step_statuses=["completed", "failed"],
            success=False,
        )
    )
    assert "有效的做法" not in _text(r.lessons) and "付款" in _text(r.lessons)
    ok = llm.reflect(
        TaskOutcome(
            goal="订机票",
            steps=["搜索航班", "付款"],
            step_statuses=["pending", "pending"],
            success=True,
        )
    )
    assert "有效的做法" not in _text(ok.lessons)


def test_untracked_statuses_claim_nothing() -> None:
    r = llm.reflect(TaskOutcome(goal="g", steps=STEPS, success=True))
    assert "What worked" not in _text(r.lessons) and "statuses not recorded" in _text(r.lessons)


def test_step_status_aliases_and_errors(tasks: TaskService) -> None:
    tasks.start(ALICE, "g", STEPS)
    for alias, status in STEP_STATUS_ALIASES.items():
        rec = tasks.update_step(ALICE, 0, alias.upper())
        assert rec.content.structured["steps"][0]["status"] == status
    with pytest.raises(ValidationError, match="pending, in_progress, completed, failed"):
        tasks.update_step(ALICE, 0, "banana")
    with pytest.raises(ValidationError, match="not one of"):
        tasks.update_step(ALICE, 0, None)  # type: ignore[arg-type]


def test_the_model_is_told_the_statuses() -> None:
    from memstrata.llm import prompts

    messages = prompts.reflect_prompt(
        TaskOutcome(
            goal="g", steps=STEPS, step_statuses=["completed", "failed", "pending"], success=False
        )
    )
    text = "\n".join(m["content"] for m in messages)
    assert '"step_statuses"' in text and '"failed"' in text
    assert "only completed steps worked" in text
