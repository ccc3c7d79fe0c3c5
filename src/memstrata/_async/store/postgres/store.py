"""The PostgreSQL store: the scale-out backend, congruent with the SQLite reference.

Records, history, vectors (pgvector), the lexical index, the embedding cache and the job
queue live in one schema of one database, so any number of processes share them. Every
write method is one transaction; every query names the tenant and user (by-id calls too).
Connections come from a ``psycopg_pool`` pool; one broken by a server restart fails
its call with a :class:`StoreError` (never a partial write) and is replaced for the next.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import functools
import json
import logging
import threading
from collections import Counter
from collections.abc import (
    AsyncIterator,
    Callable,
    Collection,
    Hashable,
    Iterable,
    Mapping,
    Sequence,
)
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from memstrata._async.store import shared_sql
from memstrata._async.store.base import AsyncUnitOfWork
from memstrata._async.store.postgres import audit, dump, lexical, migrated, outbox
from memstrata._async.store.postgres.pipeline import begin_transaction
from memstrata._async.store.postgres.pipeline import sync as pipeline_sync
from memstrata._async.store.postgres.reach import RECONNECT_S, AsyncReach, fill_pool
from memstrata._async.store.postgres.schema import SCHEMA_VERSION, check_pgvector, migrate
from memstrata._async.store.postgres.vectors import (
    AsyncVectorCache,
    ensure_hnsw,
    exact_search,
    hnsw_search,
    vector_array,
)
from memstrata.aio.pg_behind import AsyncHeld, AsyncWriteBehind, Statement, background, wait_done
from memstrata.audit import AuditEvent, AuditQuery
from memstrata.bounded import RecentDict
from memstrata.errors import (
    MemstrataError,
    NotFoundError,
    StoreError,
    ValidationError,
)
from memstrata.filters import Filters
from memstrata.jobs import DONE_SWEEP_BATCH, Job, JobRevokedError, current_fence
from memstrata.records import MemoryRecord, RecordStatus, RecordType, Visibility
from memstrata.scope import Scope
from memstrata.store import counted_writes, fts5
from memstrata.store import quota_counters as qc
from memstrata.store.compaction import CompactReport
from memstrata.store.history_parts import PartSpool
from memstrata.store.key_rows import KeyRow
from memstrata.store.one_model import ModelPin
from memstrata.store.past_versions import check_finished
from memstrata.store.postgres.connection import (
    PgOptions,
    connect_failure,
    driver,
    parse_url,
    timed_out,
    transient,
    translate,
)
from memstrata.store.postgres.where import (
    LIVE_SQL,
    Walk,
    filters_sql,
    key_sql,
    needs_python,
    records_from,
    scope_sql,
)
from memstrata.store.sqlite.codec import (
    COLUMNS,
    VIEW_COLUMNS,
    decode_record,
    decode_vector,
    decode_view,
    encode_record,
    encode_time,
    encode_vector,
    scope_token,
)
from memstrata.store.sqlite.history import (
    COUNTERS,
    encode_delta,
    parts_of,
    reverse_delta,
    versions_by_id,
)
from memstrata.store.sqlite.vectors import PURGE_EPOCH, PURGES
from memstrata.store.types import (
    CacheEntry,
    Candidate,
    KeyVersions,
    ListQuery,
    PurgeReport,
    RecordDump,
    RecordView,
    RecordWrite,
    StoredVector,
    StoreStats,
    Vector,
    check_replace,
    history_of,
    kept_records,
    name_field,
    name_type,
    readable_versions,
    reembedded,
    seqs_in_order,
    user_ids,
)
from memstrata.store.vector_bound import VECTOR_CACHE_ROWS, check_vector_cache_rows
from memstrata.store.version_numbers import readable_count
from memstrata.validation import MAX_COUNT, check_version, counted

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

__all__ = ["AsyncPostgresStore"]

_log = logging.getLogger("memstrata.store.postgres")

_QCOLS = [f'"{c}"' if c == "user" else c for c in COLUMNS]
_COLS = ", ".join(_QCOLS)
_ROW = "seq, " + _COLS  # what reads fetch: never lex_tokens (an array psycopg would parse)
_ORDERED_PAGE = "ORDER BY observed_at, seq LIMIT %s"
# A write transaction opened inside another on the same thread (task) would be a second
# connection and a transaction of its own: not undone with the first, and waiting forever for
# a row the first wrote (two connections: a deadlock PostgreSQL cannot see).
_NESTED_WRITE = (
    "a write transaction was opened while this thread (task) already has one open on this "
    "store; on PostgreSQL it would be a second connection and a separate transaction (not "
    "undone with the first, and waiting forever for a row the first wrote): make the write "
    "through the open transaction (its unit of work), or after it ends"
)
_USERS_HELD = 100_000  # per-user facts a process keeps (vector counts, indexes ensured)
ANALYZE_IMPORT_AFTER = 500  # rows a transaction inserted before its history's ANALYZE
# connect_timeout of a connection opened outside the pool (the first one, the LISTEN one):
# a server that drops packets is reported in seconds, not after the OS's TCP timeout.
CONNECT_TIMEOUT_S = 10
_COPY_RECORDS = f"COPY records (seq, {_COLS}, lex_tokens, lex_len) FROM STDIN"
_COPY_VECTORS = (
    'COPY vectors (seq, tenant, "user", model, dims, embedding, own) FROM STDIN (FORMAT BINARY)'
)
# The cache entries a write transaction carries and has not written yet (``_tx``).
_CARRIED: ContextVar[dict[tuple[str, str, str], bytes] | None] = ContextVar(
    "memstrata_pg_carried", default=None
)
# Batches of fewer records than this are INSERTs in pipeline mode, larger ones COPY.
_COPY_FROM = 64
_INSERT_RECORDS = (
    f"INSERT INTO records (seq, {_COLS}, lex_tokens, lex_len) OVERRIDING SYSTEM VALUE "
    f"VALUES ({', '.join(['%s'] * (len(_QCOLS) + 3))})"
)
_INSERT_VECTOR = (
    'INSERT INTO vectors (seq, tenant, "user", model, dims, embedding, own) '
    "VALUES (%s, %s, %s, %s, %s, %s, %s)"
)
_CLASH = 'SELECT id FROM records WHERE tenant = %s AND "user" = %s AND id = ANY(%s) LIMIT 1'
# Counters are the store's, not the writer's: a replace keeps the stored ones (as SQLite
# does). It wrote the writer's copy, which lost the accesses counted since that copy was
# read, and counted twice a touch the copy's read had added while it waited (_fresh).
_UPDATE_AT = tuple(i for i, c in enumerate(COLUMNS) if i > 0 and c not in COUNTERS)
_UPDATE = (
    f"UPDATE records SET {', '.join(_QCOLS[i] + ' = %s' for i in _UPDATE_AT)}, "
    "lex_tokens = %s, lex_len = %s WHERE seq = %s"
)
# History is reverse deltas over the SQLite row form (sqlite/history.py), as in SQLite.
_ARCHIVE = "INSERT INTO record_history (seq, version, delta) VALUES (%s, %s, %s)"
_BUMP = (
    "INSERT INTO scope_generation (scope_tok, generation) VALUES (%s, 1) "
    "ON CONFLICT (scope_tok) DO UPDATE SET generation = scope_generation.generation + 1"
)
# An updated vector takes a new vseq, so the vector cache loads that row again (vectors.py).
# A passage vector is kept once (``own``, as SQLite keeps it): when the cache holds exactly
# the vector written for a record's text, the vector row is marked ``own`` and
# ``cached_vectors`` finds the vector through the record. An add's entry (its text was just
# embedded) is carried by the add's transaction, which takes it over and never writes it
# (``_take_carried``); an entry stored before is asked for here and dropped (``_DROP_MOVED``).
# Decided as the row is written (no second version of it to vacuum), and sent without
# awaiting an answer (pipeline mode: the add's one round trip).
_OWN = (
    "EXISTS (SELECT 1 FROM embedding_cache WHERE scope_tok = %s AND model_id = %s "
    "AND key = %s AND vector = %s)"
)
_INSERT_OWN_VECTOR = (
    'INSERT INTO vectors (seq, tenant, "user", model, dims, embedding, own) '
    f"VALUES (%s, %s, %s, %s, %s, %s, %s OR {_OWN})"
)
_UPSERT_OWN_VECTOR = (
    'INSERT INTO vectors (seq, tenant, "user", model, dims, embedding, own) '
    f"VALUES (%s, %s, %s, %s, %s, %s, %s OR {_OWN}) ON CONFLICT (seq) DO UPDATE SET "
    "model = excluded.model, dims = excluded.dims, embedding = excluded.embedding, "
    "vseq = DEFAULT, own = excluded.own"
)
_REEMBEDDED_VECTOR = (  # set_vectors: the text's passage vector, the cache's entry too
    'INSERT INTO vectors (seq, tenant, "user", model, dims, embedding, own) '
    "VALUES (%s, %s, %s, %s, %s, %s, true) ON CONFLICT (seq) DO UPDATE SET "
    "model = excluded.model, dims = excluded.dims, embedding = excluded.embedding, "
    "vseq = DEFAULT, own = true"
)
_OWNED_KEYS = (  # a COPY cannot ask: the bulk path asks first
    "SELECT e.scope_tok, e.model_id, e.key FROM embedding_cache e JOIN unnest(%s::text[], "
    "%s::text[], %s::text[], %s::bytea[]) AS x (tok, model, key, blob) ON e.scope_tok = "
    "x.tok AND e.model_id = x.model AND e.key = x.key AND e.vector = x.blob"
)
_DROP_MOVED = (
    "DELETE FROM embedding_cache e USING unnest(%s::text[], %s::text[], %s::text[], "
    "%s::bytea[]) AS x (tok, model, key, blob) WHERE e.scope_tok = x.tok AND e.model_id = "
    "x.model AND e.key = x.key AND e.vector = x.blob"
)
# Passage vectors kept in their record, by text: the first record's (as SQLite reads them).
# Entries and such vectors in one round trip; an entry wins over a record's vector.
_CACHED = (
    "SELECT key, vector, NULL::vector AS embedding FROM embedding_cache WHERE scope_tok = %s "
    "AND model_id = %s AND key = ANY(%s) UNION ALL (SELECT DISTINCT ON (r.content_hash) "
    "r.content_hash, NULL, v.embedding FROM records r JOIN vectors v ON v.seq = r.seq WHERE "
    'r.tenant = %s AND r."user" = %s AND r.content_hash = ANY(%s) AND v.own AND v.model = %s '
    "ORDER BY r.content_hash, r.seq)"
)
# Embedding-cache entries, many in one statement (an add_messages batch caches 1,000; one
# INSERT per entry cost 1,000 executions).
_UPSERT_CACHE = (
    "INSERT INTO embedding_cache (scope_tok, model_id, key, dims, vector) "
    "SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::int4[], %s::bytea[]) "
    "ON CONFLICT (scope_tok, model_id, key) "
    "DO UPDATE SET dims = excluded.dims, vector = excluded.vector"
)
# A record whose masked columns changed: its vector row is loaded again by the cache.
_TOUCH_VECTOR = "UPDATE vectors SET vseq = DEFAULT WHERE seq = %s"
_MASKED = ("type", "agent", "session", "visibility", "status", "superseded_by", "importance")


def _masked_of(r: MemoryRecord) -> tuple[object, ...]:
    return (
        r.type.value,
        r.agent,
        r.session,
        r.access.visibility.value,
        r.status.value,
        r.superseded_by,
        float(r.importance),
    )


def _no_nul(r: MemoryRecord) -> None:
    for name, text in (("content", r.content.raw), ("summary", r.content.summary or "")):
        if "\x00" in text:
            raise ValidationError(
                f"record {r.id!r}: the {name} holds a NUL character, which PostgreSQL cannot "
                "store in text; remove it (it carries no meaning in text) and write again"
            )


class AsyncPostgresStore:
    """A :class:`~memstrata.store.base.Store` in a PostgreSQL database with pgvector."""

    # PostgreSQL text cannot hold a NUL character (a migration asks for --replace-nul).
    stores_nul = False
    # Its audit log is a table of its database: a unit of work appends events in its
    # transaction (_PgUnitOfWork.append_audit), with the writes they record.
    audit_in_transactions = True

    def __init__(self, url: str, *, vector_cache_rows: int = VECTOR_CACHE_ROWS) -> None:
        vector_cache_rows = check_vector_cache_rows(vector_cache_rows)
        self.url = url
        self.options: PgOptions = parse_url(url)
        driver()
        self._where = self.options.where
        self._schema_key = migrated.schema_key(self.options.schema)  # (migrated.py)
        self._versioned = f"{self._where} (schema {self.options.schema!r})"
        # a caller's unlimited quota counts go with its next write (counted_writes.py)
        self.counts_home: counted_writes.Home | None = counted_writes.Home()
        self._pool: AsyncConnectionPool[Any]  # set by _open
        self._reach = AsyncReach(self.options.conninfo, self._where)  # fails fast while down
        # searches keep to the store's embedding model (one_model.ModelPin)
        self._vectors = AsyncVectorCache(vector_cache_rows, ModelPin(self._where))
        self._inserted = 0  # rows inserted since this process last refreshed statistics
        self._analyzed_at = 0
        self._stats_lock = threading.Lock()  # never held across an await
        # refreshing statistics (_grew): a thread (sync store) or a task (async store)
        self._stats_thread: asyncio.Task[None] | None = None  # async-only
        # sync: self._stats_thread: threading.Thread | None = None
        self._stats_again = False
        self._closing = False
        self._hnsw: set[int] = set()  # dims whose large users' indexes were ensured (dump.py)
        # users known to have an index (the most recent: a dropped one is ensured again)
        self._hnsw_users: RecentDict[tuple[str, str, int], None] = RecentDict(_USERS_HELD)
        self._hnsw_lock = asyncio.Lock()
        # Per (tenant, user, dims): the vector count last read and how many this process has
        # written since; counted again once the user may have passed exact_below (at most
        # every 1,000 vectors: other processes write too, and a search builds a missing index).
        # (Bounded: a user dropped is counted again at their next write.)
        self._counted: RecentDict[tuple[str, str, int], tuple[int, int]] = RecentDict(_USERS_HELD)
        self._listener: Any = None
        # a search's counter/cache writes: behind it, on a thread (sync store) or as tasks
        # of the loop (async store: memstrata/aio/pg_behind.py)
        self._behind = AsyncWriteBehind(f"memstrata-{self.options.schema}", self._relaxed)
        self._cache_lock = threading.Lock()  # never held across an await
        self._cache_pending: dict[tuple[str, str, str], bytes] = {}  # being written behind
        # Passage entries (an add's text) no transaction has taken yet: the next write
        # transaction carries them (cache_vectors).
        self._deferred: dict[tuple[str, str, str], bytes] = {}
        # Connections this thread (async: this task) holds, so it never waits for the writes
        # behind a search while holding one.
        self._held = AsyncHeld()
        self._writing = AsyncHeld()  # write transactions this thread (task) has open
        # Touches behind the searches that no transaction has taken yet, by row: the time of
        # each. The database cannot hold them yet, so a read of such a row adds them to what
        # it read instead of waiting for them (_fresh).
        self._touch_lock = threading.Lock()  # never held across an await
        self._queued: dict[tuple[str, str, str], builtins.list[str]] = {}
        self._taken = 0  # touches taken by a transaction so far
        self._in_flight: Counter[tuple[str, str, str]] = Counter()  # taken, not yet done
        # sync: self._open()

    async def open(self) -> AsyncPostgresStore:  # async-only
        """Connect, migrate, open the pool (the sync store: in its constructor)."""  # async-only
        await self._open()  # async-only
        return self  # async-only

    async def _open(self) -> None:
        psycopg = driver()
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool

        from memstrata.store.postgres.coded import AsyncCodedConnection

        where = self._where
        try:
            first = await AsyncCodedConnection.connect(
                self.options.conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S
            )
        except (psycopg.Error, OSError) as exc:  # OSError: EMFILE (connect_failure)
            raise connect_failure(exc, where) from None
        setting: str | None = None  # statement_timeout, named if it cancels the opening
        doing = "the check of its statement_timeout"
        try:
            async with first:
                row = await (await first.execute("SHOW statement_timeout")).fetchone()
                setting, doing = str(row[0]) if row else None, "the schema's check or upgrade"
                await check_pgvector(first, where)
                await migrate(first, self.options.schema, where)
        except MemstrataError:
            raise
        except psycopg.Error as exc:
            raise (timed_out(exc, where, setting, doing) or translate(exc, where)) from exc

        schema = self.options.schema
        cancelled: list[BaseException] = []  # a set-up cancelled by statement_timeout

        async def configure(conn: Any) -> None:
            from pgvector.psycopg import register_vector_async

            try:
                await conn.execute(f'SET search_path TO "{schema}", public')
                # Plans depend on the query's arrays (terms, ids): a generic plan, which a
                # prepared statement switches to after five runs, was measured 8x slower.
                await conn.execute("SET plan_cache_mode = force_custom_plan")
                await register_vector_async(conn)
            except psycopg.errors.QueryCanceled as exc:
                if setting != "0":  # by statement_timeout, not an operator's cancel
                    cancelled.append(exc)  # fill_pool raises it (the pool would retry it)
                raise

        self._pool = AsyncConnectionPool(
            self.options.conninfo,
            min_size=self.options.pool_min,
            max_size=self.options.pool_max,
            open=False,
            configure=configure,
            name=f"memstrata-{schema}",
            kwargs={"autocommit": True, "row_factory": dict_row},
            reconnect_timeout=RECONNECT_S,  # reach.py: a server back is used within seconds
            connection_class=AsyncCodedConnection,  # a refusal's SQLSTATE (coded.py)
        )
        try:
            await fill_pool(self._pool, cancelled, 15)
        except BaseException as exc:
            await self._pool.close()  # cancelled too: no pool task or connection left open
            if not isinstance(exc, Exception):
                raise
            said = timed_out(exc, where, setting, "a pool connection's set-up")
            raise said or StoreError(
                f"cannot open a connection pool to {where}: {exc}", retryable=transient(exc)
            ) from None

    def __repr__(self) -> str:
        return f"AsyncPostgresStore({self.options.where}, schema={self.options.schema!r})"

    async def aclose(self) -> None:
        with self._stats_lock:
            self._closing = True
        await self.wait_for_statistics()
        await self._flush_deferred()
        await self._behind.aclose()
        self._vectors.clear()
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
        await self._pool.close()

    # --- transactions --------------------------------------------------------------------
    @asynccontextmanager
    async def _tx(self, *, pipeline: bool = False) -> AsyncIterator[Any]:
        """One write transaction (READ COMMITTED; rows read before a write are locked).

        ``pipeline``: statements are sent without waiting for each answer (psycopg's
        pipeline mode): ``BEGIN`` and the statements go in one round trip, the ``COMMIT`` in
        a second one, sent once every statement succeeded (a read waits as usual). Not
        ``conn.transaction()``, which in a pipeline syncs after ``BEGIN``, after the
        statements and after ``COMMIT``, before the pipeline's own last sync: four round
        trips for a transaction of one statement (``tests/durable24/``)."""
        import psycopg

        if self._writing.n and not pipeline:
            raise StoreError(_NESTED_WRITE)
        # A job's write first checks (and locks) its claim inside the transaction: a purge
        # deleted or took back the user's jobs before, or waits for this one (jobs.Fence).
        # Not the relaxed writes behind searches (pipeline): counters and query entries.
        fence = None if pipeline else current_fence()
        carried = self._take_deferred() if not self._held.n else {}
        # the job's own cache entries, written only under its checked claim
        mine = fence.carried.pop(id(self), {}) if fence is not None else {}
        # Written last: a record this transaction stores with an entry's very vector takes
        # the entry over (_insert), so the entry is never written; a purge here forgets the
        # purged user's entries (_forget_carried).
        unowned = {**carried, **mine}
        carrying = _CARRIED.set(unowned) if not self._held.n else None
        # the caller's counts (counted_writes.py): claimed and added last, committed with
        # this write (not the relaxed writes behind searches)
        counted, xid = counted_writes.NOTHING, None
        committing = False
        try:
            await self._settle()
            async with (
                self._reach.connection(self._pool) as conn,
                conn.pipeline() if pipeline else contextlib.nullcontext() as batch,
                self._holding(),
            ):
                # The schema's version is checked in every write transaction at no round
                # trip of its own (migrated.py): with BEGIN (and a job's claim check).
                if batch is None:
                    tx, held, version = await self._begin(conn, fence)
                else:  # BEGIN and the check go with the statements (pipeline.py)
                    tx, held = await begin_transaction(conn), True
                    await conn.execute(migrated.HOLD, (self._schema_key,))
                    version = await conn.execute(migrated.VERSION)
                try:
                    if batch is None:
                        await migrated.check(version, SCHEMA_VERSION, self._versioned)
                    if fence is not None and not held:
                        raise fence.refused()
                    self._writing.n += 1
                    try:
                        yield conn
                    finally:
                        self._writing.n -= 1
                    if unowned:
                        await conn.execute(_UPSERT_CACHE, _cache_columns(unowned))
                    if not pipeline:
                        counted = counted_writes.claim(self.counts_home)
                    if counted:
                        takes = counted_writes.merged(counted.mine)
                        xid = await shared_sql.count_sql(conn, takes, ph="%s", lock=True)
                    if batch is not None:  # a failed statement raises here, before COMMIT
                        await pipeline_sync(conn, batch)
                        await migrated.check(version, SCHEMA_VERSION, self._versioned)
                except BaseException as exc:
                    await tx.__aexit__(type(exc), exc, exc.__traceback__)
                    raise
                committing = True
                await tx.__aexit__(None, None, None)
        except BaseException as exc:
            # a COMMIT whose outcome is unknown: asked of the server (session 34)
            landed = committing and bool(counted) and await self._committed(xid)
            counted_writes.settle(counted, committed=landed)
            self._defer(carried)  # not written: the next transaction carries them
            if fence is not None and mine and not isinstance(exc, JobRevokedError):
                # back to the job, for its next write (refused: the claim and they are gone)
                fence.carried[id(self)] = {**mine, **fence.carried.get(id(self), {})}
            if isinstance(exc, psycopg.Error):
                raise translate(exc, self._where, committing=committing) from exc
            raise
        finally:
            if carrying is not None:
                _CARRIED.reset(carrying)
        counted_writes.settle(counted, committed=True)
        self._cached(carried)

    async def _committed(self, xid: int | None) -> bool:
        """Whether transaction ``xid`` committed, asked on another connection after its
        ``COMMIT`` raised (the connection lost while committing): its quota counts are
        then written, else handed back to the caller's next write. False when the server
        cannot tell (or cannot be reached): counted twice at worst, never lost."""
        if xid is None:
            return False
        try:
            async with self._read() as c:
                asked = await c.execute("SELECT txid_status(%s) AS status", (xid,))
                row = await asked.fetchone()
        except Exception:  # the server is still out of reach: keep the count pending
            return False
        return row is not None and row["status"] == "committed"

    async def _begin(self, conn: Any, fence: Any) -> tuple[Any, bool, Any]:
        """Start a write transaction on ``conn`` in one round trip: ``BEGIN``, the schema
        check's lock and read (migrated.py) and, for a job's write (``fence``), the check
        that its claim stands, its row locked until the transaction ends
        (``outbox.HOLDS_CLAIM``, :class:`~memstrata.jobs.Fence`). The open transaction,
        whether the claim stands, and the version's cursor. If this raises, nothing is
        left open."""
        tx = None
        try:
            async with conn.pipeline():
                tx = await begin_transaction(conn)
                await conn.execute(migrated.HOLD, (self._schema_key,))
                version = await conn.execute(migrated.VERSION)
                claim = (
                    await conn.execute(outbox.HOLDS_CLAIM, (fence.job_id, fence.lease_token))
                    if fence is not None
                    else None
                )
            return tx, claim is None or await claim.fetchone() is not None, version
        except BaseException as exc:
            if tx is not None:
                await tx.__aexit__(type(exc), exc, exc.__traceback__)
            raise

    async def _settle(self) -> None:
        """Before a thread takes its first connection: wait for the writes made behind
        earlier searches (behind.py). Not while it holds one: its open transaction may
        hold a row lock such a write waits for."""
        if not self._held.n:
            await self._flush_deferred()
            await self._behind.settle()

    @asynccontextmanager
    async def _holding(self) -> AsyncIterator[None]:
        self._held.n = self._held.n + 1
        try:
            yield
        finally:
            self._held.n -= 1

    @asynccontextmanager
    async def _relaxed(self) -> AsyncIterator[Any]:
        """A write transaction whose commit does not wait for the WAL flush: for counters
        and cache entries only, which a server crash may lose (the Counters contract
        allows it) but which must not cost every search a disk flush."""
        async with self._tx(pipeline=True) as conn:
            await conn.execute("SET LOCAL synchronous_commit TO OFF")
            yield conn

    @asynccontextmanager
    async def _autocommit(self, wait: bool | Collection[Hashable] = True) -> AsyncIterator[Any]:
        """A connection for reads: each statement sees the latest committed state, with no
        BEGIN/COMMIT round trips (a search is a few statements; none of them writes).

        ``wait``: first wait for every write made behind a search (``True``), for none
        (``False``: the read sees no counter and no cache entry), or only for those that
        change one of these rows (``(tenant, user, id)`` keys; behind.py)."""
        import psycopg

        if wait is True:
            await self._settle()
        elif wait and not self._held.n:
            await self._behind.settle_rows(wait)
        try:
            async with self._reach.connection(self._pool) as conn, self._holding():
                yield conn
        except psycopg.Error as exc:
            raise translate(exc, self._where) from exc

    def _write(self) -> Any:
        return self._tx()

    def _read(self) -> Any:
        return self._autocommit()

    @asynccontextmanager
    async def _snapshot(self) -> AsyncIterator[Any]:
        """One read-only REPEATABLE READ transaction: every statement sees the same
        snapshot. A dump reads its pages in it, so a copy is one moment of the store: no
        row committed out of ``seq`` order is skipped between two pages, and a record's
        row, vector, counters and history always agree."""
        async with self._read() as c, c.transaction():
            await c.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield c

    # --- audit log (memstrata.audit.AuditStore) ----------------------------------------------
    async def append_audit(self, events: Sequence[AuditEvent]) -> None:
        async with self._write() as c:
            await audit.append(c, events)

    async def query_audit(self, tenant: str, query: AuditQuery) -> builtins.list[AuditEvent]:
        async with self._read() as c:
            return await audit.query(c, tenant, query)

    async def redact_subject(self, tenant: str, user: str) -> int:
        async with self._write() as c:
            return await audit.redact_subject(c, tenant, user)

    # --- metadata ----------------------------------------------------------------------------
    async def get_meta(self, key: str) -> str | None:
        async with self._read() as c:
            row = await (
                await c.execute("SELECT value FROM meta WHERE key = %s", (key,))
            ).fetchone()
        value = None if row is None else str(row["value"])
        self._vectors.model.saw(key, value, read=True)
        return value

    async def set_meta(self, key: str, value: str) -> None:
        async with self._write() as c:
            await c.execute(
                "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) "
                "DO UPDATE SET value = excluded.value",
                (key, value),
            )
        self._vectors.model.saw(key, value)

    # --- quota counters (memstrata.store.quota_counters; row locks make them atomic) -
    async def take_counters(self, takes: Sequence[qc.Take]) -> qc.Refusal | None:
        async with self._write() as c:
            return await shared_sql.take_sql(c, takes, ph="%s", lock=True)

    async def add_counters(self, takes: Sequence[qc.Take]) -> None:
        async with self._write() as c:
            await shared_sql.add_sql(c, takes, ph="%s", lock=True)

    async def counter_values(self, keys: Sequence[str]) -> dict[str, int]:
        async with self._read() as c:
            return await shared_sql.values_sql(c, keys, ph="%s")

    async def forget_counters(self, keys: Sequence[str]) -> None:
        async with self._write() as c:
            await shared_sql.forget_sql(c, keys, ph="%s")

    async def sweep_counters(self, now_us: int, limit: int = qc.SWEEP_BATCH) -> int:
        async with self._write() as c:
            return await shared_sql.sweep_sql(c, now_us, limit, ph="%s")

    async def lease(self, key: str, token: str, now_ms: int, until_ms: int) -> bool:
        async with self._write() as c:
            return await shared_sql.lease_sql(c, key, token, now_ms, until_ms, ph="%s", lock=True)

    async def release(self, key: str, token: str) -> None:
        async with self._write() as c:
            await shared_sql.release_sql(c, key, token, ph="%s", lock=True)

    async def count_tenant_records(self, tenant: str) -> int:
        async with self._read() as c:
            return await shared_sql.tenant_records_sql(c, tenant, ph="%s")

    # --- helpers -------------------------------------------------------------------------------
    @staticmethod
    async def _visible(
        c: Any, scope: Scope, ids: Sequence[str], columns: str = _ROW, lock: bool = False
    ) -> list[dict[str, Any]]:
        where, args = scope_sql(scope)
        unique = sorted(dict.fromkeys(ids))
        if not unique:
            return []
        tail = " ORDER BY id FOR UPDATE" if lock else ""
        return list(
            await (
                await c.execute(
                    f"SELECT {columns} FROM records WHERE id = ANY(%s) AND {where}{tail}",
                    [unique, *args],
                )
            ).fetchall()
        )

    @staticmethod
    async def _bump(c: Any, tenant: str, user: str) -> None:
        await c.execute(_BUMP, (scope_token(tenant, user),))

    def _vector_value(self, r: MemoryRecord, vector: Vector) -> tuple[int, Any]:
        from pgvector import Vector as PgVector

        blob = encode_vector(vector)  # validates shape and finiteness
        dims = len(blob) // 4
        if r.embedding_dims is not None and dims != r.embedding_dims:
            raise ValidationError(
                f"record {r.id!r} says embedding_dims={r.embedding_dims} but its vector has "
                f"{dims} dimensions; embed it with the store's model"
            )
        return dims, PgVector(np.frombuffer(blob, dtype="<f4"))

    async def _ensure_hnsw(self, dims: int) -> None:
        """Ensure the HNSW index of every user with at least ``exact_below`` vectors of
        ``dims`` (after a bulk load, which defers them)."""
        if dims > 2000:  # pgvector's HNSW indexes up to 2,000 dims
            return
        async with self._read() as c:
            big = await (
                await c.execute(
                    'SELECT tenant, "user" FROM vectors WHERE dims = %s '
                    'GROUP BY tenant, "user" HAVING count(*) >= %s',
                    (dims, self.options.exact_below),
                )
            ).fetchall()
        for row in big:
            await self._ensure_user_hnsw(row["tenant"], row["user"], dims)
        self._hnsw.add(dims)

    async def _ensure_user_hnsw(self, tenant: str, user: str, dims: int) -> None:
        """Build one user's HNSW index if it is missing (once per process and user)."""
        key = (tenant, user, dims)
        if key in self._hnsw_users or dims > 2000:
            return
        async with self._hnsw_lock:
            if key in self._hnsw_users:
                return
            async with self._write() as c:
                await c.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 11))",
                    (f"hnsw:{self.options.schema}:{dims}:{tenant}\x1f{user}",),
                )
                await ensure_hnsw(c, self.options.schema, dims, tenant, user)
            self._hnsw_users[key] = None

    async def _check_large(self, added: Mapping[tuple[str, str, int], int]) -> None:
        """After vectors were written: a user who now has ``exact_below`` or more (counted
        on their first write in this process, then whenever the writes since could have
        taken them past it) gets an HNSW index."""
        for (tenant, user, dims), n in sorted(added.items()):
            key = (tenant, user, dims)
            if key in self._hnsw_users:
                continue
            seen = self._counted.get(key)
            if seen is not None:
                count, since = seen[0], seen[1] + n
                if since < min(1000, self.options.exact_below - count):
                    self._counted[key] = (count, since)
                    continue
            async with self._read() as c:
                count = int(
                    (
                        await (
                            await c.execute(
                                "SELECT count(*) AS n FROM vectors WHERE tenant = %s "
                                'AND "user" = %s AND dims = %s',
                                (tenant, user, dims),
                            )
                        ).fetchone()
                    )["n"]
                )
            self._counted[key] = (count, 0)
            if count >= self.options.exact_below:
                await self._ensure_user_hnsw(tenant, user, dims)

    # --- unit of work ---------------------------------------------------------------------------
    def transaction(self) -> AbstractAsyncContextManager[AsyncUnitOfWork]:
        return self._unit_of_work()

    @asynccontextmanager
    async def _unit_of_work(self) -> AsyncIterator[AsyncUnitOfWork]:
        async with self._write() as c:
            uow = _PgUnitOfWork(self, c)
            yield uow
            check_finished(uow._pending)  # a history given in parts: every part came
        self._grew(uow.inserted)
        await self._check_large(uow.vectors)

    # --- records -------------------------------------------------------------------------------
    async def insert(self, writes: Sequence[RecordWrite]) -> None:
        prepared = self._prepare(writes)
        async with self._write() as c:
            await self._insert(c, prepared)
        self._grew(len(prepared))
        await self._check_large(_vector_counts(prepared))

    def _grew(self, rows: int) -> None:
        """Refresh the planner's statistics when this process has grown the tables a lot.

        Autovacuum does it within a minute or so; until then a table filled in one go still
        has the statistics of an empty one, and the planner picks a nested loop over a
        user's records for every lexical hit (measured 85 ms instead of 3 ms per search).
        The postings are vacuumed too: a lexical search reads them by an index-only scan,
        which visits the heap for every posting on a page not yet marked all-visible.
        ``SKIP_LOCKED``: another process doing the same is enough.

        On a thread of its own: the write that triggered it does not wait (at 10k messages
        it took 5 refreshes, ~7% of the ingest time, on the caller's thread); one refresh
        at a time, and one more if more rows came meanwhile.
        """
        with self._stats_lock:
            self._inserted += rows
            if self._inserted < max(500, self._analyzed_at // 2):
                return
            self._analyzed_at += self._inserted
            self._inserted = 0
            if self._stats_thread is not None:
                self._stats_again = True
                return
            self._stats_thread = background(self._refresh_statistics, "memstrata-pg-analyze")

    async def _refresh_statistics(self) -> None:
        while True:
            try:
                async with self._reach.connection(self._pool) as c:
                    await c.execute("VACUUM (ANALYZE, SKIP_LOCKED) lex_postings")
                    await c.execute("ANALYZE (SKIP_LOCKED) records, vectors")
            except Exception as exc:  # only planner statistics: logged, the write returned
                _log.warning("memstrata: refreshing PostgreSQL statistics failed: %s", exc)
            with self._stats_lock:
                if not self._stats_again or self._closing:
                    self._stats_thread = None
                    return
                self._stats_again = False

    async def wait_for_statistics(self) -> None:
        """Wait for a statistics refresh under way (tests, loaders before measuring)."""
        with self._stats_lock:
            thread = self._stats_thread
        if thread is not None:
            await wait_done(thread)

    async def append_turns(self, writes: Sequence[RecordWrite]) -> None:
        _check_turns(writes)
        await self.insert(writes)

    def _prepare(self, writes: Sequence[RecordWrite]) -> list[_Prepared]:
        """Validate and encode everything before a transaction opens (all or none)."""
        out: list[_Prepared] = []
        seen: set[tuple[str, str, str]] = set()
        for w in writes:
            r = w.record
            key = (r.tenant, r.user, r.id)
            if key in seen:
                raise ValidationError(
                    f"record id {r.id!r} exists already (twice in this batch); nothing was "
                    "written: give each record its own id (new_id())"
                )
            seen.add(key)
            _no_nul(r)
            vec = self._vector_value(r, w.vector) if w.vector is not None else None
            doc = fts5.document_tokens(w.terms)
            blob = encode_vector(w.vector) if w.vector is not None else None
            out.append(_Prepared(w, (*encode_record(r), doc, len(doc) + 1), doc, vec, blob))
        return out

    async def _insert(self, c: Any, prepared: Sequence[_Prepared], *, own: bool = True) -> None:
        """Insert the records with their vectors and postings. A clash with a stored id
        names it (checked first, with the new ``seq`` values in the same round trip).

        ``own``: a vector takes over its text's cache entry when the two are the same
        (``_OWN``). A load (``memstrata migrate``) copies both as they are, so a resumed
        copy finds the entries it loaded where it left them.

        A batch of fewer than ``_COPY_FROM`` records (an add, a few turns) is plain
        ``INSERT`` statements sent in pipeline mode: one round trip for all of them. A
        larger one (bulk loads: 1M rows) uses ``COPY``, which pipeline mode cannot send."""
        import psycopg

        if not prepared:
            return
        seqs = await self._clash_and_seqs(c, prepared)
        docs = []
        vectors: list[tuple[Any, ...]] = []  # the row's values, own last
        keys = []  # the cache entry each vector row may take over (_OWN)
        cached = []  # those of them not carried by this transaction: maybe stored
        for seq, p in zip(seqs, prepared, strict=True):
            r = p.write.record
            tok = scope_token(r.tenant, r.user)
            docs.append((seq, r.tenant, tok, p.doc))
            if p.vector is not None:
                key = (tok, r.embedding_model, r.content_hash)
                mine = own and _take_carried(key, p.blob)
                vectors.append((seq, r.tenant, r.user, r.embedding_model, *p.vector, mine))
                keys.append((*key, p.blob))
                if own and not mine:
                    cached.append((*key, p.blob))
        bulk = len(prepared) >= _COPY_FROM
        try:
            async with contextlib.nullcontext() if bulk else c.pipeline():
                if bulk:
                    owned = await _owned(c, cached)
                    vectors = [
                        (*v[:-1], v[-1] or k[:3] in owned)
                        for v, k in zip(vectors, keys, strict=True)
                    ]
                    await self._copy_rows(c, seqs, prepared, vectors)
                else:
                    async with c.cursor() as cur:
                        await cur.executemany(
                            _INSERT_RECORDS,
                            [(seq, *p.values) for seq, p in zip(seqs, prepared, strict=True)],
                        )
                        if cached:  # some entry may be stored already: ask (_OWN)
                            await cur.executemany(
                                _INSERT_OWN_VECTOR,
                                [(*v, *k) for v, k in zip(vectors, keys, strict=True)],
                            )
                        elif vectors:
                            await cur.executemany(_INSERT_VECTOR, vectors)
                if cached:  # in key order, as every writer takes cache rows (deadlocks)
                    await c.execute(_DROP_MOVED, _columns(sorted(cached, key=_entry_order)))
                # new seqs have no public doc yet: only public records are looked at
                await lexical.index(c, docs, keep_public=False)
                await lexical.index_public(
                    c,
                    [
                        seq
                        for seq, p in zip(seqs, prepared, strict=True)
                        if p.write.record.access.visibility is Visibility.PUBLIC
                    ],
                )
        except psycopg.errors.UniqueViolation:
            raise ValidationError(
                "a record id of this batch was inserted by another writer at the same time; "
                "nothing was written: use replace() to update it"
            ) from None

    @staticmethod
    async def _clash_and_seqs(c: Any, prepared: Sequence[_Prepared]) -> builtins.list[int]:
        """Raise if a record id of ``prepared`` is stored already for its user; else the
        ``seq`` values of the new rows, taken in order (so ties still fall to insertion
        order). The last user's check and the seqs are one statement."""
        by_user: dict[tuple[str, str], list[str]] = {}
        for p in prepared:
            by_user.setdefault((p.write.record.tenant, p.write.record.user), []).append(
                p.write.record.id
            )
        users = sorted(by_user.items())
        for (tenant, user), ids in users[:-1]:
            clash = await (await c.execute(_CLASH, (tenant, user, ids))).fetchone()
            _no_clash(clash["id"] if clash is not None else None)
        (tenant, user), ids = users[-1]
        row = await (
            await c.execute(
                f"SELECT ({_CLASH}) AS clash, ARRAY(SELECT nextval("
                "pg_get_serial_sequence('records', 'seq')) FROM generate_series(1, %s)) AS seqs",
                (tenant, user, ids, len(prepared)),
            )
        ).fetchone()
        _no_clash(row["clash"])
        return sorted(int(s) for s in row["seqs"])

    @staticmethod
    async def _copy_rows(
        c: Any,
        seqs: Sequence[int],
        prepared: Sequence[_Prepared],
        vectors: Sequence[tuple[Any, ...]],
    ) -> None:
        """The records and vectors of a large batch, by ``COPY`` (COPY writes an identity
        column's given values)."""
        async with c.cursor() as cur, cur.copy(_COPY_RECORDS) as copy:
            for seq, p in zip(seqs, prepared, strict=True):
                await copy.write_row((seq, *p.values))
        if vectors:
            async with c.cursor() as cur, cur.copy(_COPY_VECTORS) as copy:
                copy.set_types(["int8", "text", "text", "text", "int4", "vector", "bool"])
                for row in vectors:
                    await copy.write_row(row)

    async def get(
        self, scope: Scope, record_id: str, *, include_deleted: bool = False
    ) -> MemoryRecord:
        before = self._before_read()
        async with self._autocommit(wait=False) as c:
            rows = await self._visible(c, scope, [record_id])
        rows = await self._fresh(rows, before)
        if not rows or (not include_deleted and rows[0]["status"] != RecordStatus.ACTIVE.value):
            raise NotFoundError(f"no record {record_id!r} in scope {scope}")
        return decode_record(rows[0])

    async def views(self, scope: Scope, ids: Sequence[str]) -> dict[str, RecordView]:
        """What a context shows of each id visible in ``scope`` (as :meth:`get_many` finds
        them), without decoding the records: ``build_context`` renders its candidates from
        these and decodes none."""
        if not ids:
            return {}
        async with self._autocommit(wait=False) as c:  # no counter read: need not wait (behind.py)
            rows = await self._visible(c, scope, ids, VIEW_COLUMNS)
        return {row["id"]: decode_view(tuple(row.values())) for row in rows}

    async def get_many(self, scope: Scope, ids: Sequence[str]) -> list[MemoryRecord]:
        if not ids:
            return []  # no round trip for nothing (a context's facts may find none)
        before = self._before_read()
        async with self._autocommit(wait=False) as c:
            rows = await self._visible(c, scope, ids)
        found = {row["id"]: row for row in await self._fresh(rows, before)}
        return [decode_record(found[i]) for i in dict.fromkeys(ids) if i in found]

    async def citing(self, scope: Scope, ids: Sequence[str]) -> builtins.list[str]:
        """The user's records whose current version cites one of ``ids``: by the GIN index
        on ``cited_ids(type, source_ids, structured, superseded_by)`` (schema step 28,
        store/citations.py)."""
        if scope.caller is not None or not ids:  # a purge is the owner's
            return []
        where, args = scope_sql(scope)
        async with self._autocommit() as c:
            rows = await (
                await c.execute(
                    "SELECT id FROM records WHERE "
                    "cited_ids(type, source_ids, structured, superseded_by) "
                    f"&& %s::text[] AND type <> 'message' AND {where} ORDER BY observed_at, seq",
                    [sorted(set(ids)), *args],
                )
            ).fetchall()
        return [str(r["id"]) for r in rows]

    async def stored_vectors(self, scope: Scope, ids: Sequence[str]) -> dict[str, StoredVector]:
        if not ids:
            return {}
        where, args = scope_sql(scope)
        async with self._autocommit(wait=False) as c:  # vectors are never written behind
            rows = await (
                await c.execute(
                    "SELECT r.id, v.model, v.embedding FROM vectors v JOIN (SELECT seq, id "
                    f"FROM records WHERE id = ANY(%s) AND {where}) r ON v.seq = r.seq",
                    [sorted(dict.fromkeys(ids)), *args],
                )
            ).fetchall()
        return {r["id"]: StoredVector(r["model"], vector_array(r["embedding"])) for r in rows}

    async def replace(self, scope: Scope, write: RecordWrite, *, expected_version: int) -> None:
        prepared = self._prepare([write])[0]
        async with self._write() as c:
            await self._replace(c, scope, prepared, expected_version)

    async def _replace(self, c: Any, scope: Scope, p: _Prepared, expected_version: int) -> None:
        if scope.caller is not None:  # another caller may read, never write
            raise NotFoundError(f"no record {p.write.record.id!r} in scope {scope}")
        new = p.write.record
        rows = await self._visible(c, scope, [new.id], f"seq, lex_tokens, {_COLS}", lock=True)
        if not rows:
            raise NotFoundError(f"no record {new.id!r} in scope {scope}")
        cur = rows[0]
        check_replace(new, cur["version"], (cur["tenant"], cur["user"]), expected_version)
        seq = int(cur["seq"])
        old_row = {col: cur[col] for col in COLUMNS}
        new_row = dict(zip(COLUMNS, p.values[: len(COLUMNS)], strict=True))
        await c.execute(
            _ARCHIVE, (seq, expected_version, encode_delta(reverse_delta(old_row, new_row)))
        )
        await c.execute(
            _UPDATE, (*(p.values[i] for i in _UPDATE_AT), *p.values[len(COLUMNS) :], seq)
        )
        tok = scope_token(new.tenant, new.user)
        await lexical.index(
            c,
            [(seq, new.tenant, tok, p.doc)],
            old=[(seq, new.tenant, tok, cur["lex_tokens"])],
            keep_public=False,
        )
        if Visibility.PUBLIC.value in (cur["visibility"], new.access.visibility.value):
            await lexical.sync_public(c, [seq])  # only a public record, or one that was
        if p.vector is not None:
            cached = (tok, new.embedding_model, new.content_hash, p.blob)
            mine = _take_carried(cached[:3], p.blob)
            await c.execute(
                _UPSERT_OWN_VECTOR,
                (seq, new.tenant, new.user, new.embedding_model, *p.vector, mine, *cached),
            )
            if not mine:
                await c.execute(_DROP_MOVED, _columns([cached]))
        old_masked = tuple(float(cur[k]) if k == "importance" else cur[k] for k in _MASKED)
        if p.vector is None and old_masked != _masked_of(new):
            await c.execute(_TOUCH_VECTOR, (seq,))

    @staticmethod
    async def _deltas(c: Any, rows: Sequence[Mapping[str, Any]]) -> builtins.list[dict[str, Any]]:
        """The deltas of these records' past versions (``seq``, ``version``, ``delta``), by
        record, newest first: what ``histories`` and ``shown_versions`` walk back (none read
        when ``rows`` is empty)."""
        if not rows:
            return []
        return list(
            await (
                await c.execute(
                    "SELECT seq, version, delta FROM record_history WHERE seq = ANY(%s) "
                    "ORDER BY seq, version DESC",
                    ([r["seq"] for r in rows],),
                )
            ).fetchall()
        )

    async def history(self, scope: Scope, record_id: str) -> list[MemoryRecord]:
        return history_of(await self.histories(scope, [record_id]), scope, record_id)

    async def histories(
        self, scope: Scope, ids: Sequence[str]
    ) -> builtins.dict[str, builtins.list[MemoryRecord]]:
        async with self._read() as c:
            rows = await self._visible(c, scope, ids)
            deltas = await self._deltas(c, rows)
        triples = [(d["seq"], d["version"], d["delta"]) for d in deltas]
        return readable_versions(versions_by_id(rows, triples, ids, decode_record), scope)

    async def _content_hashes(self, scope: Scope, ids: Sequence[str]) -> builtins.set[str]:
        """The text hashes of every version of these records (their embedding-cache keys):
        the current rows' and, rewinding only their text and hash by the deltas, the
        earlier versions' (``history.rewind_hash``, purge31: a cluster's versions each
        repeat its member list, which ``histories`` decodes in full)."""
        from memstrata.store.sqlite.history import decode_delta, rewind_hash

        async with self._read() as c:
            rows = await self._visible(c, scope, ids, "seq, id, version, raw, content_hash")
            deltas = await self._deltas(c, rows)
        now = {int(r["seq"]): r for r in rows}
        at = {seq: {"raw": r["raw"], "content_hash": r["content_hash"]} for seq, r in now.items()}
        out = {str(r["content_hash"]) for r in rows}
        for d in deltas:  # each record's newest first
            seq = int(d["seq"])
            if int(d["version"]) < int(now[seq]["version"]):
                at[seq] = rewind_hash(at[seq], decode_delta(bytes(d["delta"])))
                out.add(str(at[seq]["content_hash"]))
        return out

    async def shown_versions(
        self, scope: Scope, versions: Mapping[str, int]
    ) -> builtins.dict[str, int]:
        """For each ``id: version``, how many versions of the record up to that one
        ``scope`` may read (of those its ``histories`` would hold); a record it cannot read
        is left out. Reads the three columns that decide it and the deltas, parsing only
        those that change one (:mod:`memstrata.store.version_numbers`)."""
        async with self._read() as c:
            rows = await self._visible(
                c, scope, list(versions), "seq, id, version, status, visibility, access"
            )
            deltas = await self._deltas(c, rows)
        by_seq: builtins.dict[int, builtins.list[tuple[int, bytes]]] = {}
        for d in deltas:
            by_seq.setdefault(int(d["seq"]), []).append((int(d["version"]), bytes(d["delta"])))
        return {
            str(r["id"]): readable_count(
                r, by_seq.get(int(r["seq"]), ()), scope, versions[str(r["id"])]
            )
            for r in rows
        }

    async def history_parts(
        self, scope: Scope, record_id: str, *, below: int, size: int
    ) -> AsyncIterator[builtins.list[MemoryRecord]]:
        size = max(1, size)
        with PartSpool[tuple[int, bytes]]() as deltas:
            async with self._snapshot() as c:  # held while the deltas are fetched
                rows = await self._visible(c, scope, [record_id])
                if not rows:
                    return
                current, after = rows[0], int(rows[0]["version"])
                while page := await (
                    await c.execute(
                        "SELECT version, delta FROM record_history WHERE seq = %s AND "
                        "version < %s ORDER BY version DESC LIMIT %s",
                        (current["seq"], after, size),
                    )
                ).fetchall():
                    deltas.add([(int(d["version"]), bytes(d["delta"])) for d in page])
                    after = int(page[-1]["version"])
            for part in parts_of(current, deltas, below, scope):  # async-only
                yield part  # async-only
            # sync: yield from parts_of(current, deltas, below, scope)

    async def set_status(
        self, scope: Scope, ids: Sequence[str], status: RecordStatus, at: datetime
    ) -> list[str]:
        async with self._write() as c:
            return await self._set_status(c, scope, ids, status, at)

    async def _set_status(
        self, c: Any, scope: Scope, ids: Sequence[str], status: RecordStatus, at: datetime
    ) -> list[str]:
        if scope.caller is not None:
            return []
        status = RecordStatus(status)
        deleted_at = encode_time(at) if status is RecordStatus.DELETED else None
        changed: list[str] = []
        seqs: list[int] = []
        columns = ("status", "version", "updated_at", "deleted_at", *COUNTERS)
        for row in await self._visible(c, scope, ids, "seq, id, " + ", ".join(columns), lock=True):
            if row["status"] == status.value:
                continue
            check_version(row["id"], row["version"] + 1)  # the transaction is rolled back
            delta = {col: ["=", row[col]] for col in columns}
            await c.execute(_ARCHIVE, (row["seq"], row["version"], encode_delta(delta)))
            await c.execute(
                "UPDATE records SET status = %s, version = version + 1, "
                "updated_at = %s, deleted_at = %s WHERE seq = %s",
                (status.value, encode_time(at), deleted_at, row["seq"]),
            )
            await c.execute(_TOUCH_VECTOR, (row["seq"],))
            changed.append(row["id"])
            seqs.append(int(row["seq"]))
        await lexical.sync_public(c, seqs)  # a deleted record leaves the public part
        order = {i: n for n, i in enumerate(ids)}
        return sorted(changed, key=order.__getitem__)

    async def purge(
        self,
        scope: Scope,
        ids: Sequence[str],
        *,
        reterm: Mapping[str, Sequence[str]] | None = None,
    ) -> PurgeReport:
        if scope.caller is not None:
            return PurgeReport()
        hashes = await self._content_hashes(scope, ids)  # every version's: its cache entry too
        own = current_fence()
        async with self._write() as c:
            # First: the user's running jobs may have read these records. They run again on
            # what is left; their writes under way are waited for (and seen by what follows),
            # later ones refused (jobs.Fence). Job rows before record rows, as a job locks.
            await outbox.take_back_claims(
                c, scope.tenant, scope.user, own.lease_token if own is not None else None
            )
            rows = await self._visible(
                c, scope, ids, 'seq, id, tenant, "user", lex_tokens', lock=True
            )
            found = [r["id"] for r in rows]
            seqs = [int(r["seq"]) for r in rows]
            counts = {"records": 0, "versions": 0, "vectors": 0, "cache_entries": 0}
            remaining = 0
            if found:
                keys = {  # the keys of the facts purged: their other facts may name them
                    str(json.loads(str(m["metadata"])).get("key"))
                    for m in await (
                        await c.execute(
                            "SELECT metadata FROM records WHERE seq = ANY(%s) AND type = 'fact'",
                            (seqs,),
                        )
                    ).fetchall()
                    if isinstance(json.loads(str(m["metadata"])).get("key"), str)
                }
                await lexical.unindex(
                    c,
                    [
                        (
                            int(r["seq"]),
                            r["tenant"],
                            scope_token(r["tenant"], r["user"]),
                            r["lex_tokens"],
                        )
                        for r in rows
                    ],
                )
                counts["versions"] = (
                    await c.execute("DELETE FROM record_history WHERE seq = ANY(%s)", (seqs,))
                ).rowcount
                counts["vectors"] = (
                    await c.execute("DELETE FROM vectors WHERE seq = ANY(%s)", (seqs,))
                ).rowcount
                counts["records"] = (
                    await c.execute("DELETE FROM records WHERE seq = ANY(%s)", (seqs,))
                ).rowcount
                # Their readers leave the index, but for those a set_access event still
                # names (the events stay: the reader's purge must find them).
                for rid in found:
                    await c.execute(
                        'DELETE FROM record_readers WHERE tenant = %(t)s AND "user" = %(u)s '
                        "AND id = %(i)s AND reader NOT IN (SELECT r FROM audit_log a, "
                        "LATERAL jsonb_array_elements_text(a.details::jsonb -> "
                        "'allowed_users') AS r WHERE a.tenant = %(t)s AND a.\"user\" = %(u)s "
                        "AND a.action = 'set_access' AND a.record_ids = ARRAY[%(i)s::text] "
                        'COLLATE "C")',
                        {"t": scope.tenant, "u": scope.user, "i": rid},
                    )
                if reterm:
                    await self._reterm(c, scope, reterm)
                await self._unlink_superseded(c, scope, sorted(keys), set(found))
                counts["cache_entries"] = (
                    _forget_carried(scope_token(scope.tenant, scope.user), hashes)
                    + (
                        await c.execute(
                            "DELETE FROM embedding_cache WHERE scope_tok = %s AND key = "
                            "ANY(%s) AND NOT EXISTS (SELECT 1 FROM records WHERE tenant = %s AND "
                            '"user" = %s AND content_hash = embedding_cache.key)',
                            (
                                scope_token(scope.tenant, scope.user),
                                sorted(hashes),
                                scope.tenant,
                                scope.user,
                            ),
                        )
                    ).rowcount
                )
                remaining = int(
                    (
                        await (
                            await c.execute(
                                "SELECT (SELECT count(*) FROM records WHERE seq = ANY(%s)) + "
                                "(SELECT count(*) FROM record_history WHERE seq = ANY(%s)) + "
                                "(SELECT count(*) FROM vectors WHERE seq = ANY(%s)) + "
                                "(SELECT count(*) FROM counters WHERE seq = ANY(%s)) + "
                                "(SELECT count(*) FROM lex_postings WHERE scope_tok = %s AND "
                                "seq = ANY(%s)) AS n",
                                (
                                    seqs,
                                    seqs,
                                    seqs,
                                    seqs,
                                    scope_token(scope.tenant, scope.user),
                                    seqs,
                                ),
                            )
                        ).fetchone()
                    )["n"]
                )
                await self._bump(c, scope.tenant, scope.user)
                await c.execute(_BUMP, (PURGES,))  # other processes forget the words
        return PurgeReport(
            records=counts["records"],
            versions=counts["versions"],
            vectors=counts["vectors"],
            cache_entries=counts["cache_entries"],
            remaining=remaining,
        )

    async def _reterm(self, c: Any, scope: Scope, reterm: Mapping[str, Sequence[str]]) -> None:
        """New lexical terms for the user's records in ``reterm`` whose tokens differ
        (purge): their postings and statistics are replaced, and a token no row holds any
        more loses its ``lex_df`` row."""
        tok = scope_token(scope.tenant, scope.user)
        old: list[lexical.Doc] = []
        new: list[lexical.Doc] = []
        uscope = Scope(scope.tenant, scope.user)
        for row in await self._visible(c, uscope, list(reterm), "seq, id, lex_tokens", lock=True):
            doc = fts5.document_tokens(reterm[row["id"]])
            if list(row["lex_tokens"]) == doc:
                continue
            seq = int(row["seq"])
            await c.execute(
                "UPDATE records SET lex_tokens = %s, lex_len = %s WHERE seq = %s",
                (doc, len(doc) + 1, seq),
            )
            old.append((seq, scope.tenant, tok, row["lex_tokens"]))
            new.append((seq, scope.tenant, tok, doc))
        if new:
            await lexical.unindex(c, old)
            await lexical.index(c, new)

    async def purge_user(self, tenant: str, user: str) -> PurgeReport:
        from memstrata.quotas import subject_hash  # quotas imports the store package

        tok = scope_token(tenant, user)
        args = {"t": tenant, "u": user, "tok": tok}
        async with self._write() as c:
            # First, holding nothing yet: the writes under way that added rows naming the
            # user to the index of readers are waited for (the reads below see them), and
            # later ones are refused until this commits (schema.py, v21, v23): none can
            # commit between the read of the index and the commit, naming the purged user.
            await c.execute("SELECT record_readers_purge_lock(%s, %s)", (tenant, user))
            # Then the user's jobs go, waiting for any write under way under their claims
            # (it then is deleted below: READ COMMITTED reads again); a later one is refused.
            mine_args = (tenant, user)
            jobs = (
                await c.execute('DELETE FROM jobs WHERE tenant = %s AND "user" = %s', mine_args)
            ).rowcount
            cache = (
                _forget_carried(tok)
                + (
                    await c.execute("DELETE FROM embedding_cache WHERE scope_tok = %s", (tok,))
                ).rowcount
            )
            await lexical.unindex_scope(c, tenant, user, tok)
            vectors = (
                await c.execute('DELETE FROM vectors WHERE tenant = %s AND "user" = %s', mine_args)
            ).rowcount
            versions = (
                await c.execute(
                    "DELETE FROM record_history WHERE seq IN (SELECT seq FROM records WHERE "
                    'tenant = %s AND "user" = %s)',
                    mine_args,
                )
            ).rowcount
            records = (
                await c.execute('DELETE FROM records WHERE tenant = %s AND "user" = %s', mine_args)
            ).rowcount
            # The user's generation row names them (their scope token): it goes, and the
            # purge epoch (a row of no one, vectors.py) tells every process's cache to reload.
            await c.execute("DELETE FROM scope_generation WHERE scope_tok = %s", (tok,))
            # What other users shared with them names them: out of every version
            await self._drop_reader(c, tenant, user)
            await c.execute(_BUMP, (PURGE_EPOCH,))
            await c.execute(_BUMP, (PURGES,))  # other processes forget the words (traces.py)
            # quota counters and the user's quota override name the user by a hash
            await c.execute(
                "DELETE FROM meta WHERE key LIKE %s", (f"quota:%:{subject_hash(tenant, user)}:%",)
            )
            await audit.redact_subject(c, tenant, user)  # reads the index of readers: then
            await c.execute(  # it goes, with the rows of the user's own records
                "DELETE FROM record_readers WHERE tenant = %s AND reader = %s", mine_args
            )
            await c.execute(
                'DELETE FROM record_readers WHERE tenant = %s AND "user" = %s', mine_args
            )
            # Rows of other components naming the user (API keys bound to them, registered
            # by server/pg_keys.py) go in this transaction too (store/user_tables.py).
            await shared_sql.purge_user_rows(
                c, tenant, user, ph="%s", table_exists=functools.partial(_table_exists, c)
            )
            remaining = (
                await (
                    await c.execute(
                        "SELECT (SELECT count(*) FROM records WHERE "
                        'tenant = %(t)s AND "user" = %(u)s) '
                        "+ (SELECT count(*) FROM record_history h WHERE NOT EXISTS "
                        "(SELECT 1 FROM records r WHERE r.seq = h.seq)) + (SELECT count(*) FROM "
                        'vectors WHERE tenant = %(t)s AND "user" = %(u)s) + (SELECT count(*) FROM '
                        'jobs WHERE tenant = %(t)s AND "user" = %(u)s) + (SELECT count(*) FROM '
                        "embedding_cache WHERE scope_tok = %(tok)s) + (SELECT count(*) FROM "
                        "lex_postings WHERE scope_tok = %(tok)s) + (SELECT count(*) FROM "
                        "scope_generation WHERE scope_tok = %(tok)s) AS n",
                        args,
                    )
                ).fetchone()
            )["n"]
        return PurgeReport(
            records=records,
            versions=versions,
            vectors=vectors,
            jobs=jobs,
            cache_entries=cache,
            remaining=int(remaining),
        )

    async def _drop_reader(self, c: Any, tenant: str, user: str) -> int:
        """Take ``user`` out of the readers of the other users' records shared with them
        (the index of readers: store/purged_reader.py), in each one's every version, and
        give each a new version. Reads those records' rows and deltas only. How many
        records were rewritten."""
        from memstrata.store.purged_reader import reader_fix

        fix = reader_fix(user)
        shared = await (
            await c.execute(
                'SELECT "user", id FROM record_readers WHERE tenant = %s AND reader = %s '
                'AND "user" <> %s ORDER BY "user", id',
                (tenant, user, user),
            )
        ).fetchall()
        done = 0
        for s in shared:
            row = await (
                await c.execute(
                    f'SELECT {_ROW} FROM records WHERE tenant = %s AND "user" = %s AND id = %s '
                    "FOR UPDATE",
                    (tenant, s["user"], s["id"]),
                )
            ).fetchone()
            if row is None:  # purged since: its set_access events may still name them
                continue
            newest = await self._rewrite_versions(c, row, fix)
            if newest is None:
                continue
            await c.execute(
                "UPDATE records SET access = %s, version = %s WHERE seq = %s",
                (str(newest["access"]), int(newest["version"]), int(row["seq"])),
            )
            await self._bump(c, tenant, row["user"])
            done += 1
        return done

    async def _unlink_superseded(
        self, c: Any, scope: Scope, keys: Sequence[str], gone: set[str]
    ) -> int:
        """The user's records naming a record of ``gone`` (purged), in any version, say
        ``[purged]`` instead (``purged_reader.link_fix``; their archived versions cite
        none of them), with a new version (``rederive`` then re-links the current facts):
        the facts of ``keys`` (schema 12's index; any version superseded by one), and the
        records whose current version links to one (step 29's GIN index on
        ``linked_ids``) or has a refreshed note and a version naming one (archived: step
        30's ``record_past_links``; current: step 28's ``records_cited``), then locked
        (purge31b: a scan of the user's rows before; pg32: every record with a refreshed
        note before). Reads the deltas of those. How many records were rewritten."""
        from memstrata.store.purged_reader import link_fix, noted, past_sources_fix

        from .schema import LINKED_ROWS, NOTED_ROWS

        fix, past = link_fix(gone), past_sources_fix(gone)
        rows: dict[int, Any] = {}
        for key in keys:
            name, name_args = key_sql("fact", "key", key)
            for row in await (
                await c.execute(
                    f'SELECT {_ROW} FROM records WHERE tenant = %s AND "user" = %s AND {name} '
                    "ORDER BY seq FOR UPDATE",
                    (scope.tenant, scope.user, *name_args),
                )
            ).fetchall():
                rows[int(row["seq"])] = row
        cols = "seq, superseded_by, structured, metadata, source_ids, relations"
        found = await (
            await c.execute(
                f'SELECT {cols} FROM records WHERE tenant = %s AND "user" = %s AND '
                f"linked_ids(structured, metadata, relations, superseded_by) && %s::text[] "
                f"AND {LINKED_ROWS}",
                (scope.tenant, scope.user, sorted(gone)),
            )
        ).fetchall()
        # A record holding a refreshed note is read when a version names a purged id: an
        # archived one (step 31's record_past_links) or the current one's sources or
        # members (step 28's records_cited; its link fields: records_linked above), not
        # every such record of the user (pg32).
        found += await (
            await c.execute(
                f"SELECT {cols} FROM records WHERE seq IN (SELECT seq FROM record_past_links "
                f'WHERE id = ANY(%s)) AND tenant = %s AND "user" = %s AND {NOTED_ROWS}',
                (sorted(gone), scope.tenant, scope.user),
            )
        ).fetchall()
        found += await (
            await c.execute(
                f'SELECT {cols} FROM records WHERE tenant = %s AND "user" = %s AND '
                "type <> 'message' AND cited_ids(type, source_ids, structured, superseded_by) "
                f"&& %s::text[] AND {NOTED_ROWS}",
                (scope.tenant, scope.user, sorted(gone)),
            )
        ).fetchall()
        named = sorted(
            {
                int(row["seq"])
                for row in found
                if int(row["seq"]) not in rows and (fix(dict(row)) or noted(row))
            }
        )
        if named:  # locked, then read again: a version written since is the one rewritten
            for row in await (
                await c.execute(
                    f"SELECT {_ROW} FROM records WHERE seq = ANY(%s) ORDER BY seq FOR UPDATE",
                    (named,),
                )
            ).fetchall():
                rows[int(row["seq"])] = row
        done = 0
        for seq, row in sorted(rows.items()):
            newest = await self._rewrite_versions(c, row, fix, past)
            if newest is None:
                continue
            await c.execute(
                "UPDATE records SET superseded_by = %s, structured = %s, metadata = %s, "
                "source_ids = %s, relations = %s, version = %s WHERE seq = %s",
                (
                    newest["superseded_by"],
                    newest["structured"],
                    newest["metadata"],
                    newest["source_ids"],
                    newest["relations"],
                    newest["version"],
                    seq,
                ),
            )
            done += 1
        # no version names them now (the rewrites above archived versions that did)
        await c.execute(
            "DELETE FROM record_past_links l USING records r WHERE l.id = ANY(%s) "
            'AND r.seq = l.seq AND r.tenant = %s AND r."user" = %s',
            (sorted(gone), scope.tenant, scope.user),
        )
        return done

    async def _rewrite_versions(
        self,
        c: Any,
        row: Any,
        fix: Callable[[dict[str, Any]], bool],
        past: Callable[[dict[str, Any]], bool] | None = None,
    ) -> dict[str, Any] | None:
        """The record of ``row`` with every version changed by ``fix``
        (``purged_reader.rewrite_versions``): its history written again, and its new
        current row returned for the caller to write the columns ``fix`` changes; ``None``,
        with nothing written, when ``fix`` changed no version."""
        from memstrata.store.purged_reader import rewrite_versions

        seq = int(row["seq"])
        deltas = await (
            await c.execute(
                "SELECT version, delta FROM record_history WHERE seq = %s ORDER BY version DESC",
                (seq,),
            )
        ).fetchall()
        deltas_read = [(int(d["version"]), bytes(d["delta"])) for d in deltas]
        out = rewrite_versions(row, deltas_read, fix, past)
        if out is None:
            return None
        newest, chain = out
        await c.execute("DELETE FROM record_history WHERE seq = %s", (seq,))
        async with c.cursor() as cur:
            await cur.executemany(_ARCHIVE, [(seq, v, blob) for v, blob in chain])
        return newest

    async def compact(self, *, lock_timeout: float = 10.0) -> CompactReport:
        """Rewrite every table of the schema and make the WAL holding deleted rows
        removable (compact.py: what it locks, what it cannot reach)."""
        from memstrata._async.store.postgres.compact import compact

        async with self._autocommit() as c:
            return await compact(c, self.options.schema, lock_timeout_s=lock_timeout)

    async def _select(
        self,
        c: Any,
        scope: Scope,
        filters: Filters,
        tail: str = "",
        tail_args: Sequence[Any] = (),
        *,
        columns: str = _ROW,
        walk: Walk | None = None,
    ) -> list[dict[str, Any]]:
        return list(
            await (
                await c.execute(*_select_sql(scope, filters, tail, tail_args, columns, walk))
            ).fetchall()
        )

    async def count(self, scope: Scope, filters: Filters) -> int:
        async with self._read() as c:
            if needs_python(filters):
                return sum(
                    filters.matches(decode_record(r)) for r in await self._select(c, scope, filters)
                )
            rows = await self._select(c, scope, filters, columns="count(*) AS n")
        return int(rows[0]["n"])

    async def key_versions(self, scope: Scope, type: str, field: str, value: str) -> KeyVersions:
        """One statement (one snapshot) of index look-ups: the name's last row (a backward
        step of schema 12's ``records_fact_key`` / ``records_doc_key`` for a fact's key and a
        document's qa_id; other names scan the type's rows) and whether it has a live one
        (``records_*_live``). No record is decoded."""
        async with self._read() as c:
            row = await (await c.execute(*key_versions_sql(scope, type, field, value))).fetchone()
        return KeyVersions(live=bool(row["live"]), newest=row["newest"])

    async def find_by_hash(
        self, scope: Scope, content_hash: str, types: Sequence[str]
    ) -> MemoryRecord | None:
        async with self._read() as c:
            return await self._find_by_hash(c, scope, content_hash, types)

    async def _find_by_hash(
        self, c: Any, scope: Scope, content_hash: str, types: Sequence[str]
    ) -> MemoryRecord | None:
        tail = "AND content_hash = %s"
        args: list[Any] = [content_hash]
        if types:
            tail += " AND type = ANY(%s)"
            args.append(sorted(str(t) for t in types))
        rows = await self._select(c, scope, Filters(), tail + " ORDER BY seq LIMIT 1", args)
        return decode_record(rows[0]) if rows else None

    # --- counters (never versions) -----------------------------------------------------------
    async def touch(self, scope: Scope, ids: Sequence[str], at: datetime) -> None:
        where, args = scope_sql(scope)
        unique = sorted(dict.fromkeys(ids))
        if not unique or scope.caller is not None:  # a caller's reads count nothing
            return
        keys = _row_keys(scope, unique)
        stamp = encode_time(at)
        if stamp is None:  # (a datetime always encodes)
            raise ValidationError("touch needs the time of the access")

        def taken() -> None:  # the database may hold it from now on
            with self._touch_lock:
                self._taken += 1
                for key in keys:
                    queued = self._queued[key]
                    queued.remove(stamp)
                    if not queued:
                        del self._queued[key]
                self._in_flight.update(keys)

        def done() -> None:
            with self._touch_lock:
                self._in_flight.subtract(keys)
                for key in keys:
                    if self._in_flight[key] <= 0:
                        del self._in_flight[key]

        write = Statement(
            # stops at 2**63 - 1 (validation.counted): BIGINT's overflow would fail the batch
            f"UPDATE records SET access_count = least(access_count, {MAX_COUNT - 1}) + 1, "
            "last_accessed_at = greatest(last_accessed_at, %s) "
            f"WHERE id = ANY(%s) AND {where}",
            [stamp, unique, *args],
            done,
            taken,
        )
        with self._touch_lock:
            for key in keys:
                self._queued.setdefault(key, []).append(stamp)
        # behind the search; a later read of these records adds it or waits for it (_fresh)
        await self._behind.submit(write, keys)

    async def add_counts(self, scope: Scope, name: str, deltas: Mapping[str, int]) -> None:
        if not deltas:
            return
        async with self._relaxed() as c:
            rows = await self._visible(c, scope, list(deltas), "seq, id")
            items = sorted((int(r["seq"]), int(deltas[r["id"]])) for r in rows)
            if items:
                await c.execute(
                    "INSERT INTO counters (seq, name, value) SELECT s, %s, v FROM "
                    "unnest(%s::bigint[], %s::bigint[]) AS u(s, v) ORDER BY s "
                    "ON CONFLICT (seq, name) DO UPDATE SET value = counters.value + "
                    "excluded.value",
                    (name, [i[0] for i in items], [i[1] for i in items]),
                )

    async def counts(self, scope: Scope, name: str, ids: Sequence[str]) -> dict[str, int]:
        where, args = scope_sql(scope, "r.")
        unique = sorted(dict.fromkeys(ids))
        if not unique:
            return {}
        async with self._read() as c:
            rows = await (
                await c.execute(
                    "SELECT r.id, coalesce(k.value, 0) AS v FROM records r LEFT JOIN "
                    "counters k ON k.seq = r.seq AND k.name = %s WHERE r.id = ANY(%s) "
                    f"AND {where}",
                    [name, unique, *args],
                )
            ).fetchall()
        return {r["id"]: int(r["v"]) for r in rows}

    async def flush_counters(self) -> None:
        """Wait for the access counters and cache entries written behind a search."""
        await self._settle()

    # --- session buffer --------------------------------------------------------------------------
    async def recent_turns(self, scope: Scope, n: int) -> builtins.list[MemoryRecord]:
        if scope.session is None or n < 1:
            return []
        sw, sa = scope_sql(scope)
        async with self._read() as c:
            rows = await (
                await c.execute(
                    f"SELECT {_ROW} FROM records WHERE {sw} AND type = %s AND status = %s "
                    "ORDER BY observed_at DESC, seq DESC LIMIT %s",
                    [*sa, RecordType.MESSAGE.value, RecordStatus.ACTIVE.value, n],
                )
            ).fetchall()
        return [decode_record(r) for r in reversed(rows)]

    # --- retrieval ------------------------------------------------------------------------------
    async def vector_search(
        self, scope: Scope, vector: Vector, k: int, filters: Filters
    ) -> list[Candidate]:
        query = np.asarray(vector, dtype=np.float32).ravel()
        if k <= 0 or query.size == 0:
            return []
        # reads no counter or cache entry: need not wait for the writes behind a search
        async with self._autocommit(wait=False) as c:
            return await self._vector_search(c, scope, query, k, filters)

    async def vector_records(
        self,
        scope: Scope,
        vector: Vector,
        k: int,
        filters: Filters,
        *,
        keep: Callable[[MemoryRecord], bool] | None = None,
        want: int | None = None,
    ) -> builtins.list[tuple[MemoryRecord, float]]:
        query = np.asarray(vector, dtype=np.float32).ravel()
        if k <= 0 or query.size == 0:
            return []
        before = self._before_read()
        async with self._autocommit(wait=False) as c:
            found = await self._vector_search(c, scope, query, k, filters)
            rows = await self._visible(c, scope, [f.id for f in found]) if found else []
        by_id = {r["id"]: r for r in await self._fresh(rows, before)}
        return kept_records(found, by_id, decode_record, keep, want)

    async def _vector_search(
        self, c: Any, scope: Scope, query: Any, k: int, filters: Filters
    ) -> builtins.list[Candidate]:
        state = await self._vectors.state(
            c, scope.tenant, scope.user, query.size, self.options.exact_below
        )
        if state.count == 0:
            return []
        if state.count >= self.options.exact_below and query.size <= 2000:
            await self._ensure_user_hnsw(scope.tenant, scope.user, query.size)
            return await hnsw_search(c, scope, query, k, filters, state.model)
        cache = await self._vectors.load(c, scope.tenant, scope.user, query.size, state)
        allowed = None
        if _python_filters(filters) or scope.caller is not None:
            allowed = {r["id"] for r in await self._select(c, scope, filters, columns="id")}
        if not needs_python(filters):
            return [
                Candidate(cache.ids[i], s)
                for i, s in exact_search(cache, scope, query, k, filters, allowed)
            ]
        ranked = exact_search(cache, scope, query, cache.n, filters, allowed)
        out: list[Candidate] = []
        step = max(4 * k, 64)
        for start in range(0, len(ranked), step):
            block = ranked[start : start + step]
            found = {
                r["id"]: decode_record(r)
                for r in await self._visible(c, scope, [cache.ids[i] for i, _ in block])
            }
            for i, score in block:
                rec = found.get(cache.ids[i])
                if rec is not None and filters.matches(rec):
                    out.append(Candidate(rec.id, score))
                    if len(out) == k:
                        return out
        return out

    async def lexical_search(
        self, scope: Scope, terms: Sequence[str], k: int, filters: Filters
    ) -> list[Candidate]:
        if k <= 0:
            return []
        sw, sa = scope_sql(scope, "r.")
        fw, fa = filters_sql(filters, "r.")
        python = needs_python(filters)
        # reads no counter or cache entry: need not wait for the writes behind a search
        async with self._autocommit(wait=False) as c:
            if scope.caller is not None:  # scored over what the caller reads (caller_bm25)
                ow, oa = scope_sql(scope.as_caller(None), "r.")  # the rule is the readable's
                rows = await lexical.caller_rows(
                    c,
                    scope,
                    terms,
                    scope_sql(scope.user_scope, "r."),
                    (f"{ow} AND {fw}", [*oa, *fa]),
                    None if python else k,
                    columns="r.id" if not python else "r.*",
                )
                out = [
                    Candidate(r["id"], float(r["score"]))
                    for r in rows
                    if not python or filters.matches(decode_record(r))
                ]
                return out[:k]
            rows = await lexical.search_rows(
                c,
                scope.tenant,
                scope_token(scope.tenant, scope.user),
                terms,
                f"{sw} AND {fw}",
                [*sa, *fa],
                None if python else k,
                columns="r.id, r.seq"
                if not python
                else ", ".join("r." + col for col in _ROW.split(", ")),
            )
        out = [
            Candidate(r["id"], float(r["score"]))
            for r in rows
            if not python or filters.matches(decode_record(r))
        ]
        return out[:k]

    # --- embeddings ------------------------------------------------------------------------------
    async def cached_vectors(
        self, scope: Scope, model_id: str, keys: Sequence[str]
    ) -> dict[str, Vector]:
        unique = list(dict.fromkeys(keys))
        if not unique:
            return {}
        tok = scope_token(scope.tenant, scope.user)
        out: dict[str, Vector] = {}
        fence = current_fence()
        carried = fence.carried.get(id(self), {}) if fence is not None else {}
        with self._cache_lock:  # entries still being written behind a search (read first)
            for key in unique:
                pending = carried.get((tok, model_id, key)) or self._cache_pending.get(
                    (tok, model_id, key)
                )
                if pending is not None:
                    out[key] = decode_vector(pending)
        rest = [key for key in unique if key not in out]
        if not rest:
            return out
        passages = [key for key in rest if not key.startswith("q:")]
        async with self._autocommit(wait=False) as c:
            rows = await (
                await c.execute(
                    _CACHED, (tok, model_id, rest, scope.tenant, scope.user, passages, model_id)
                )
            ).fetchall()
        for r in rows:  # passage vectors that moved into their record (_OWN) after entries
            if r["vector"] is not None:
                out[r["key"]] = decode_vector(bytes(r["vector"]))
        for r in rows:
            if r["vector"] is None:
                out.setdefault(r["key"], vector_array(r["embedding"]))
        return out

    async def cache_vectors(
        self, scope: Scope, model_id: str, vectors: Mapping[str, Vector]
    ) -> None:
        tok = scope_token(scope.tenant, scope.user)
        rows = []
        for key, v in sorted(vectors.items()):
            blob = encode_vector(v)
            rows.append((tok, model_id, key, len(blob) // 4, blob))
        if not rows:
            return
        mine = {(t, m, k): blob for t, m, k, _, blob in rows}
        fence = current_fence()
        if fence is not None:  # a job's: written by its next write, under its claim
            with self._cache_lock:  # (and read from there by the job until then)
                fence.carried[id(self)] = {**fence.carried.get(id(self), {}), **mine}
            return
        # Until written, this process reads the entries from here (cached_vectors), so its
        # reads need not wait for the write; an entry leaves only once it is committed.
        with self._cache_lock:
            self._cache_pending.update(mine)
        # A passage's entry (the text of a record about to be written: an add, a turn)
        # waits for the write transaction that follows, which carries it: one transaction
        # and commit fewer per add (1 ms of this process's CPU and 0.75 ms of PostgreSQL's,
        # measured). Entries under a query's key (``q:``: callers of the store's own; the
        # library keeps questions' vectors in the process only) are written behind at once.
        self._defer({key: blob for key, blob in mine.items() if not key[2].startswith("q:")})
        queries = {key: blob for key, blob in mine.items() if key[2].startswith("q:")}
        if queries:
            await self._submit_cache(queries)

    def _defer(self, entries: Mapping[tuple[str, str, str], bytes]) -> None:
        if entries:
            with self._cache_lock:
                self._deferred.update(entries)

    def _take_deferred(self) -> dict[tuple[str, str, str], bytes]:
        with self._cache_lock:
            taken, self._deferred = self._deferred, {}
        return taken

    def _cached(self, entries: Mapping[tuple[str, str, str], bytes]) -> None:
        """``entries`` are committed (or failed behind a search): read from the table."""
        with self._cache_lock:
            for key, blob in entries.items():
                if self._cache_pending.get(key) is blob:
                    del self._cache_pending[key]

    async def _flush_deferred(self) -> None:
        """Deferred entries go behind the searches now (before a full read, at close)."""
        taken = self._take_deferred()
        if taken:
            await self._submit_cache(taken)

    async def _submit_cache(self, entries: Mapping[tuple[str, str, str], bytes]) -> None:
        # one statement, not one per entry; behind the search (writes and full reads wait)
        await self._behind.submit(
            Statement(_UPSERT_CACHE, _cache_columns(entries), lambda: self._cached(entries))
        )

    async def scan(self, batch_size: int = 500) -> AsyncIterator[list[MemoryRecord]]:
        last = 0
        while True:
            async with self._read() as c:
                rows = await (
                    await c.execute(
                        f"SELECT seq, {_COLS} FROM records WHERE seq > %s ORDER BY seq LIMIT %s",
                        (last, max(1, batch_size)),
                    )
                ).fetchall()
            if not rows:
                return
            last = int(rows[-1]["seq"])
            yield [decode_record(r) for r in rows]

    async def set_vectors(
        self, items: Sequence[tuple[MemoryRecord, Vector]], model_id: str, dims: int
    ) -> None:
        """Each record's vector becomes ``vector``, made by ``model_id``: the passage vector
        of the record's text, so it is kept as the cache's entry too (``own``; an entry the
        cache holds with the same vector is dropped, as an insert does). Every record's
        ``seq`` is read in one statement per user; a missing record writes nothing."""
        from pgvector import Vector as PgVector

        moved = reembedded(items, model_id, dims)
        async with self._write() as c:
            seqs = await self._seqs(c, [r for r, _ in moved])
            stored = []  # entries of these texts this transaction does not carry: maybe stored
            for r, blob in moved:
                key = (scope_token(r.tenant, r.user), model_id, r.content_hash)
                if not _take_carried(key, blob):
                    stored.append((*key, blob))
            vecs = [PgVector(np.frombuffer(blob, dtype="<f4")) for _, blob in moved]
            async with c.cursor() as cur:
                await cur.executemany(
                    _REEMBEDDED_VECTOR,
                    [
                        (seq, r.tenant, r.user, model_id, dims, vec)
                        for seq, (r, _), vec in zip(seqs, moved, vecs, strict=True)
                    ],
                )
                await cur.executemany(
                    "UPDATE records SET embedding_model = %s, embedding_dims = %s WHERE seq = %s",
                    [(model_id, dims, seq) for seq in seqs],
                )
            if stored:  # in key order, as every writer takes cache rows (deadlocks)
                await c.execute(_DROP_MOVED, _columns(sorted(stored, key=_entry_order)))
            for tenant, user in sorted({(r.tenant, r.user) for r, _ in moved}):
                await self._bump(c, tenant, user)
        await self._check_large(Counter((r.tenant, r.user, dims) for r, _ in moved))

    @staticmethod
    async def _seqs(c: Any, records: Sequence[MemoryRecord]) -> builtins.list[int]:
        """The ``seq`` of each record (by tenant, user and id), in order; ``NotFoundError``
        naming the first one not stored."""
        found: dict[tuple[str, str, str], int] = {}
        for (tenant, user), ids in user_ids(records).items():
            for row in await (
                await c.execute(
                    'SELECT id, seq FROM records WHERE tenant = %s AND "user" = %s '
                    "AND id = ANY(%s)",
                    (tenant, user, ids),
                )
            ).fetchall():
                found[(tenant, user, row["id"])] = row["seq"]
        return seqs_in_order(records, found)

    # --- jobs -------------------------------------------------------------------------------------
    async def enqueue(self, jobs: Sequence[Job]) -> None:
        async with self._write() as c:
            await self._enqueue(c, jobs)

    async def _enqueue(self, c: Any, jobs: Sequence[Job]) -> None:
        await outbox.enqueue(c, jobs, self.options.schema)

    async def claim_jobs(
        self,
        now: datetime,
        *,
        limit: int,
        lease_seconds: float,
        tenant: str | None = None,
        user: str | None = None,
        session: str | None = None,
        due_before: datetime | None = None,
    ) -> list[Job]:
        async with self._write() as c:
            return await outbox.claim_jobs(
                c,
                now,
                limit=limit,
                lease_seconds=lease_seconds,
                tenant=tenant,
                user=user,
                session=session,
                due_before=due_before,
                purges=self._vectors.purges,
            )

    async def renew_leases(self, token: str, until: datetime) -> list[str]:
        async with self._write() as c:
            return await outbox.renew_leases(c, token, until)

    async def finish_job(self, job_id: str, lease_token: str | None = None) -> None:
        async with self._write() as c:
            await outbox.finish_job(c, job_id, lease_token)

    async def fail_job(
        self, job_id: str, error: str, retry_at: datetime | None, lease_token: str | None = None
    ) -> None:
        async with self._write() as c:
            await outbox.fail_job(c, job_id, error, retry_at, lease_token)

    async def give_back_job(
        self, job_id: str, reason: str, run_at: datetime, lease_token: str | None = None
    ) -> None:
        async with self._write() as c:
            await outbox.give_back_job(c, job_id, reason, run_at, lease_token)

    async def count_open_jobs(
        self, *, tenant: str | None = None, user: str | None = None, session: str | None = None
    ) -> int:
        async with self._read() as c:
            return await outbox.count_open(c, tenant, user, session)

    async def sweep_done_jobs(self, before: datetime, limit: int = DONE_SWEEP_BATCH) -> int:
        """Delete up to ``limit`` done jobs of any user due before ``before`` (the
        retention ``maintain`` sweeps); returns how many."""
        async with self._write() as c:
            return await outbox.sweep_done(c, before, limit)

    async def list_jobs(self, tenant: str, user: str, *, status: str | None = None) -> list[Job]:
        async with self._read() as c:
            return await outbox.list_jobs(c, tenant, user, status)

    async def wait_for_jobs(self, timeout: float) -> bool:
        """Block until a job is enqueued anywhere on this store (``NOTIFY``) or ``timeout``
        seconds pass; ``True`` when woken. Workers call it instead of sleeping."""
        import psycopg

        try:
            if self._listener is None:
                from memstrata.store.postgres.coded import AsyncCodedConnection

                conn = await AsyncCodedConnection.connect(
                    self.options.conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S
                )
                await conn.execute(f"LISTEN {outbox.channel(self.options.schema)}")
                self._listener = conn
            async for _ in self._listener.notifies(timeout=timeout, stop_after=1):
                return True
            return False
        except (psycopg.Error, OSError) as exc:  # OSError: EMFILE (connect_failure)
            if self._listener is not None:
                await self._listener.close()
                self._listener = None
            raise translate(exc, self._where) from exc

    async def stats(self, scope: Scope) -> StoreStats:
        where, args = scope_sql(scope)
        async with self._read() as c:
            by_type = {
                r["type"]: int(r["n"])
                for r in await (
                    await c.execute(
                        f"SELECT type, count(*) AS n FROM records WHERE {where} GROUP BY type", args
                    )
                ).fetchall()
            }
            active = (
                await (
                    await c.execute(
                        f"SELECT count(*) AS n FROM records WHERE {where} AND status = %s",
                        [*args, RecordStatus.ACTIVE.value],
                    )
                ).fetchone()
            )["n"]
            jobs = {
                r["status"]: int(r["n"])
                for r in await (
                    await c.execute(
                        'SELECT status, count(*) AS n FROM jobs WHERE tenant = %s AND "user" = %s '
                        "GROUP BY status",
                        (scope.tenant, scope.user),
                    )
                ).fetchall()
            }
            users = (
                await (
                    await c.execute(
                        'SELECT count(DISTINCT "user") AS n FROM records WHERE tenant = %s',
                        (scope.tenant,),
                    )
                ).fetchone()
            )["n"]
        total = sum(by_type.values())
        return StoreStats(
            records=total,
            active=int(active),
            deleted=total - int(active),
            by_type=by_type,
            pending_jobs=jobs.get("pending", 0) + jobs.get("running", 0),
            failed_jobs=jobs.get("failed", 0),
            users=int(users),
        )

    # --- bulk copy (StoreCopy, memstrata migrate; in dump.py) -------------------------------
    def dump_records(self, batch_size: int = 500) -> AsyncIterator[builtins.list[RecordDump]]:
        return dump.dump_records(self, batch_size)

    async def load_records(self, dumps: Sequence[RecordDump]) -> int:
        return await dump.load_records(self, dumps)

    def dump_cache(self, batch_size: int = 500) -> AsyncIterator[builtins.list[CacheEntry]]:
        return dump.dump_cache(self, batch_size)

    async def load_cache(self, entries: Sequence[CacheEntry]) -> int:
        return await dump.load_cache(self, entries)

    def dump_jobs(self, batch_size: int = 500) -> AsyncIterator[builtins.list[Job]]:
        return dump.dump_jobs(self, batch_size)

    async def load_jobs(self, jobs: Sequence[Job]) -> int:
        return await dump.load_jobs(self, jobs)

    def dump_audit(self, batch_size: int = 500) -> AsyncIterator[builtins.list[AuditEvent]]:
        return dump.dump_audit(self, batch_size)

    async def load_audit(self, events: Sequence[AuditEvent]) -> int:
        return await dump.load_audit(self, events)

    def dump_keys(self, batch_size: int = 500) -> AsyncIterator[builtins.list[KeyRow]]:
        return dump.dump_keys(self, batch_size)

    async def load_keys(self, keys: Sequence[KeyRow]) -> int:
        return await dump.load_keys(self, keys)

    async def meta_items(self) -> dict[str, str]:
        return await dump.meta_items(self)

    async def finish_load(self) -> None:
        await dump.finish_load(self)

    # Last in the class: below it, ``list`` in annotations would name this method.
    async def list(
        self,
        scope: Scope,
        filters: Filters,
        *,
        limit: int = 100,
        offset: int = 0,
        newest_first: bool = True,
    ) -> builtins.list[MemoryRecord]:
        if limit <= 0:
            return []
        return (await self.list_many([ListQuery(scope, filters, limit, offset, newest_first)]))[0]

    async def list_many(
        self, queries: Sequence[ListQuery]
    ) -> builtins.list[builtins.list[MemoryRecord]]:
        """What ``list`` returns for each query, read on one connection."""
        if all(q.limit <= 0 for q in queries):
            return [[] for _ in queries]
        before = self._before_read()
        async with self._autocommit(wait=False) as c:
            # Pipelined: every statement sent before any answer is awaited, one round trip.
            async with c.pipeline():
                cursors = [await c.execute(*_list_sql(q)) if q.limit > 0 else None for q in queries]
            rows = [list(await cur.fetchall()) if cur is not None else [] for cur in cursors]
        out: builtins.list[builtins.list[MemoryRecord]] = []
        for q, got in zip(queries, rows, strict=True):
            records = [decode_record(r) for r in await self._fresh(got, before)]
            if needs_python(q.filters):
                offset = max(0, q.offset)
                records = [r for r in records if q.filters.matches(r)][offset : offset + q.limit]
            out.append(records)
        return out

    async def list_pages(
        self, scope: Scope, filters: Filters, *, batch_size: int = 1000
    ) -> AsyncIterator[builtins.list[MemoryRecord]]:
        size = max(1, batch_size)
        after: tuple[Any, int] | None = None
        python = needs_python(filters)
        while True:
            tail = _ORDERED_PAGE
            args: builtins.list[Any] = [size]
            if after is not None:
                tail, args = "AND (observed_at, seq) > (%s, %s) " + tail, [*after, size]
            walk: Walk = ("ASC", None if after is None else (">", *after), size)
            before = self._before_read()
            async with self._autocommit(wait=False) as c:
                rows = await self._select(c, scope, filters, tail, args, walk=walk)
            if not rows:
                return
            after = (rows[-1]["observed_at"], int(rows[-1]["seq"]))
            records = [decode_record(r) for r in await self._fresh(rows, before)]
            page = [r for r in records if filters.matches(r)] if python else records
            if page:
                yield page

    async def list_after(
        self,
        scope: Scope,
        filters: Filters,
        record_id: str,
        *,
        limit: int = 20,
        newest_first: bool = False,
    ) -> builtins.list[MemoryRecord]:
        """What ``list(scope, filters)`` orders after the record ``record_id`` (before it,
        newest first, with ``newest_first``), up to ``limit``: one read from the record's
        place (its ``observed_at``, then insertion order), however many records share its
        time. Empty when ``scope`` holds no such record."""
        if limit <= 0:
            return []
        op, order = ("<", "DESC") if newest_first else (">", "ASC")
        tail = (
            f"AND (observed_at, seq) {op} (%s, %s) "
            f"ORDER BY observed_at {order}, seq {order} LIMIT %s"
        )
        before = self._before_read()
        async with self._autocommit(wait=False) as c:
            at = await self._visible(c, scope, [record_id], "observed_at, seq")
            if not at:
                return []
            args = [at[0]["observed_at"], int(at[0]["seq"]), limit]
            walk: Walk = (order, (op, *args[:2]), None if needs_python(filters) else limit)
            rows = await self._select(c, scope, filters, tail, args, walk=walk)
        records = [decode_record(r) for r in await self._fresh(rows, before)]
        return [r for r in records if filters.matches(r)] if needs_python(filters) else records

    async def reterm(self, scope: Scope, terms: Mapping[str, Sequence[str]]) -> None:
        async with self._write() as c:
            await self._reterm_live(c, scope, terms)

    async def _reterm_live(self, c: Any, scope: Scope, terms: Mapping[str, Sequence[str]]) -> None:
        """New lexical terms for the user's records in ``terms`` (no new version); the
        user's BM25 statistics are read again."""
        if scope.caller is None and terms:
            await self._reterm(c, scope, terms)
            await self._bump(c, scope.tenant, scope.user)

    def _before_read(self) -> _Before:
        """What is behind the searches as a read begins (see :meth:`_fresh`)."""
        pending = self._behind.pending_rows()
        with self._touch_lock:
            return _Before(pending, self._taken, frozenset(self._in_flight))

    async def _fresh(
        self, rows: builtins.list[dict[str, Any]], before: _Before
    ) -> builtins.list[dict[str, Any]]:
        """``rows`` (read without waiting for the writes behind a search) as those writes
        leave them. A write not pending before the read was committed before it began, so
        the read saw it. A row whose pending writes are touches no transaction had taken
        when the read began, nor took during it, gets them added (the database could not
        hold them); the other rows a pending write changes are read again once it is made."""
        keys = {
            r["seq"]: key for r in rows if (key := (r["tenant"], r["user"], r["id"])) in before.rows
        }
        if not keys:
            return rows
        added: dict[Any, builtins.list[str]] = {}
        with self._touch_lock:
            if self._taken == before.taken:  # no touch left the queue during the read
                for seq, key in builtins.list(keys.items()):
                    if key not in before.in_flight:
                        added[seq] = builtins.list(self._queued.get(key, ()))
                        del keys[seq]
        if added:
            rows = [_with_touches(r, added[r["seq"]]) if r["seq"] in added else r for r in rows]
        if not keys or self._held.n > 0:
            return rows
        async with self._autocommit(wait=list(keys.values())) as c:
            fresh = {
                r["seq"]: r
                for r in await (
                    await c.execute(
                        f"SELECT {_ROW} FROM records WHERE seq = ANY(%s)", (list(keys),)
                    )
                ).fetchall()
            }
        gone = set(keys) - set(fresh)  # purged meanwhile
        return [fresh.get(r["seq"], r) for r in rows if r["seq"] not in gone]


def key_versions_sql(
    scope: Scope, type: str, field: str, value: str
) -> tuple[str, builtins.list[Any]]:
    """The statement of :meth:`key_versions` (``tests/store/test_key_versions_fv18.py`` asks
    PostgreSQL for its plan)."""
    name, name_args = key_sql(name_type(type), name_field(field), value)
    sw, sa = scope_sql(scope)
    rows = f"FROM records WHERE {sw} AND {name}"
    sql = (
        f"SELECT (SELECT id {rows} ORDER BY seq DESC LIMIT 1) AS newest, "
        f"EXISTS (SELECT 1 {rows} AND {LIVE_SQL}) AS live"
    )
    return sql, [*sa, *name_args, *sa, *name_args]


def _select_sql(
    scope: Scope,
    filters: Filters,
    tail: str = "",
    tail_args: Sequence[Any] = (),
    columns: str = _ROW,
    walk: Walk | None = None,
) -> tuple[str, builtins.list[Any]]:
    """``columns`` of the rows of ``scope`` ``filters`` admits, then ``tail``. ``walk`` says
    in the words of a caller's read what ``tail`` orders and keeps (where.py,
    ``records_from``); without it a caller's read finds every record it may read."""
    sw, sa = scope_sql(scope)
    fw, fa = filters_sql(filters)
    source, ra = records_from(scope, filters, walk)  # a caller's: what it may read
    return (
        f"SELECT {columns} FROM {source} WHERE {sw} AND {fw} {tail}",
        [*ra, *sa, *fa, *tail_args],
    )


def _list_sql(q: ListQuery) -> tuple[str, builtins.list[Any]]:
    """The statement of one ``list`` call (every match when a filter runs in Python)."""
    order = "DESC" if q.newest_first else "ASC"
    tail = f"ORDER BY observed_at {order}, seq {order}"
    if needs_python(q.filters):
        return _select_sql(q.scope, q.filters, tail, walk=(order, None, None))
    offset = max(0, q.offset)
    return _select_sql(
        q.scope,
        q.filters,
        tail + " LIMIT %s OFFSET %s",
        (q.limit, offset),
        walk=(order, None, q.limit + offset),
    )


@dataclass(frozen=True, slots=True)
class _Before:
    """What was behind the searches as a read began: the rows pending writes change, how
    many touches transactions had taken, and the rows of those taken but not yet done."""

    rows: frozenset[Hashable]
    taken: int
    in_flight: frozenset[tuple[str, str, str]]


def _with_touches(row: dict[str, Any], stamps: Sequence[str]) -> dict[str, Any]:
    """``row`` as the touches at ``stamps`` will leave it (the touch's own arithmetic:
    ``greatest`` of the encoded times, which sort as they compare)."""
    if not stamps:
        return row
    last = row["last_accessed_at"]
    for stamp in stamps:
        if last is None or stamp > last:
            last = stamp
    count = counted(int(row["access_count"]), len(stamps))
    return {**row, "access_count": count, "last_accessed_at": last}


def _row_keys(scope: Scope, ids: Iterable[str]) -> builtins.list[tuple[str, str, str]]:
    """The keys the writes behind a search name records by (behind.py)."""
    return [(scope.tenant, scope.user, i) for i in ids]


def _vector_counts(prepared: Sequence[_Prepared]) -> Counter[tuple[str, str, int]]:
    return Counter(
        (p.write.record.tenant, p.write.record.user, p.vector[0])
        for p in prepared
        if p.vector is not None
    )


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A write validated and encoded outside any transaction."""

    write: RecordWrite
    values: tuple[Any, ...]  # the INSERT's values: the record's columns, tokens, length
    doc: builtins.list[str]
    vector: tuple[int, Any] | None  # (dims, pgvector value)
    blob: bytes | None = None  # the vector as the cache stores it


def _take_carried(key: tuple[str, str | None, str], blob: bytes | None) -> bool:
    """Whether this transaction carries the cache entry ``key`` holding exactly ``blob``;
    if so it is taken out: the vector row keeps it, and the transaction does not write it."""
    unowned = _CARRIED.get()
    model = key[1]
    if unowned is None or model is None or blob is None:
        return False
    full = (key[0], model, key[2])
    if unowned.get(full) != blob:
        return False
    del unowned[full]
    return True


def _forget_carried(tok: str, keys: Collection[str] | None = None) -> int:
    """Take the user's entries (of ``keys``, or all) out of what this transaction writes
    last: a purge in it must not write them back. How many were taken."""
    unowned = _CARRIED.get()
    if not unowned:
        return 0
    gone = [k for k in unowned if k[0] == tok and (keys is None or k[2] in keys)]
    for k in gone:
        del unowned[k]
    return len(gone)


async def _owned(
    c: Any, cached: Sequence[tuple[str, str | None, str, bytes | None]]
) -> set[tuple[str, str | None, str]]:
    """The ``(scope_tok, model, key)`` of ``cached`` whose cache entry holds that vector."""
    if not cached:
        return set()
    rows = await (await c.execute(_OWNED_KEYS, _columns(cached))).fetchall()
    return {(r["scope_tok"], r["model_id"], r["key"]) for r in rows}


def _entry_order(entry: tuple[str, str | None, str, bytes | None]) -> tuple[str, str, str]:
    return entry[0], entry[1] or "", entry[2]


def _columns(rows: Sequence[tuple[Any, ...]]) -> builtins.list[Any]:
    return [list(col) for col in zip(*rows, strict=True)]


def _cache_columns(entries: Mapping[tuple[str, str, str], bytes]) -> builtins.list[Any]:
    """``_UPSERT_CACHE``'s arrays for ``(scope_tok, model, key) -> vector blob`` entries."""
    rows = sorted((*key, len(blob) // 4, blob) for key, blob in entries.items())
    return [list(col) for col in zip(*rows, strict=True)]


def _no_clash(clash: str | None) -> None:
    if clash is not None:
        raise ValidationError(
            f"record id {clash!r} exists already; nothing was written: use replace() to "
            "update a record, new_id() for a new one"
        )


def _check_turns(writes: Sequence[RecordWrite]) -> None:
    for w in writes:
        if w.record.type is not RecordType.MESSAGE:
            raise ValidationError(
                f"record {w.record.id!r} is a {w.record.type.value}, not a turn; "
                "append_turns takes message records, use insert() for anything else"
            )


class _PgUnitOfWork:
    """The calls of one PostgreSQL transaction (see ``UnitOfWork``); reads that precede a
    write lock the rows they read (``FOR UPDATE``) or the dedup key (advisory lock)."""

    def __init__(self, store: AsyncPostgresStore, conn: Any) -> None:
        self._s = store
        self._c = conn
        self.inserted = 0
        self.vectors: Counter[tuple[str, str, int]] = Counter()
        self._pending: dict[int, int] = {}  # insert_history's parts: the next one's version
        self._analyzed = False  # insert_history's ANALYZE: once a transaction

    async def get(
        self, scope: Scope, record_id: str, *, include_deleted: bool = False
    ) -> MemoryRecord:
        rows = await self._s._visible(self._c, scope, [record_id], lock=True)
        if not rows or (not include_deleted and rows[0]["status"] != RecordStatus.ACTIVE.value):
            raise NotFoundError(f"no record {record_id!r} in scope {scope}")
        return decode_record(rows[0])

    async def find_by_hash(
        self, scope: Scope, content_hash: str, types: Sequence[str]
    ) -> MemoryRecord | None:
        # Two writers deduplicating the same text must not both insert it.
        await self._c.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 13))",
            (f"{scope.tenant}\x1f{scope.user}\x1f{content_hash}",),
        )
        return await self._s._find_by_hash(self._c, scope, content_hash, types)

    async def key_versions(self, scope: Scope, type: str, field: str, value: str) -> KeyVersions:
        # The name's lock first (held to the transaction's end), then the read: a statement
        # of its own, so under READ COMMITTED it sees what the lock's last holder committed.
        sql, args = key_versions_sql(scope, type, field, value)  # checks the names
        await self._c.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 17))",
            ("\x1f".join((self._s.options.schema, scope.tenant, scope.user, type, field, value)),),
        )
        row = await (await self._c.execute(sql, args)).fetchone()
        return KeyVersions(live=bool(row["live"]), newest=row["newest"])

    async def insert(self, writes: Sequence[RecordWrite]) -> None:
        prepared = self._s._prepare(writes)
        await self._s._insert(self._c, prepared)
        self.inserted += len(writes)
        self.vectors.update(_vector_counts(prepared))

    async def append_turns(self, writes: Sequence[RecordWrite]) -> None:
        _check_turns(writes)
        await self.insert(writes)

    async def replace(self, scope: Scope, write: RecordWrite, *, expected_version: int) -> None:
        await self._s._replace(self._c, scope, self._s._prepare([write])[0], expected_version)

    async def set_status(
        self, scope: Scope, ids: Sequence[str], status: RecordStatus, at: datetime
    ) -> builtins.list[str]:
        return await self._s._set_status(self._c, scope, ids, status, at)

    async def reterm(self, scope: Scope, terms: Mapping[str, Sequence[str]]) -> None:
        await self._s._reterm_live(self._c, scope, terms)

    async def enqueue(self, jobs: Sequence[Job]) -> None:
        await self._s._enqueue(self._c, jobs)

    async def insert_history(
        self,
        histories: Sequence[Sequence[MemoryRecord]],
        newer: Sequence[MemoryRecord | None] | None = None,
    ) -> None:
        for past in histories:
            for version in past:
                _no_nul(version)
        for after in newer or ():
            if after is not None:
                _no_nul(after)
        if not self._analyzed and self.inserted >= ANALYZE_IMPORT_AFTER:
            # An import: one transaction of many inserts into a table whose statistics
            # (refreshed on a connection of their own, which cannot see these rows) know
            # fewer rows than it added; the planner then hashed a scan of every row for
            # the read below, longer at each page (20 -> 215-518 ms at 10,000 records,
            # sessions 33-34). ANALYZE in the transaction counts its own rows. It holds
            # SHARE UPDATE EXCLUSIVE on records until the commit (reads and writes go on;
            # autovacuum and another ANALYZE skip the table meanwhile); SKIP_LOCKED: never
            # waits for one under way.
            self._analyzed = True
            row = await (
                await self._c.execute(
                    "SELECT reltuples FROM pg_class WHERE oid = 'records'::regclass"
                )
            ).fetchone()
            if row is None or float(row["reltuples"]) < self.inserted:
                await self._c.execute("ANALYZE (SKIP_LOCKED) records")
        await dump.insert_history(self._c, histories, newer, self._pending)

    async def append_audit(self, events: Sequence[AuditEvent]) -> None:
        """Audit events in this transaction: they commit, or roll back, with its writes."""
        await audit.append(self._c, events)


def _python_filters(f: Filters) -> bool:
    """Filters the vector cache cannot apply as numpy masks (SQL or Python applies them)."""
    return bool(
        f.metadata
        or f.tags_any is not None
        or f.tags_all
        or f.ids is not None
        or f.sources is not None
        or f.observed_after
        or f.observed_before
        or f.valid_at is not None
    )


async def _table_exists(c: Any, name: str) -> bool:
    """Whether ``name`` is a table of the store's schema (the connection's search path)."""
    sql = "SELECT to_regclass(format('%%I.%%I', current_schema(), %s::text)) IS NOT NULL AS ok"
    row = await (await c.execute(sql, (name,))).fetchone()
    return bool(row["ok"])
