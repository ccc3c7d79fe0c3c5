"""The layer defaults and job kinds (pure values, one class for the sync and the async
layers)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CLUSTER_HITS", "LayerConfig"]

# The job that counts hits on the clusters a search returned (layers.stack handles it).
CLUSTER_HITS = "cluster_hits"


@dataclass(frozen=True, slots=True)
class LayerConfig:
    """Every default of DESIGN §2–§4 in one place; change one by passing a new config."""

    # short-term buffer (seed 004: 20 rounds FIFO; seed 000/001: 8000-token cap)
    short_term_rounds: int = 20
    short_term_token_cap: int = 8000
    tool_output_max_chars: int = 500  # rule compression (seed 000 §7)
    ack_max_chars: int = 20
    # mid-term clusters (PMemo / MemoryOS)
    # None = calibrated per embedder and script (layers.mid_term.CLUSTER_JOIN; 0.7 otherwise)
    cluster_join_cosine: float | None = None
    max_clusters: int = 100
    promote_hits: int = 10
    heat_recency_hours: float = 24.0
    # long-term summaries
    summary_every_rounds: int = 10
    summary_max_words: int = 200
    # episodic (seed 000 L3, seed 001)
    episodic_top_k: int = 3
    episodic_min_importance: float = 0.3
    episodic_decay: float = 0.95
    feedback_importance: float = 0.9
    # semantic facts (seed 001)
    fact_min_confidence: float = 0.6
    fact_max_in_context: int = 20
    fact_confirm_step: float = 0.05
    # knowledge chunks (seed 002 §8.6)
    chunk_tokens: int = 2000
    chunk_overlap_tokens: int = 200
    # write policies (seed 002)
    dedup_cosine: float = 0.95
    low_value_max_chars: int = 50
    # procedural (seed 002 §8.8)
    procedure_reuse_similarity: float = 0.8
    procedure_reuse_success_rate: float = 0.9
