"""Per-user in-process vector cache for exact cosine search with numpy.

A search loads nothing it already has: the cache holds, per ``(tenant, user, model,
dims)``, the ids, the float32 matrix and small per-row arrays (type, agent, session,
visibility, status, superseded, importance, seq), so scope and the common filters become
boolean masks.

Only the vectors of the store's model (``meta``'s, read by every search: store/one_model.py)
are held. While ``reembed`` runs, the table holds rows of two models, and a question of one
compared with a vector of the other is a meaningless score (at equal dims it ranked records
wrongly; a process opened before the migration searches with the old model until the
switch). After the switch the cache is another key's, and rows of the old model that a
writer left behind are not loaded. A row loaded again that is now of another model removes
its record's copy, as a dead row (rows of no recorded model count as the store's).

Coherence is cheap and works across processes because its state lives in the database.
Every vector row carries a change number (SQLite ``vectors.rev``, PostgreSQL ``vseq``) that
is raised past the user's highest whenever the row is written *or its record's masked
columns change* (a cluster's new centroid, a summary's new version, a status change). Each
query reads ``(generation, highest change number)`` in one indexed statement and loads only
the rows changed since; a row loaded again replaces its old copy (the old position is
marked dead, the new one appended). So an update costs the rows that changed, not the
user's whole matrix — before, every cluster or summary update made the next search reload
all of the user's vectors, 10,000 rows per ingest job in a session of 10,000 turns. Only
removals (purge, re-embedding) bump the user's ``scope_generation`` row (``purge_user``,
which deletes that row, bumps the purge epoch's), after which the next query reloads from
scratch.

Rows are appended in place: the matrix and columns are over-allocated buffers shared by
successive states, each state seeing its first ``n`` rows, so an append copies nothing old
(amortised O(1) per row). A published state is never changed: new rows go past its end and
a dead row is marked in the new state's own ``live`` array, so a search on another thread
keeps a consistent view while the cache is brought up to date. Dead rows are compacted away
once they outnumber the live ones (amortised O(1) per update).
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from ...filters import Filters
from ...records import RecordStatus, RecordType
from ...scope import Scope
from ...traces import PurgeCount
from ..base import Vector
from ..one_model import DIMS_KEY, MODEL_KEY, ModelPin
from .codec import scope_token

__all__ = ["PURGES", "PURGE_EPOCH", "UserVectors", "VectorCache", "dot", "top_k"]

# Rows: (change number, id, type, agent, session, visibility, status, superseded,
# importance, vector bytes or NULL for a row of another model, seq). ``?5``: the store's
# model (NULL: a store with none yet, whose rows all count).
_LOAD = """
SELECT v.rev, r.id, r.type, r.agent, r.session, r.visibility, r.status,
       r.superseded_by IS NOT NULL, r.importance,
       CASE WHEN ?5 IS NULL OR v.model IS NULL OR v.model = ?5 THEN v.vector END, v.seq
FROM vectors v JOIN records r ON r.seq = v.seq
WHERE v.tenant = ?1 AND v.user = ?2 AND v.rev > ?3 AND v.dims = ?4
ORDER BY v.rev, v.seq
"""

_STATE = """
SELECT (SELECT generation FROM scope_generation WHERE scope_tok = ?),
       (SELECT max(rev) FROM vectors WHERE tenant = ? AND user = ?),
       (SELECT generation FROM scope_generation WHERE scope_tok = ?),
       (SELECT generation FROM scope_generation WHERE scope_tok = ?),
       (SELECT value FROM meta WHERE key = ?),
       (SELECT value FROM meta WHERE key = ?)
