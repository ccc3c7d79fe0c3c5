"""Dense candidates in PostgreSQL: exact scores from a per-process cache, or pgvector HNSW.

A user with fewer than ``exact_below`` vectors (default 100,000) is searched exactly: their
vectors are cached in this process as one float32 matrix and scored with the numpy product
the SQLite store uses, so both stores return the same ids in the same order with bit-equal
scores. The cache stays coherent across processes like SQLite's: a new or updated vector,
or a change to its record's masked columns, gives the row a new ``vseq`` (the cache loads
that row again); removals bump the user's ``scope_generation`` row; each query reads both
in one indexed statement.

A larger user is searched with pgvector's HNSW index (inner product on unit vectors, with
iterative scans so scope and filters still fill ``k``), over-fetching and re-scoring the
candidates with numpy: approximate recall, the same score scale. Measured at 20,000
random 384-d vectors for one user: exact 24.4 / 40.9 ms p50 / p95, HNSW 36.5 / 61.5 ms
with recall@10 of 0.16 (random vectors are HNSW's worst case), hence the high default.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from memstrata.filters import Filters
from memstrata.scope import Scope
from memstrata.store.one_model import DIMS_KEY, MODEL_KEY, ModelPin
from memstrata.store.postgres.where import filters_sql, needs_python, scope_sql
from memstrata.store.sqlite.codec import COLUMNS, scope_token
from memstrata.store.sqlite.vectors import UserVectors, dot, top_k
from memstrata.store.types import Candidate, Vector
from memstrata.traces import PurgeCount

__all__ = [
    "AsyncVectorCache",
    "UserState",
    "ensure_hnsw",
    "hnsw_name",
    "hnsw_search",
    "vector_array",
]

_RCOLS = ", ".join(f'r."{c}"' for c in COLUMNS)

# Rows of the store's model (the last parameter; NULL: a store with none yet) come with
# their vector, others with NULL: a copy of that record is dead now (sqlite/vectors.py).
_LOAD = """
SELECT v.vseq, r.id, r.type, r.agent, r.session, r.visibility, r.status,
       r.superseded_by IS NOT NULL, r.importance,
       CASE WHEN %(model)s::text IS NULL OR v.model IS NULL OR v.model = %(model)s::text
            THEN v.embedding END,
       v.seq
FROM vectors v JOIN records r ON r.seq = v.seq
WHERE v.tenant = %(tenant)s AND v."user" = %(user)s AND v.dims = %(dims)s
  AND v.vseq > %(safe)s AND NOT v.vseq = ANY(%(seen)s::bigint[])
ORDER BY v.vseq
"""

# max(vseq) of one dims: the newest entry of the vectors_scope index (one index probe);
# without dims it scanned every vector of the user (3 ms per search at 10k). The 4th column
# sums the vseqs above the copy's last final one, as (count, sum) (an index range: the few
# rows written while other writers were in flight; a row's vseq only grows, so equal pairs
# mean the same rows); the last is the snapshot's xmin (see _Settling).
_STATE = """
SELECT (SELECT generation FROM scope_generation WHERE scope_tok = %s),
       (SELECT max(vseq) FROM vectors WHERE tenant = %s AND "user" = %s AND dims = %s),
       (SELECT generation FROM scope_generation WHERE scope_tok = ''),
       (SELECT ARRAY[count(*), coalesce(sum(vseq), 0)]::bigint[] FROM vectors
        WHERE tenant = %s AND "user" = %s AND dims = %s AND vseq > %s),
       pg_snapshot_xmin(pg_current_snapshot())::text::bigint,
       (SELECT generation FROM scope_generation WHERE scope_tok = 'purges'),
       (SELECT value FROM meta WHERE key = %s),
       (SELECT value FROM meta WHERE key = %s)
