"""The LLM protocol: the handful of tasks memory needs a language model for.

Every task has an offline answer (``HeuristicLLM``); an endpoint-backed provider validates
the model's output against the pydantic models of ``llm.models`` (re-exported here),
repairs or retries malformed JSON, and falls back to the heuristic answer. A failing LLM
therefore degrades quality, never correctness, and never loses the raw message (which is
stored before any LLM runs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import import_module
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from memstrata.llm.models import ExtractedFact, Reflection, TaskOutcome

__all__ = ["AsyncLLM", "ExtractedFact", "Reflection", "TaskOutcome"]

# The task models need pydantic (~0.1 s to import); they load when first named here, so
# naming only the protocol (the factory, ``Memory.stats``, a search) does not import it.
_MODELS = frozenset({"ExtractedFact", "Reflection", "TaskOutcome"})

if not TYPE_CHECKING:  # mypy sees the imports above, not this hook

    def __getattr__(name: str) -> Any:
        if name in _MODELS:
            return getattr(import_module("memstrata.llm.models"), name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@runtime_checkable
class AsyncLLM(Protocol):
    @property
    def name(self) -> str: ...

    async def summarize(self, texts: Sequence[str], *, max_words: int = 200) -> str:
        """A summary of ``texts`` in their language, at most ``max_words`` words."""
        ...

    async def extract_facts(self, texts: Sequence[str]) -> list[ExtractedFact]:
        """Facts and preferences the user states explicitly; nothing inferred."""
        ...

    async def score_importance(self, text: str) -> float:
        """How much this is worth remembering, in [0, 1]."""
        ...

    async def reflect(self, task: TaskOutcome) -> Reflection: ...

    async def merge_profile(
        self, current: Mapping[str, str], incoming: Mapping[str, str]
    ) -> dict[str, str]:
        """Merge two profiles field-wise; conflicting fields take ``incoming``."""
        ...

    async def extract_key_info(self, texts: Sequence[str]) -> list[str]:
        """Topic, constraints and deadlines worth pinning as key memory."""
        ...
