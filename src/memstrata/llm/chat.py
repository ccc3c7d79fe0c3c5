"""An :class:`~memstrata.llm.base.LLM` over any chat backend, with validation and fallback.

Each task: build the prompt, ask the backend, parse and validate the JSON, ask once more
with the validation error if it was wrong, and otherwise answer with the fallback provider
(the offline :class:`HeuristicLLM` by default). A broken or absent model therefore costs
quality, never correctness; failures are logged, never printed.

When the backend itself fails (unreachable, timing out, refusing), a
:class:`~memstrata.llm.breaker.CircuitBreaker` sends every call straight to the fallback for
a cool-down period (60 s by default) instead of paying the timeout again; the outage is
logged once as a warning, then at debug level until the endpoint answers again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar, runtime_checkable

import pydantic

from ..errors import ProviderError
from . import prompts
from ._language import truncate_words
from .base import LLM, ExtractedFact, Reflection, TaskOutcome
from .breaker import CircuitBreaker
from .heuristic import HeuristicLLM
from .json_output import parse_json_output

__all__ = ["ChatBackend", "PromptedLLM"]

log = logging.getLogger(__name__)

M = TypeVar("M", bound=pydantic.BaseModel)


@runtime_checkable
class ChatBackend(Protocol):
    """Sends chat messages to a model and returns its text reply.

    Implementations raise :class:`~memstrata.errors.ProviderError` when the call fails.
    """

    def complete(self, messages: list[dict[str, str]], *, json_mode: bool) -> str: ...


class PromptedLLM:
    """Implements :class:`LLM` by prompting ``backend``; see the module docstring."""

    def __init__(
        self,
        backend: ChatBackend,
        fallback: LLM | None = None,
        max_attempts: int = 2,
        *,
        cooldown_seconds: float = 60.0,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
        self._backend = backend
        self._fallback: LLM = fallback if fallback is not None else HeuristicLLM()
        self._max_attempts = max_attempts
        self.breaker = breaker if breaker is not None else CircuitBreaker(cooldown_seconds)

    @property
    def name(self) -> str:
        return f"prompted/{getattr(self._backend, 'name', type(self._backend).__name__)}"

    @property
    def backend(self) -> ChatBackend:
        return self._backend

    def _ask(self, task: str, messages: prompts.Messages, schema: type[M]) -> M | None:
        """The validated answer, or ``None`` after logging why the fallback is needed."""
        conversation = list(messages)
        reason = "no attempt made"
        for attempt in range(1, self._max_attempts + 1):
            if not self.breaker.allow():
                log.debug(
                    "LLM %s: endpoint failed recently; using %s for %.0f s more",
                    task,
                    self._fallback.name,
                    self.breaker.seconds_left(),
                )
                return None
            try:
                raw = self._backend.complete(conversation, json_mode=True)
            except Exception as exc:  # any backend failure must degrade, not break, memory
                level = logging.WARNING if self.breaker.failure() else logging.DEBUG
                log.log(
                    level,
                    "LLM %s: backend failed (%s: %s); using %s for the next %.0f s",
                    task,
                    type(exc).__name__,
                    exc,
                    self._fallback.name,
                    self.breaker.cooldown_seconds,
                )
                return None
            if self.breaker.success():
                log.info("LLM %s: the endpoint answers again", task)
            try:
                return schema.model_validate(parse_json_output(raw))
            except (ProviderError, pydantic.ValidationError) as exc:
                reason = str(exc)
                log.info(
                    "LLM %s: attempt %d/%d invalid: %s",
                    task,
                    attempt,
                    self._max_attempts,
                    reason[:300],
                )
                conversation = [
                    *conversation,
                    {"role": "assistant", "content": raw},
                    prompts.retry_message(reason),
                ]
        log.warning(
            "LLM %s: no valid answer after %d attempts (%s); using %s",
            task,
            self._max_attempts,
            reason[:300],
            self._fallback.name,
        )
        return None

    def summarize(self, texts: Sequence[str], *, max_words: int = 200) -> str:
        return self.summarize_attributed(texts, max_words=max_words)[0]

    def summarize_attributed(
        self, texts: Sequence[str], *, max_words: int = 200
    ) -> tuple[str, str]:
        """``(summary, what wrote it)``: this model's name, or ``"<fallback>-fallback"``
        when the model failed and the fallback provider wrote it (issue 7 §9)."""
        if not any(t.strip() for t in texts):
            return "", self.name
        answer = self._ask(
            "summarize", prompts.summarize_prompt(texts, max_words), prompts.SummaryResponse
        )
        if answer is None or not answer.summary.strip():
            return (
                self._fallback.summarize(texts, max_words=max_words),
                f"{self._fallback.name}-fallback",
            )
        return truncate_words(answer.summary.strip(), max_words), self.name

    def extract_facts(self, texts: Sequence[str]) -> list[ExtractedFact]:
        if not any(t.strip() for t in texts):
            return []
        answer = self._ask(
            "extract_facts", prompts.extract_facts_prompt(texts), prompts.FactsResponse
        )
        return self._fallback.extract_facts(texts) if answer is None else answer.facts

    def score_importance(self, text: str) -> float:
        answer = self._ask(
            "score_importance", prompts.score_importance_prompt(text), prompts.ImportanceResponse
        )
        return self._fallback.score_importance(text) if answer is None else answer.importance

    def reflect(self, task: TaskOutcome) -> Reflection:
        answer = self._ask("reflect", prompts.reflect_prompt(task), Reflection)
        return self._fallback.reflect(task) if answer is None else answer

    def merge_profile(
        self, current: Mapping[str, str], incoming: Mapping[str, str]
    ) -> dict[str, str]:
        if not current or not incoming:  # nothing to reconcile; no model call needed
            return self._fallback.merge_profile(current, incoming)
        answer = self._ask(
            "merge_profile",
            prompts.merge_profile_prompt(current, incoming),
            prompts.ProfileResponse,
        )
        if answer is None:
            return self._fallback.merge_profile(current, incoming)
        return answer.profile

    def extract_key_info(self, texts: Sequence[str]) -> list[str]:
        if not any(t.strip() for t in texts):
            return []
        answer = self._ask(
            "extract_key_info", prompts.key_info_prompt(texts), prompts.KeyInfoResponse
        )
        if answer is None:
            return self._fallback.extract_key_info(texts)
        return [item.strip() for item in answer.items if item.strip()]
