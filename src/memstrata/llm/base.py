"""The LLM protocol: the handful of tasks memory needs a language model for.

Every task has an offline answer (``HeuristicLLM``); an endpoint-backed provider validates
the model's output against the pydantic models below, repairs or retries malformed JSON,
and falls back to the heuristic answer. A failing LLM therefore degrades quality, never
correctness, and never loses the raw message (which is stored before any LLM runs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field

__all__ = ["LLM", "ExtractedFact", "Reflection", "TaskOutcome"]


class ExtractedFact(BaseModel):
    """A profile fact stated explicitly by the user (seed 001)."""

    category: str = Field(min_length=1, max_length=64)  # e.g. preference, identity, relation
    key: str = Field(min_length=1, max_length=128)  # e.g. "favorite_drink"
    value: str = Field(min_length=1, max_length=2000)
    confidence: float = Field(ge=0.0, le=1.0)
    evidence: str = ""  # the sentence it came from


class TaskOutcome(BaseModel):
    """What the agent loop reports when a task ends (input to reflection)."""

    goal: str
    steps: list[str] = Field(default_factory=list)
    # Each step's final status (pending/in_progress/completed/failed), aligned with
    # ``steps``; empty when the caller did not track them (then no step counts as done).
    step_statuses: list[str] = Field(default_factory=list)
    outcome: str = ""
    success: bool = True
    feedback: str = ""
    tools: list[str] = Field(default_factory=list)

    def steps_with(self, status: str) -> list[str]:
        """The steps whose status is ``status``, in plan order."""
        return [
            step
            for step, st in zip(self.steps, self.step_statuses, strict=False)
            if st == status and step.strip()
        ]


class Reflection(BaseModel):
    summary: str
    key_decisions: list[str] = Field(default_factory=list)
    lessons: list[str] = Field(default_factory=list)
    importance: float = Field(ge=0.0, le=1.0, default=0.5)


@runtime_checkable
class LLM(Protocol):
    @property
    def name(self) -> str: ...

    def summarize(self, texts: Sequence[str], *, max_words: int = 200) -> str:
        """A summary of ``texts`` in their language, at most ``max_words`` words."""
        ...

    def extract_facts(self, texts: Sequence[str]) -> list[ExtractedFact]:
        """Facts and preferences the user states explicitly; nothing inferred."""
        ...

    def score_importance(self, text: str) -> float:
        """How much this is worth remembering, in [0, 1]."""
        ...

    def reflect(self, task: TaskOutcome) -> Reflection: ...

    def merge_profile(
        self, current: Mapping[str, str], incoming: Mapping[str, str]
    ) -> dict[str, str]:
        """Merge two profiles field-wise; conflicting fields take ``incoming``."""
        ...

    def extract_key_info(self, texts: Sequence[str]) -> list[str]:
        """Topic, constraints and deadlines worth pinning as key memory."""
        ...
