"""The pydantic models of the LLM tasks' inputs and outputs (re-exported by ``llm.base``).

An endpoint-backed provider validates the model's output against them; they live apart
from the :class:`~memstrata.llm.base.LLM` protocol so that code which only names the
protocol (the factory, ``Memory.stats``) does not import pydantic.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["ExtractedFact", "Reflection", "TaskOutcome"]


class ExtractedFact(BaseModel):
    """A profile fact stated explicitly by the user (seed 001)."""

    category: str = Field(min_length=1, max_length=64)  # e.g. preference, identity, relation
    key: str = Field(min_length=1, max_length=128)  # e.g. "favorite_drink"
    value: str = Field(min_length=1, max_length=2000)
    confidence: float = Field(ge=0.0, le=1.0)
    evidence: str = ""  # the sentence it came from
    # An earlier value the same sentence says the user left ("I've stopped going to X; Y is
    # my favourite now"): the profile links the new value to the fact that held it.
    replaces: str = Field(default="", max_length=2000)
    # The user says ``value`` no longer holds, with no new value ("I no longer live in
    # Berlin", 我已经不在谷歌工作了): the current fact holding it ends, kept in its history.
    ended: bool = False


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