"""
# The scope_generation row bumped by every purge_user (it deletes the user's own row, so a
# cache in another process could not tell a purged user's new rows from their old ones).
PURGE_EPOCH = ""
# The row every purge bumps, of some records or of a user: a process that reads it risen
# forgets what it keeps of users' words (memstrata.traces.PurgeCount). The last two columns
# are the store's embedding model and dims, which a search must still embed with
# (one_model.ModelPin).
PURGES = "purges"

# Record types as small integers: a type filter is then an integer ``isin`` (tens of µs
# for 10k rows) instead of one over Python strings (~2 ms, the largest part of a search's
# dense side). An unknown type (none is stored) gets -1, which no filter asks for.
_TYPE_CODE = {t.value: n for n, t in enumerate(RecordType)}

_MIN_CAPACITY = 64
_MIN_DEAD = 256  # dead rows tolerated before a compaction, whatever the live count


class _Columns:
    """Over-allocated storage shared by the successive states of one user's cache.

    Only the newest state appends (under :class:`VectorCache`'s lock for the user), always
    past the end of every published state, so rows a state sees never change."""

    def __init__(self, dims: int, capacity: int) -> None:
        self.matrix = np.zeros((capacity, dims), np.float32)
        self.type = np.full(capacity, -1, np.int8)
        self.agent = np.empty(capacity, object)
        self.agentless = np.zeros(capacity, bool)
        self.session = np.empty(capacity, object)
        self.private = np.zeros(capacity, bool)
        self.active = np.zeros(capacity, bool)
        self.superseded = np.zeros(capacity, bool)
        self.importance = np.zeros(capacity, np.float64)
        self.seq = np.zeros(capacity, np.int64)
        self.ids: list[str] = []
        self.where: dict[str, int] = {}  # id -> the row holding its newest copy

    @property
    def capacity(self) -> int:
        return int(self.matrix.shape[0])

    _ARRAYS = (
        "matrix",
        "type",
        "agent",
        "agentless",
        "session",
        "private",
        "active",
        "superseded",
        "importance",
        "seq",
    )

    def copy(
        self, rows: npt.NDArray[np.intp], live: npt.NDArray[np.bool_], capacity: int
    ) -> _Columns:
        """New storage holding ``rows`` (in order), room for ``capacity`` rows."""
        out = _Columns(self.matrix.shape[1], capacity)
        m = rows.size
        for name in self._ARRAYS:
            getattr(out, name)[:m] = getattr(self, name)[rows]
        out.ids = [self.ids[i] for i in rows]
        out.where = {rid: j for j, rid in enumerate(out.ids) if live[j]}
        return out


@dataclass(frozen=True)
class UserVectors:
    """One user's vectors of one dimension, and the columns the masks need (a snapshot:
    rows ``[0, n)`` of the shared storage, of which ``live`` are current)."""

    dims: int
    generation: int = -1
    last_rev: int = 0
    n: int = 0
    dead: int = 0
    live: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, bool))
    cols: _Columns | None = None

    @property
    def count(self) -> int:
        """Vectors held (current rows only)."""
        return self.n - self.dead

    @property
    def held_rows(self) -> int:
        """The rows of memory this state takes, for a cache's bound: its storage's
        capacity (allocated ahead, at least :data:`_MIN_CAPACITY` rows: 64 KiB at 256
        dims for a user with one vector), and one for the entry itself (a user with no
        vector still costs a cache entry)."""
        return (self.cols.capacity if self.cols is not None else 0) + 1

    @property
    def ids(self) -> list[str]:
        """Row -> record id (valid for rows below ``n``; never changed by the caller)."""
        return self.cols.ids if self.cols is not None else []

    @property
    def matrix(self) -> npt.NDArray[np.float32]:
        if self.cols is None:
            return np.zeros((0, self.dims), np.float32)
        return self.cols.matrix[: self.n]

    @property
    def seq(self) -> npt.NDArray[np.int64]:
        """Each row's record seq (the store's insertion order, for ties)."""
        if self.cols is None:
            return np.zeros(0, np.int64)
        return self.cols.seq[: self.n]

    def extended(self, rows: list[tuple[Any, ...]], last_rev: int) -> UserVectors:
        """A new state holding these rows too, each replacing an older copy of its record
        (``self`` is left as it was, so a search on another thread that holds it is not
        disturbed); a row without a vector (of another model) only removes its record's
        copy. Must be called on the newest state of its storage."""
        if not rows:
            return replace(self, last_rev=max(self.last_rev, last_rev))
        last_rev = max(last_rev, int(rows[-1][0]))
        gone = [str(r[1]) for r in rows if r[9] is None]
        if gone:
            rows = [r for r in rows if r[9] is not None]
        k = len(rows)
        n = self.n
        cols = self.cols
        if k == 0:
            return self._without(gone, last_rev)
        if cols is None or len(cols.ids) != n or n + k > cols.capacity:
            fresh = _Columns(self.dims, max(_MIN_CAPACITY, 2 * (n + k)))
            cols = fresh if cols is None else cols.copy(np.arange(n), self.live, fresh.capacity)
        block = np.frombuffer(b"".join(r[9] for r in rows), dtype="<f4")
        cols.matrix[n : n + k] = block.reshape(k, self.dims)
        cols.type[n : n + k] = [_TYPE_CODE.get(str(r[2]), -1) for r in rows]
        cols.agent[n : n + k] = [r[3] for r in rows]
        cols.agentless[n : n + k] = [r[3] is None for r in rows]
        cols.session[n : n + k] = [r[4] for r in rows]
        cols.private[n : n + k] = [r[5] == "private" for r in rows]
        cols.active[n : n + k] = [r[6] == RecordStatus.ACTIVE.value for r in rows]
        cols.superseded[n : n + k] = [bool(r[7]) for r in rows]
        cols.importance[n : n + k] = [float(r[8]) for r in rows]
        cols.seq[n : n + k] = [int(r[10]) for r in rows]
        live = np.concatenate([self.live, np.ones(k, bool)])
        dead = self.dead
        for j, r in enumerate(rows):
            rid = str(r[1])
            old = cols.where.get(rid)
            if old is not None and live[old]:
                live[old] = False
                dead += 1
            cols.where[rid] = n + j
            cols.ids.append(rid)
        state = UserVectors(
            dims=self.dims,
            generation=self.generation,
            last_rev=last_rev,
            n=n + k,
            dead=dead,
            live=live,
            cols=cols,
        )
        return state._without(gone, last_rev) if gone else state._settled()

    def _without(self, gone: list[str], last_rev: int) -> UserVectors:
        """A new state without the copies of the records ``gone`` (a copy held by ``self``
        is marked dead in the new state's own ``live``)."""
        cols, live, dead = self.cols, self.live, self.dead
        if cols is not None:
            live = live.copy()
            for rid in gone:
                old = cols.where.pop(rid, None)
                if old is not None and old < self.n and live[old]:
                    live[old] = False
                    dead += 1
        return replace(self, last_rev=max(self.last_rev, last_rev), dead=dead, live=live)._settled()

    def _settled(self) -> UserVectors:
        return self.compacted() if self.dead > max(_MIN_DEAD, self.count) else self

    def compacted(self) -> UserVectors:
        """The same vectors without dead rows (order kept), in new storage."""
        if self.cols is None:
            return self
        keep = np.flatnonzero(self.live)
        live = np.ones(keep.size, bool)
        cols = self.cols.copy(keep, live, max(_MIN_CAPACITY, 2 * keep.size))
        return replace(self, n=int(keep.size), dead=0, live=live, cols=cols)

    def mask(self, scope: Scope, filters: Filters) -> npt.NDArray[np.bool_]:
        """Rows admitted by the scope (mirrors ``Scope.admits``) and the cached filters."""
        n, c = self.n, self.cols
        if c is None:
            return np.zeros(0, bool)
        keep = self.live.copy()
        if scope.session is not None:
            keep &= c.session[:n] == scope.session
        if scope.agent is not None:
            own = c.agentless[:n] | (c.agent[:n] == scope.agent)
            keep &= own | ~c.private[:n]
        if not filters.include_deleted:
            keep &= c.active[:n]
        if filters.valid_at is None and not filters.include_superseded:
            keep &= ~c.superseded[:n]
        if filters.types is not None:
            keep &= np.isin(c.type[:n], [_TYPE_CODE[RecordType(t).value] for t in filters.types])
        if filters.min_importance is not None:
            keep &= c.importance[:n] >= filters.min_importance
        return keep

    def scores(self, keep: npt.NDArray[np.intp], query: Vector) -> Vector:
        """``matrix[keep] @ query``: only the kept rows when they are few (a search of one
        type, e.g. a user's clusters among their turns, costs the clusters)."""
        if keep.size * 4 < self.n:
            return dot(self.matrix[keep], query)
        return dot(self.matrix, query)[keep]


# (tenant, user, the store's model or None, dims)
_Key = tuple[str, str, str | None, int]


class VectorCache:
    """The vectors of the users this process has searched, one cache per store: the least
    recently searched are dropped once the cache holds more than ``max_rows`` rows (their
    next search loads them again), so a long-running process serving many users holds a
    bounded amount of memory, not every matrix it ever loaded. One user larger than the
    bound stays (alone).

    A user's rows are those their storage holds (:attr:`UserVectors.held_rows`: allocated
    rows, one at least), not their vectors: until session 29 a user counted their vectors
    only, so users with no vector were never dropped and a user with one vector held 64
    rows for one counted (a server searching for millions of small users grew without
    bound)."""

    def __init__(self, max_rows: int = 500_000, model: ModelPin | None = None) -> None:
        self.max_rows = max_rows
        self.model = model if model is not None else ModelPin()
        self._users: OrderedDict[_Key, UserVectors] = OrderedDict()
        self._rows = 0  # sum of the held users' held_rows
        # a loader's lock lives while someone holds or waits for it: not one per user ever
        self._locks: weakref.WeakValueDictionary[_Key, threading.Lock] = (
            weakref.WeakValueDictionary()
        )
        self._lock = threading.Lock()
        self.rows_loaded = 0  # vector rows read from the database (work counter, for tests)
        self.purges = PurgeCount()

    def clear(self) -> None:
        with self._lock:
            self._users.clear()
            self._rows = 0

    @property
    def rows_held(self) -> int:
        return self._rows

    def _publish(self, key: _Key, state: UserVectors) -> None:
        """Hold ``state`` as the user's newest, then drop the least recently used past the
        bound (caller holds ``self._lock``)."""
        old = self._users.pop(key, None)
        self._rows += state.held_rows - (old.held_rows if old is not None else 0)
        self._users[key] = state
        while self._rows > self.max_rows and len(self._users) > 1:
            _, dropped = self._users.popitem(last=False)
            self._rows -= dropped.held_rows

    def __len__(self) -> int:
        """Users held."""
        return len(self._users)

    def _user_lock(self, key: _Key) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(key, threading.Lock())

    def load(self, conn: sqlite3.Connection, tenant: str, user: str, dims: int) -> UserVectors:
        """The user's vectors of ``dims`` and of the store's model (``meta``'s, read in the
        state statement), brought up to date with the database.

        Runs inside the caller's read transaction, so state and rows come from one snapshot
        (a state another thread brought further than this snapshot is returned as it is).
        """
        generation, max_rev, epoch, purges, model, model_dims = conn.execute(
            _STATE,
            (scope_token(tenant, user), tenant, user, PURGE_EPOCH, PURGES, MODEL_KEY, DIMS_KEY),
        ).fetchone()
        self.purges.read(int(purges or 0))
        self.model.check(model, model_dims)
        # both counts only grow; a purge_user resets the user's to 0 and raises the epoch's
        generation = (int(epoch or 0) << 40) + int(generation or 0)
        max_rev = int(max_rev or 0)
        key = (tenant, user, model, dims)
        with self._user_lock(key):
            with self._lock:
                cached = self._users.get(key)
                if cached is not None:
                    self._users.move_to_end(key)
            if cached is None or cached.generation != generation:
                cached = UserVectors(dims=dims, generation=generation)
            elif cached.last_rev >= max_rev:
                return cached
            rows = conn.execute(_LOAD, (tenant, user, cached.last_rev, dims, model)).fetchall()
            self.rows_loaded += len(rows)
            # Rows of other dims up to max_rev were seen too (and rows of other models are
            # dead copies now); skip them next time.
            cached = cached.extended(rows, max_rev)
            with self._lock:
                self._publish(key, cached)
            return cached


def dot(matrix: npt.NDArray[np.float32], query: Vector) -> Vector:
    """``matrix @ query`` without BLAS.

    A matrix-vector product is memory-bound; multi-threaded BLAS gains nothing on it and,
    on a loaded machine, its thread wake-ups cost 5-20x the product itself (measured: 15 ms
    vs 0.5 ms for 10k x 384). ``einsum``'s own SIMD loop runs in the calling thread.
    """
    out: Vector = np.einsum("ij,j->i", matrix, query)
    return out


def top_k(scores: Vector, k: int, ties: npt.NDArray[Any] | None = None) -> npt.NDArray[np.intp]:
    """Indices of the ``k`` highest scores, best first; equal scores in ``ties`` order
    (the records' seq: insertion order, whatever order the cache holds them in), else by
    position."""
    order = np.arange(scores.size) if ties is None else np.asarray(ties)
    if k >= scores.size:
        return np.lexsort((order, -scores))
    part = np.argpartition(-scores, k - 1)[:k]
    # every row tied with the k-th best competes for the last places, by ``ties``
    cand = np.flatnonzero(scores >= scores[part].min())
    return cand[np.lexsort((order[cand], -scores[cand]))][:k]
