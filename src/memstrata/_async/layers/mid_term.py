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
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

import numpy as np
import numpy.typing as npt

from memstrata._async.layers.base import AsyncLayerContext
from memstrata._async.layers.key import AsyncKeyMemoryService
from memstrata._async.store.base import RecordWrite
from memstrata.errors import ConflictError, NotFoundError
from memstrata.filters import Filters
from memstrata.layers.mid_term_types import (
    _COSINE_SLACK,
    CLUSTER_JOIN,
    DEFAULT_CLUSTER_JOIN,
    CapAction,
    ClusterState,
    FloatArray,
    _unit,
    assign,
    cluster_join_cosine,
    cosine,
    heat,
    merge_centroids,
    plan_cap,
    update_centroid,
)
from memstrata.layers.mid_term_types import _state as _state  # rederive uses it
from memstrata.layers.short_term_types import is_acknowledgement
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.records import (
    AccessControl,
    Content,
    MemoryRecord,
    RecordStatus,
    RecordType,
    Source,
    Visibility,
    new_id,
)
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize
from memstrata.text import content_hash

__all__ = [
    "CLUSTER_JOIN",
    "DEFAULT_CLUSTER_JOIN",
    "MEMBERS_KEPT",
    "AsyncMidTermService",
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


# --- cluster state -> record -----------------------------------------------------------
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
class AsyncMidTermService:
    def __init__(self, ctx: AsyncLayerContext) -> None:
        self._ctx = ctx
        self._keys = AsyncKeyMemoryService(ctx)

    @staticmethod
    def _scope(scope: Scope) -> Scope:
        return scope.with_session(None)

    async def clusters(self, scope: Scope, *, include_deleted: bool = False) -> list[MemoryRecord]:
        """The user's clusters, newest activity first."""
        filters = Filters(types=_CLUSTER_TYPES, include_deleted=include_deleted)
        out: list[MemoryRecord] = []
        while True:
            batch = await self._ctx.store.list(
                self._scope(scope), filters, limit=500, offset=len(out)
            )
            out.extend(batch)
            if len(batch) < 500:
                return out

    async def _load(self, scope: Scope, records: Sequence[MemoryRecord]) -> list[ClusterState]:
        states = [_state(r) for r in records]
        counted = await self._ctx.store.counts(self._scope(scope), _HITS, [st.id for st in states])
        for st in states:  # a recall is a visit too (MemoryOS N_visit)
            st.counted = counted.get(st.id, 0)
            if st.record is not None and st.record.last_accessed_at is not None:
                st.last_visit = max(filter(None, (st.last_visit, st.record.last_accessed_at)))
        dims, model = self._ctx.embedder.dims, self._ctx.embedder.model_id
        for st in states:
            stored_model = st.record.content.structured.get("model") if st.record else model
            if st.centroid.shape != (dims,) or stored_model != model:
                # Re-embedded store (or a hand-made record): rebuild from the members.
                texts = [
                    m.text for m in await self._ctx.store.get_many(self._scope(scope), st.members)
                ]
                fallback = [st.record.text if st.record else ""]
                vectors = await self._ctx.embedder_for(scope).embed_batch(texts or fallback)
                st.centroid = np.asarray(vectors, dtype=np.float64).mean(axis=0)
                st.changed = True
        return states

    # --- writing -------------------------------------------------------------------------
    async def absorb(self, scope: Scope, messages: Sequence[MemoryRecord]) -> list[str]:
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
        vectors = await self._ctx.embedder_for(uscope).embed_batch([m.text for m in fresh])
        now = self._ctx.clock.now()
        touched: dict[str, ClusterState] = {}  # loaded or opened in this call
        retired: set[str] = set()
        dropped: list[tuple[ClusterState, str]] = []
        active_count = await self._ctx.store.count(uscope, Filters(types=_CLUSTER_TYPES))
        everything_loaded = False
        model = self._ctx.embedder.model_id
        for message, vector in zip(fresh, vectors, strict=True):
            threshold = cluster_join_cosine(model, message.text, cfg.cluster_join_cosine)
            unit = _unit(vector)
            best: ClusterState | None = None
            best_sim = -math.inf
            found = await self._ctx.store.vector_search(
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
                    record = await self._ctx.store.get(uscope, cand.id)
                except NotFoundError:
                    continue
                touched[cand.id] = (await self._load(scope, [record]))[0]
                hit = True
                break
            stored = sum(st.record is not None for st in touched.values())
            if not hit and not everything_loaded and active_count > stored:
                # the index gave none of the clusters there are (vectors of another model
                # after a re-embedding): load them all once, centroids rebuilt by _load
                rest = [
                    r
                    for r in await self.clusters(scope)
                    if r.id not in touched and r.id not in retired
                ]
                loaded = await self._load(scope, rest)
                touched.update((st.id, st) for st in loaded)
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
                            for r in await self.clusters(scope)
                            if r.id not in touched and r.id not in retired
                        ]
                        loaded = await self._load(scope, rest)
                        touched.update((st.id, st) for st in loaded)
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
        await self._write(uscope, changed, now)
        for state, reason in dropped:
            await self._retire(uscope, state, reason, now)
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

    async def _digest(self, uscope: Scope, state: ClusterState) -> str:
        recent = state.members[-_DIGEST_MEMBERS:]
        texts = [m.text for m in await self._ctx.store.get_many(uscope, recent) if m.is_active]
        # Offline extractive digest: cheap enough to refresh on every absorb (an LLM call
        # per clustered turn would cost more than the clustering itself).
        body = HeuristicLLM().summarize(texts, max_words=_DIGEST_WORDS) if texts else ""
        if not body.strip():
            body = " ".join(texts)[:400] or "(empty cluster)"
        start = state.time_start.date().isoformat() if state.time_start else "?"
        end = state.time_end.date().isoformat() if state.time_end else "?"
        return f"[{state.count} turns, {start} to {end}] {body}"

    async def _write(self, uscope: Scope, states: Sequence[ClusterState], now: datetime) -> None:
        model, dims = self._ctx.embedder.model_id, self._ctx.embedder.dims
        inserts: list[RecordWrite] = []
        made = 0  # embeddings of the inserts' own (redaction changed their text)
        for st in states:
            text = await self._digest(uscope, st)
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
                made += self._ctx.reembeds(record)  # counted with the insert (session 34)
                inserts.append(await self._ctx.write_with(record, vector))
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
                write = await self._ctx.write_with(record, vector)
                async with self._ctx.admit(uscope, self._ctx.reembeds(record)):
                    await self._ctx.store.replace(uscope, write, expected_version=old.version)
        if inserts:
            async with self._ctx.admit(uscope, made):  # a system context: never refused
                await self._ctx.store.insert(inserts)

    async def _retire(self, uscope: Scope, state: ClusterState, reason: str, now: datetime) -> None:
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
        await self._ctx.store.replace(
            uscope,
            RecordWrite(record, None, tuple(tokenize(old.text))),
            expected_version=old.version,
        )
        await self._ctx.store.set_status(uscope, [old.id], RecordStatus.DELETED, now)

    # --- reading -------------------------------------------------------------------------
    async def recall(
        self, scope: Scope, query_vector: npt.ArrayLike, k: int = 3, *, min_similarity: float = -1.0
    ) -> list[tuple[MemoryRecord, float]]:
        """The ``k`` clusters whose centroids are most similar to the query, best first.

        Each returned cluster counts a hit (and a visit); a cluster whose hits reach
        ``promote_hits`` is promoted to key memory, once. Through a caller (another user
        reading what was shared) nothing is counted: the hits are the owner's (until
        session 27 a caller's recall counted them, and failed at the promotion).
        """
        if k <= 0:
            return []
        uscope = self._scope(scope)
        # The index vector of a cluster *is* its normalised centroid, so the store's exact
        # vector search ranks by centroid cosine without parsing every stored centroid
        # (measured with 100 clusters × 384 dims on SQLite: 0.4 ms vs 61 ms to load them).
        query = _unit(query_vector).astype(np.float32)
        found = await self._ctx.store.vector_search(uscope, query, k, Filters(types=_CLUSTER_TYPES))
        found = [c for c in found if float(c.score) >= min_similarity]
        if scope.caller is not None:
            by_id = {r.id: r for r in await self._ctx.store.get_many(uscope, [c.id for c in found])}
            return [(by_id[c.id], float(c.score)) for c in found if c.id in by_id]
        now = self._ctx.clock.now()
        return [(await self._hit(uscope, c.id, now), float(c.score)) for c in found]

    async def count_hits(self, scope: Scope, cluster_ids: Sequence[str]) -> list[MemoryRecord]:
        """Count a hit on clusters a search already returned (what ``cluster_hits`` jobs
        queued before ``build_context`` counted its hits itself still do). Clusters gone
        since are skipped."""
        uscope = self._scope(scope)
        now = self._ctx.clock.now()
        out = []
        for cluster_id in cluster_ids:
            try:
                out.append(await self._hit(uscope, cluster_id, now))
            except NotFoundError:
                continue
        return out

    async def count_shown(self, scope: Scope, clusters: Sequence[MemoryRecord]) -> list[str]:
        """Count a hit on each cluster a context showed: counters only (buffered by the
        store, so the read path takes no write lock), no job, no version.

        Returns the ids whose hits have reached ``promote_hits`` without a promotion yet;
        promoting writes a version, so the caller runs :meth:`promote_due` off the read path.
        """
        if not clusters:
            return []
        uscope = self._scope(scope)
        await self._ctx.store.add_counts(uscope, _HITS, {c.id: 1 for c in clusters})
        open_ = [c for c in clusters if c.content.structured.get("promoted_key") is None]
        if not open_:
            return []
        counted = await self._ctx.store.counts(uscope, _HITS, [c.id for c in open_])
        floor = self._ctx.config.promote_hits
        return [
            c.id
            for c in open_
            if counted.get(c.id, 0) + int(c.content.structured.get("hits", 0)) >= floor
        ]

    async def promote_due(self, scope: Scope, cluster_ids: Sequence[str]) -> list[MemoryRecord]:
        """Promote to key memory each cluster whose hits reached ``promote_hits`` (once);
        hits are not counted again. Clusters gone since are skipped."""
        uscope = self._scope(scope)
        now = self._ctx.clock.now()
        out = []
        for cluster_id in cluster_ids:
            try:
                current = await self._ctx.store.get(uscope, cluster_id)
            except NotFoundError:
                continue
            out.append(await self._promote_if_due(uscope, current, now))
        return out

    async def hits(self, scope: Scope, cluster_ids: Sequence[str]) -> dict[str, int]:
        """Times each cluster was recalled: the store's ``hits`` counter (plus hits a
        cluster carried in ``structured`` from before hits were counters)."""
        uscope = self._scope(scope)
        counted = await self._ctx.store.counts(uscope, _HITS, list(cluster_ids))
        legacy = {
            r.id: int(r.content.structured.get("hits", 0))
            for r in await self._ctx.store.get_many(uscope, list(cluster_ids))
        }
        return {i: counted.get(i, 0) + legacy.get(i, 0) for i in cluster_ids if i in legacy}

    async def _hit(self, uscope: Scope, cluster_id: str, now: datetime) -> MemoryRecord:
        """Count a hit: counters only (no version, never a ConflictError with an absorb);
        the one version written is the promotion to key memory, once."""
        current = await self._ctx.store.get(uscope, cluster_id)
        await self._ctx.store.add_counts(uscope, _HITS, {cluster_id: 1})
        await self._ctx.store.touch(uscope, [cluster_id], now)
        return await self._promote_if_due(uscope, current, now)

    async def _promote_if_due(
        self, uscope: Scope, current: MemoryRecord, now: datetime
    ) -> MemoryRecord:
        cluster_id = current.id
        total = (await self.hits(uscope, [cluster_id])).get(cluster_id, 0)
        if (
            total < self._ctx.config.promote_hits
            or current.content.structured.get("promoted_key") is not None
        ):
            return await self._ctx.store.get(uscope, cluster_id)
        for _ in range(5):  # an absorb may write the cluster concurrently: reload and retry
            key = (await self._keys.promote(uscope, current)).id
            structured = {**current.content.structured, "promoted_key": key}
            record = replace(
                current,
                version=current.version + 1,
                updated_at=now,
                content=replace(current.content, structured=structured),
            )
            try:
                await self._ctx.store.replace(
                    uscope,
                    RecordWrite(record, None, tuple(tokenize(record.text))),
                    expected_version=current.version,
                )
            except ConflictError:
                current = await self._ctx.store.get(uscope, cluster_id)
                if current.content.structured.get("promoted_key") is not None:
                    return current  # promoted meanwhile (by another job)
                continue
            return await self._ctx.store.get(uscope, cluster_id)
        raise ConflictError(f"cluster {cluster_id} kept changing while promoting it; retry")
