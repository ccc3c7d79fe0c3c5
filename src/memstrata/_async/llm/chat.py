"""An :class:`~memstrata.llm.base.LLM` over any chat backend, with validation and fallback.

Each task: build the prompt, ask the backend, parse and validate the JSON, ask once more
with the validation error if it was wrong, and otherwise answer with the fallback provider
(the offline :class:`HeuristicLLM` by default). A broken or absent model therefore costs
quality, never correctness; failures are logged, never printed.

When the backend itself fails (unreachable, timing out, refusing), a
:class:`~memstrata.llm.breaker.CircuitBreaker` sends every call straight to the fallback for
a cool-down period (60 s by default) instead of paying the timeout again; the outage is
logged once as a warning, then at debug level until the endpoint answers again.

One source (``_async/llm/chat.py``) writes both classes: the async one over an async chat
backend and an async fallback (by default the heuristic, called inline), the sync one
(generated) over sync ones. Both log as ``memstrata.llm.chat``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar, runtime_checkable

import pydantic

from memstrata._async.llm.base import AsyncLLM
from memstrata.errors import ProviderError, ValidationError
from memstrata.llm import prompts
from memstrata.llm._language import truncate_words
from memstrata.llm.breaker import CircuitBreaker
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.llm.json_output import parse_json_output
from memstrata.llm.models import ExtractedFact, Reflection, TaskOutcome

__all__ = ["AsyncChatBackend", "AsyncPromptedLLM"]

log = logging.getLogger("memstrata.llm.chat")  # one logger name for both trees

M = TypeVar("M", bound=pydantic.BaseModel)


@runtime_checkable
class AsyncChatBackend(Protocol):
    """Sends chat messages to a model and returns its text reply.

    Implementations raise :class:`~memstrata.errors.ProviderError` when the call fails.
    """

    async def complete(self, messages: list[dict[str, str]], *, json_mode: bool) -> str: ...


class AsyncPromptedLLM:
    """Implements :class:`AsyncLLM` by prompting ``backend``; see the module docstring."""

    def __init__(
        self,
        backend: AsyncChatBackend,
        fallback: AsyncLLM | None = None,
        max_attempts: int = 2,
        *,
        cooldown_seconds: float = 60.0,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValidationError(f"max_attempts must be at least 1, got {max_attempts}")
        self._backend = backend
        if fallback is None:
            from memstrata.aio.providers import as_async_llm  # async-only

            fallback = as_async_llm(HeuristicLLM())  # async-only
            # sync: fallback = HeuristicLLM()
        self._fallback: AsyncLLM = fallback
        self._max_attempts = max_attempts
        self.breaker = breaker if breaker is not None else CircuitBreaker(cooldown_seconds)

    @property
    def name(self) -> str:
        return f"prompted/{getattr(self._backend, 'name', type(self._backend).__name__)}"

    @property
    def backend(self) -> AsyncChatBackend:
        return self._backend

    async def _ask(self, task: str, messages: prompts.Messages, schema: type[M]) -> M | None:
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
                raw = await self._backend.complete(conversation, json_mode=True)
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

    async def summarize(self, texts: Sequence[str], *, max_words: int = 200) -> str:
        summary, _writer = await self.summarize_attributed(texts, max_words=max_words)
        return summary

    async def summarize_attributed(
        self, texts: Sequence[str], *, max_words: int = 200
    ) -> tuple[str, str]:
        """``(summary, what wrote it)``: this model's name, or ``"<fallback>-fallback"``
        when the model failed and the fallback provider wrote it (issue 7 §9)."""
        if not any(t.strip() for t in texts):
            return "", self.name
        answer = await self._ask(
            "summarize", prompts.summarize_prompt(texts, max_words), prompts.SummaryResponse
        )
        if answer is None or not answer.summary.strip():
            return (
                await self._fallback.summarize(texts, max_words=max_words),
                f"{self._fallback.name}-fallback",
            )
        return truncate_words(answer.summary.strip(), max_words), self.name

    async def extract_facts(self, texts: Sequence[str]) -> list[ExtractedFact]:
        if not any(t.strip() for t in texts):
            return []
        answer = await self._ask(
            "extract_facts", prompts.extract_facts_prompt(texts), prompts.FactsResponse
        )
        return await self._fallback.extract_facts(texts) if answer is None else answer.facts

    async def score_importance(self, text: str) -> float:
        answer = await self._ask(
            "score_importance", prompts.score_importance_prompt(text), prompts.ImportanceResponse
        )
        return await self._fallback.score_importance(text) if answer is None else answer.importance

    async def reflect(self, task: TaskOutcome) -> Reflection:
        answer = await self._ask("reflect", prompts.reflect_prompt(task), Reflection)
        return await self._fallback.reflect(task) if answer is None else answer

    async def merge_profile(
        self, current: Mapping[str, str], incoming: Mapping[str, str]
    ) -> dict[str, str]:
        if not current or not incoming:  # nothing to reconcile; no model call needed
            return await self._fallback.merge_profile(current, incoming)
        answer = await self._ask(
            "merge_profile",
            prompts.merge_profile_prompt(current, incoming),
            prompts.ProfileResponse,
        )
        if answer is None:
            return await self._fallback.merge_profile(current, incoming)
        return answer.profile

    async def extract_key_info(self, texts: Sequence[str]) -> list[str]:
        if not any(t.strip() for t in texts):
            return []
        answer = await self._ask(
            "extract_key_info", prompts.key_info_prompt(texts), prompts.KeyInfoResponse
        )
        if answer is None:
            return await self._fallback.extract_key_info(texts)
        return [item.strip() for item in answer.items if item.strip()]