"""
# The third column is the purge epoch: the scope_generation row of no one that every
# purge_user bumps, because it deletes the user's own row (which names them by their scope
# token) and a cache in another process could not tell otherwise (as in SQLite). The last
# is the count of purges (sqlite/vectors.py ``PURGES``; memstrata.traces.PurgeCount), then
# the store's embedding model and dims, which a search must still embed with
# (one_model.ModelPin).
_COUNT = 'SELECT count(*) FROM vectors WHERE tenant = %s AND "user" = %s AND dims = %s'
# The same, of one model (rows of no recorded model count as the store's, as the load takes
# them): the index has no model, so this one visits the rows; only asked when the count of
# every model reaches exact_below (while a re-embedding runs, both models' rows are there).
_COUNT_MODEL = _COUNT + " AND (model IS NULL OR model = %s)"
# A transaction id newer than every one assigned before this statement (it assigns one to
# the statement's own transaction, which writes nothing; read once per load, not per search).
_NEWEST_XID = "SELECT pg_current_xact_id()::text::bigint"
_NO_COPY = 1 << 62  # no copy: count no window


@dataclass(frozen=True, slots=True)
class UserState:
    """What one query read of a user's vectors: ``generation`` (removals), the newest
    ``vseq``, the vector ``count`` (or a bound, see :meth:`AsyncVectorCache.state`), the
    snapshot's ``xmin`` (every older transaction had ended), ``current``: this process's
    copy held every vector the snapshot saw, and ``model``: the store's embedding model
    (``meta``), the only one whose vectors a search loads (a re-embedding writes another's
    beside them until its switch)."""

    generation: int
    max_vseq: int
    count: int
    xmin: int
    current: bool = False
    model: str | None = None  # the store's, whose vectors alone a search compares


@dataclass(frozen=True, slots=True)
class _Settling:
    """Which loaded vseqs are final. A row's vseq is taken when it is written and seen when
    its transaction commits, so two writers of one user commit out of order: a copy that
    loaded vseq 11 may later see vseq 10 commit (before, it never loaded 10: that record
    was missing from the process's dense search until something of the user was deleted).
    Rows at or below ``safe`` are final; the ``seen`` ones above it are loaded; a load
    reads every row above ``safe`` and adds the unseen. ``pending`` makes them final: a
    load that saw every row up to ``vseq`` then visible records an xid newer than every
    transaction that could still commit a lower vseq (they took it, and their xid, before
    that vseq was written), and once a later snapshot's ``xmin`` passes it, they have all
    ended — what they committed was loaded, or counted, before that settles. A transaction
    left open anywhere on the server keeps the rows written meanwhile unsettled: counted
    per search, read again per load, loaded once. Immutable, like the copy it describes."""

    safe: int = 0
    seen: frozenset[int] = frozenset()
    pending: tuple[tuple[int, int], ...] = ()  # (xid, vseq), oldest first

    def settled(self, xmin: int) -> _Settling:
        pending, safe = self.pending, self.safe
        while pending and pending[0][0] < xmin:
            safe, pending = max(safe, pending[0][1]), pending[1:]
        if pending is self.pending:
            return self
        return _Settling(safe, frozenset(v for v in self.seen if v > safe), pending)

    def loaded(self, vseqs: Iterable[int], xid: int, max_vseq: int) -> _Settling:
        """After a load that added ``vseqs`` and saw every row up to ``max_vseq``."""
        pending = (*self.pending[-(_MAX_PENDING - 1) :], (xid, max_vseq))
        return _Settling(self.safe, self.seen.union(vseqs), pending)


_MAX_PENDING = 64  # the oldest dropped first: the later ones settle later, never wrongly


_MAX_MODEL_COUNTS = 10_000  # users past exact_below whose model's count is remembered

# (tenant, user, the store's model or None, dims)
_Key = tuple[str, str, str | None, int]


class AsyncVectorCache:
    """Users' vector matrices of the store's model, least recently used dropped past
    ``max_rows`` rows (each user's :attr:`~memstrata.store.sqlite.vectors.UserVectors.
    held_rows`: allocated rows, one at least, as the SQLite cache counts them)."""

    def __init__(self, max_rows: int = 500_000, model: ModelPin | None = None) -> None:
        self.max_rows = max_rows
        self.model = model if model is not None else ModelPin()
        self._users: OrderedDict[_Key, tuple[UserVectors, _Settling]] = OrderedDict()
        self._rows = 0  # sum of the held users' held_rows
        # a loader's lock lives while someone holds or waits for it: not one per user ever
        self._locks: weakref.WeakValueDictionary[_Key, asyncio.Lock] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()
        self.purges = PurgeCount()
        # meta's model at this cache's last state read: which copy the next read counts
        # rows above (read again by that statement; another model there means no copy)
        self._model: str | None = None
        # (generation, newest vseq, count) of the store's model's rows of the users past
        # exact_below that were counted: that count visits every row (38.6 ms at 100k), the
        # count of every model reads the index only (4.2 ms); asked again when a vector was
        # written (a higher vseq) or removed (a generation) since
        self._model_counts: OrderedDict[_Key, tuple[int, int, int]] = OrderedDict()

    def clear(self) -> None:
        with self._lock:
            self._users.clear()
            self._model_counts.clear()
            self._rows = 0

    def __len__(self) -> int:
        """Users held."""
        return len(self._users)

    async def state(
        self,
        conn: psycopg.AsyncConnection[Any],
        tenant: str,
        user: str,
        dims: int,
        exact_below: int,
    ) -> UserState:
        """One user's :class:`UserState`. The count (a scan of the user's index entries:
        1.1 ms at 10k vectors; past ``exact_below``, a count of the store's model's rows,
        which visits them) is read only when this process's copy is not up to date:
        when it is, it holds exactly the user's vectors of ``dims``. When the copy lacks
        only rows added since (same generation: nothing deleted), those are the rows above
        its last final vseq that it does not hold; a count below ``exact_below`` is returned
        so (the caller only asks "none?" and "``exact_below`` or more?"; every add's dedup
        search used to count). A copy is up
        to date when nothing is above its newest vseq and the rows above its last final
        one are those it holds; what can settle then settles here, without a load. The
        copy is of the store's model: another model in ``meta`` than at the last read
        (a migration's switch) means no copy."""
        guess = self._model
        with self._lock:
            held = self._users.get((tenant, user, guess, dims))
        safe = held[1].safe if held is not None else _NO_COPY
        tok = scope_token(tenant, user)
        args = (tok, tenant, user, dims, tenant, user, dims, safe, MODEL_KEY, DIMS_KEY)
        async with conn.cursor(row_factory=psycopg.rows.tuple_row) as cur:
            await cur.execute(_STATE, args)
            row = await cur.fetchone()
            assert row is not None  # noqa: S101 - a SELECT of scalars always returns a row
            generation, max_vseq = (int(row[2] or 0) << 40) + int(row[0] or 0), int(row[1] or 0)
            (window, window_sum), xmin = row[3], int(row[4])
            self.purges.read(int(row[5] or 0))
            self.model.check(row[6], row[7])
            model = self._model = row[6]
            if held is not None and model != guess:
                held = None  # the store's model changed since: that copy is another's
            if held is not None and held[0].generation == generation:
                cached, settling = held
                seen = settling.seen
                if cached.last_rev >= max_vseq and (window, window_sum) == (len(seen), sum(seen)):
                    if settling.pending:
                        key = (tenant, user, model, dims)
                        self._replace(key, held, (cached, settling.settled(xmin)))
                    return UserState(
                        generation, max_vseq, cached.count, xmin, current=True, model=model
                    )
                count = cached.count + window - len(seen)  # the rows not held are new
                if count < exact_below:
                    return UserState(generation, max_vseq, count, xmin, model=model)
            # of every model (index only): a bound, which settles "below exact_below";
            # past it, the store's model's own rows are counted (session 31: a store half
            # re-embedded searched its model's few rows through HNSW, by both models' count)
            await cur.execute(_COUNT, (tenant, user, dims))
            counted = await cur.fetchone()
            count = int(counted[0]) if counted else 0
            if count >= exact_below and model is not None:
                count = await self._model_count(
                    cur, (tenant, user, model, dims), generation, max_vseq
                )
        return UserState(generation, max_vseq, count, xmin, model=model)

    async def _model_count(self, cur: Any, key: _Key, generation: int, max_vseq: int) -> int:
        """The count of the store's model's rows of one user and dims (``key``), read
        again only when a vector was written or removed since the last one read."""
        with self._lock:
            known = self._model_counts.get(key)
        if known is not None and known[:2] == (generation, max_vseq):
            return known[2]
        tenant, user, model, dims = key
        await cur.execute(_COUNT_MODEL, (tenant, user, dims, model))
        counted = await cur.fetchone()
        count = int(counted[0]) if counted else 0
        with self._lock:
            self._model_counts[key] = (generation, max_vseq, count)
            self._model_counts.move_to_end(key)
            while len(self._model_counts) > _MAX_MODEL_COUNTS:
                self._model_counts.popitem(last=False)
        return count

    async def load(
        self,
        conn: psycopg.AsyncConnection[Any],
        tenant: str,
        user: str,
        dims: int,
        state: UserState,
    ) -> UserVectors:
        """The user's vectors, brought up to date (inside the caller's snapshot, taken
        after ``state``'s; a state another thread brought further than this snapshot is
        returned as it is). Rows that changed since (a higher vseq) replace their old
        copy (see the SQLite cache); rows above the last final vseq are read again and
        those not held added (see :class:`_Settling`)."""
        key = (tenant, user, state.model, dims)
        async with self._user_lock(key):
            with self._lock:
                held = self._users.get(key)
                if held is not None:
                    self._users.move_to_end(key)
            if held is None or held[0].generation != state.generation:
                cached, settling = UserVectors(dims=dims, generation=state.generation), _Settling()
            elif state.current:  # (or brought further since by another search)
                return held[0]
            else:
                cached, settling = held
            async with conn.cursor(binary=True, row_factory=psycopg.rows.tuple_row) as cur:
                await cur.execute(_NEWEST_XID)
                xid_row = await cur.fetchone()
                # rows above the last final vseq not held yet (the held ones are not sent)
                args = {
                    "tenant": tenant,
                    "user": user,
                    "dims": dims,
                    "safe": settling.safe,
                    "seen": list(settling.seen),
                    "model": state.model,
                }
                await cur.execute(_LOAD, args)
                rows = [(*r[:9], _bytes(r[9]), r[10]) for r in await cur.fetchall()]
            assert xid_row is not None  # noqa: S101 - a SELECT of a scalar returns a row
            cached = cached.extended(rows, state.max_vseq)
            vseqs = (int(r[0]) for r in rows)
            settling = settling.loaded(vseqs, int(xid_row[0]), state.max_vseq)
            with self._lock:
                self._publish(key, (cached, settling.settled(state.xmin)))
        return cached

    def _replace(
        self,
        key: _Key,
        old: tuple[UserVectors, _Settling],
        new: tuple[UserVectors, _Settling],
    ) -> None:
        """Publish ``new`` unless another search replaced ``old`` meanwhile."""
        with self._lock:
            if self._users.get(key) is old:
                self._users[key] = new
                self._rows += new[0].held_rows - old[0].held_rows

    def _user_lock(self, key: _Key) -> asyncio.Lock:
        with self._lock:
            return self._locks.setdefault(key, asyncio.Lock())

    def _publish(self, key: _Key, new: tuple[UserVectors, _Settling]) -> None:
        """Hold ``new`` as the user's newest, then drop the least recently used past the
        bound (caller holds ``self._lock``)."""
        old = self._users.pop(key, None)
        self._rows += new[0].held_rows - (old[0].held_rows if old is not None else 0)
        self._users[key] = new
        while self._rows > self.max_rows and len(self._users) > 1:
            _, (dropped, _) = self._users.popitem(last=False)
            self._rows -= dropped.held_rows


def hnsw_name(tenant: str, user: str, dims: int) -> str:
    """The name of one user's HNSW index (a hash: names are at most 63 bytes)."""
    digest = hashlib.sha256(f"{tenant}\x1f{user}".encode()).hexdigest()[:20]
    return f"vectors_hnsw_{int(dims)}_{digest}"


async def ensure_hnsw(
    conn: psycopg.AsyncConnection[Any], schema: str, dims: int, tenant: str, user: str
) -> None:
    """Create one user's HNSW index over their vectors of ``dims`` dimensions (a partial
    index: only their rows), if it is missing.

    Only users past ``exact_below`` vectors are searched through HNSW, so only they get an
    index: every other insert skips the graph update (a vector's insert took 3.3 ms with
    one shared graph, 0.55 ms without, in batches of 1,000), and a large user's searches
    walk a graph of their own rows instead of one shared by every user and filtered
    afterwards. A search names the
    tenant, user and dims as constants (custom plans), which the planner matches with the
    index's predicate."""
    await conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {} ON {}.vectors USING hnsw "
            "((embedding::vector({})) vector_ip_ops) "
            'WHERE dims = {} AND tenant = {} AND "user" = {}'
        ).format(
            sql.Identifier(hnsw_name(tenant, user, dims)),
            sql.Identifier(schema),
            sql.Literal(int(dims)),
            sql.Literal(int(dims)),
            sql.Literal(tenant),
            sql.Literal(user),
        )
    )


def exact_search(
    cache: UserVectors,
    scope: Scope,
    query: Vector,
    k: int,
    filters: Filters,
    allowed: set[str] | None,
) -> list[tuple[int, float]]:
    """Best-first ``(row, score)`` over the cached matrix after masks (and an id allow-list
    for the filters the masks cannot apply)."""
    keep = np.flatnonzero(cache.mask(scope, filters))
    if allowed is not None:
        keep = np.array([i for i in keep if cache.ids[i] in allowed], dtype=np.intp)
    if keep.size == 0:
        return []
    scores = cache.scores(keep, query)
    best = top_k(scores, k, cache.seq[keep])
    return [(int(keep[i]), float(scores[i])) for i in best]


async def hnsw_search(
    conn: psycopg.AsyncConnection[Any],
    scope: Scope,
    query: Vector,
    k: int,
    filters: Filters,
    model: str | None = None,
) -> list[Candidate]:
    """Approximate top-k through the HNSW index, re-scored with numpy; only vectors of
    ``model`` (the store's; None: every one) are candidates. The index is not partial on
    the model (one per user would need rebuilding at every migration): the model is one
    more filter, which the iterative scan keeps walking past (while a migration runs,
    about half the rows)."""
    sw, sa = scope_sql(scope, "r.")
    fw, fa = filters_sql(filters, "r.")
    dims = int(query.size)
    fetch = max(4 * k, 100)
    # A transaction of its own: the read connection is in autocommit mode, where SET LOCAL
    # would end with its own statement (and the search run with the defaults).
    async with (
        conn.transaction(),
        conn.cursor(binary=True, row_factory=psycopg.rows.dict_row) as cur,
    ):
        await cur.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        await cur.execute(f"SET LOCAL hnsw.ef_search = {min(1000, max(40, 2 * fetch))}")
        await cur.execute(
            f"SELECT r.seq, {_RCOLS}, v.embedding AS vec FROM vectors v "
            "JOIN records r ON r.seq = v.seq "
            f'WHERE v.dims = %s AND v.tenant = %s AND v."user" = %s AND {sw} AND {fw} '
            "AND (%s::text IS NULL OR v.model IS NULL OR v.model = %s::text) "
            f"ORDER BY v.embedding::vector({dims}) <#> %s::vector({dims}) LIMIT %s",
            [dims, scope.tenant, scope.user, *sa, *fa, model, model, _pgvector(query), fetch],
        )
        rows = await cur.fetchall()
    if needs_python(filters):
        from memstrata.store.sqlite.codec import decode_record

        rows = [r for r in rows if filters.matches(decode_record(r))]
    if not rows:
        return []
    matrix = np.stack([vector_array(r["vec"]) for r in rows])
    scores = dot(matrix, query)
    seqs = np.array([int(r["seq"]) for r in rows])
    order = np.lexsort((seqs, -scores))[:k]
    return [Candidate(str(rows[i]["id"]), float(scores[i])) for i in order]


def _bytes(value: Any) -> bytes | None:
    """A loaded vector as little-endian float32 bytes (None: a row of another model)."""
    return None if value is None else vector_array(value).astype("<f4").tobytes()


def _pgvector(query: Vector) -> Any:
    from pgvector import Vector as PgVector

    return PgVector(np.asarray(query, dtype=np.float32))


def vector_array(value: Any) -> Vector:
    """A pgvector value as a float32 array (the binary loader gives ``pgvector.Vector``)."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)
