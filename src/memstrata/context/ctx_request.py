"""What ``build_context`` is asked for (a pure value: one class for the sync and async
builders, :mod:`memstrata.context.builder` re-exports it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from memstrata.context.config import ContextConfig
from memstrata.errors import ValidationError
from memstrata.scope import Scope

__all__ = ["ContextRequest"]


@dataclass(frozen=True, slots=True)
class ContextRequest:
    scope: Scope
    query: str | None
    token_budget: int
    system_prompt: str | None = None
    reserve_ratio: float | None = None
    relevant_k: int | None = None  # default: as many as the budget could hold (≥ 30)
    summaries_k: int = 3
    facts_k: int = 20
    config: ContextConfig = field(default_factory=ContextConfig)

    def __post_init__(self) -> None:
        # The system prompt comes back as the first message: a lone surrogate in it failed
        # wherever that message was encoded, far from this call (a NUL is kept, as in the
        # query: nothing is stored, and JSON carries one).
        if isinstance(self.system_prompt, str):  # its type: Memory.build_context checks it
            try:
                self.system_prompt.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValidationError(
                    f"system_prompt contains a lone surrogate at position {exc.start}, which "
                    "is not valid UTF-8: fix the decoding that produced it"
                ) from None

    @property
    def relevant_limit(self) -> int:
        if self.relevant_k is not None:
            return self.relevant_k
        return max(30, min(300, self.token_budget // self.config.tokens_per_candidate))

    @property
    def lazy(self) -> bool:
        """Whether the candidates may be rendered from views, none decoded: no lever reads
        the hits' records (session and date boosts, digest expansion and neighbours do)."""
        cfg = self.config
        return not (
            cfg.session_boost or cfg.temporal_boost or cfg.neighbour_hits or cfg.digests == "expand"
        )
