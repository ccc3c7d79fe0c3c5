"""The SQLite store: the embedded default and the reference every other store must match.

One file in WAL mode holds records, their history, vectors, a lexical index, the
embedding cache and the job queue. The connection runs in autocommit mode and every write
method is one ``BEGIN IMMEDIATE`` transaction, so a write applies whole or not at all and
two processes sharing a file serialise their writes instead of failing half-way.

Reads do not queue behind that connection: each thread reads through its own connection
(``query_only``, so the read path cannot write), in one read transaction per call, and WAL
lets any number of them read while one writes. Only ``:memory:`` (one connection is one
database) reads through the write connection under its lock.
"""

from __future__ import annotations

import builtins
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any, TypeVar

import numpy as np

from ...audit import AuditEvent
from ...errors import (
    NotFoundError,
    SchemaVersionError,
    StoreError,
    ValidationError,
    closed_store,
)
from ...filters import Filters
from ...jobs import DONE_SWEEP_BATCH, Fence, Job, current_fence
from ...records import MemoryRecord, RecordStatus, RecordType
from ...scope import Scope
from ...validation import MAX_COUNT, check_version, counted
from .. import (
    counted_writes,
    one_model,
    purged_reader,  # the module: it imports this package (history)
    shared_sql,
)
from .. import quota_counters as qc
from ..base import (
    CacheEntry,
    Candidate,
    PurgeReport,
    RecordDump,
    RecordWrite,
    StoreStats,
    UnitOfWork,
    Vector,
)
from ..compaction import CompactReport
from ..history_parts import PartSpool
from ..key_rows import KeyRow
from ..past_versions import check_finished
from ..types import (
    KeyVersions,
    ListQuery,
    RecordView,
    StoredVector,
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
from ..vector_bound import VECTOR_CACHE_ROWS, check_vector_cache_rows
from ..version_numbers import readable_count
from . import cites, dump, lexical, outbox, roles, scrub
from .codec import (
    COLUMNS,
    VIEW_COLUMNS,
    decode_record,
    decode_time,
    decode_vector,
    decode_view,
    encode_record,
    encode_time,
    encode_vector,
    scope_token,
)
from .failures import BUSY_TIMEOUT_S as _BUSY_TIMEOUT_S
from .failures import duplicate, failure, operator_needed, out_of_descriptors, transient
from .history import (
    COUNTERS,
    decode_delta,
    encode_delta,
    parts_of,
    reverse_delta,
    versions_by_id,
)
from .migrations import SCHEMA_VERSION, migrate, schema_version
from .vectors import PURGE_EPOCH, PURGES, VectorCache, top_k
from .where import (
    LIVE_SQL,
    Walk,
    filters_index,
    filters_sql,
    in_list,
    key_indexes,
    key_sql,
    needs_python,
    records_from,
    scope_sql,
)

__all__ = ["SQLiteStore"]

_log = logging.getLogger(__name__)

_COLS = ", ".join(COLUMNS)
_INSERT = f"INSERT INTO records ({_COLS}) VALUES ({', '.join('?' * len(COLUMNS))})"
# Counters are the store's, not the writer's: a replace keeps the stored ones.
_COUNTER_COLUMNS = ("access_count", "last_accessed_at")
_UPDATE_COLUMNS = tuple(c for c in COLUMNS[1:] if c not in _COUNTER_COLUMNS)
_UPDATE_AT = tuple(COLUMNS.index(c) for c in _UPDATE_COLUMNS)
_UPDATE = f"UPDATE records SET {', '.join(c + ' = ?' for c in _UPDATE_COLUMNS)} WHERE seq = ?"
# A transaction opened inside another on the same thread: SQLite cannot nest them (and on
# PostgreSQL it would be a second connection and a transaction of its own).
_NESTED = (
    "a transaction was opened while this thread already has one open on this store; SQLite "
    "cannot nest them (PostgreSQL would make it a second, separate transaction, not undone "
    "with the first and waiting forever for a row the first wrote): make the write through "
    "the open transaction (its unit of work), or after it ends"
)
_FLUSH_AFTER_S = 1.0  # buffered counters are written at most this late (on the next call)
_FLUSH_AT = 512  # ... or once this many records have buffered increments
_MASKED = "type, agent, session, visibility, status, superseded_by, importance"


def _masked(row: sqlite3.Row) -> tuple[object, ...]:
    return (
        row["type"],
        row["agent"],
        row["session"],
        row["visibility"],
        row["status"],
        row["superseded_by"],
        float(row["importance"]),
    )


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


_BUMP = (
    "INSERT INTO scope_generation (scope_tok, generation) VALUES (?, 1) "
    "ON CONFLICT (scope_tok) DO UPDATE SET generation = generation + 1"
)
# ``rev``: the user's next change number, so the vector cache loads what changed (vectors.py)
_NEXT_REV = "(SELECT coalesce(max(rev), 0) + 1 FROM vectors WHERE tenant = ?2 AND user = ?3)"
_UPSERT_VECTOR = (
    "INSERT INTO vectors (seq, tenant, user, model, dims, own, vector, rev) "
    f"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, {_NEXT_REV}) ON CONFLICT (seq) DO "
    "UPDATE SET model = excluded.model, dims = excluded.dims, "
    "own = excluded.own, vector = excluded.vector, rev = excluded.rev"
)
# A record whose masked columns changed: its vector row is loaded again by the cache.
_TOUCH_VECTOR = f"UPDATE vectors SET rev = {_NEXT_REV} WHERE seq = ?1"
_ARCHIVE = "INSERT INTO record_history (seq, version, delta) VALUES (?, ?, ?)"
# The index of readers (store/purged_reader.py; migrations.py v16): a row per reader each
# version written names, in its transaction.
_READERS = "INSERT OR IGNORE INTO rr VALUES (?, ?, ?, ?)"
_ACCESS_AT = COLUMNS.index("access")
_VISIBILITY_AT = COLUMNS.index("visibility")
_OBSERVED_AT = COLUMNS.index("observed_at")
_UPSERT_CACHE = (
    "INSERT INTO embedding_cache (scope_tok, model_id, key, dims, vector) "
    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (scope_tok, model_id, key) DO "
    "UPDATE SET dims = excluded.dims, vector = excluded.vector"
)
_PAGE_SIZE = 8192
# The store checkpoints its WAL itself once it holds this many pages (SQLite's own default
# for ``wal_autocheckpoint``), after the commit and outside the read gate (_checkpoint_due).
_CHECKPOINT_PAGES = 1000
_CHUNK = 500  # ids per IN (...) list
_T = TypeVar("_T")


def _chunks(items: Sequence[_T]) -> Iterator[Sequence[_T]]:
    for i in range(0, len(items), _CHUNK):
        yield items[i : i + _CHUNK]


def key_versions_sql(scope: Scope, type: str, field: str, value: str) -> tuple[str, list[Any]]:
    """The statement of :meth:`SQLiteStore.key_versions`' state: the name's last id and
    whether a live record holds it (``tests/store/test_key_versions_fv18.py`` asks SQLite
    for its plan)."""
    kind, field = name_type(type), name_field(field)
    name = key_sql(kind, field)
    every, live = key_indexes(kind, field)
    sw, sa = scope_sql(scope)
    where = f"WHERE {sw} AND {name}"
    return (
        f"SELECT (SELECT id FROM records {every} {where} ORDER BY seq DESC LIMIT 1), "
        f"EXISTS (SELECT 1 FROM records {live} {where} AND {LIVE_SQL})",
        [*sa, value, *sa, value],
    )


def _enter_wal(conn: sqlite3.Connection) -> None:
    """``PRAGMA journal_mode = WAL``, waiting up to the busy timeout for other openers.

    Turning a file to WAL escalates a shared lock to an exclusive one, and SQLite answers
    "database is locked" at once, without its busy handler, when another connection holds
    a lock it must wait for: a process that opened a new file at the same moment as
    another (the processes of ``serve --workers``, a worker beside its server) failed.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_S
    pause = 0.002
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            waiting = "locked" in str(exc) or "busy" in str(exc)
            if not waiting or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _manual_checkpoints(conn: sqlite3.Connection) -> tuple[int, str]:
    """Turn SQLite's automatic checkpoint off on the write connection (the store runs it
    after the commit: :meth:`SQLiteStore._checkpoint_due`) and cap the WAL file at the
    threshold, so that its size tells how many frames it holds: SQLite reuses a WAL from
    its start after a checkpoint without shrinking the file. The threshold in bytes, and
    the WAL's absolute path (a relative one would follow a later ``chdir``)."""
    limit = _CHECKPOINT_PAGES * int(conn.execute("PRAGMA page_size").fetchone()[0])
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute(f"PRAGMA journal_size_limit = {limit}")
    main = conn.execute("PRAGMA database_list").fetchone()[2]
    return limit, f"{main}-wal"


class SQLiteStore:
    """A :class:`~memstrata.store.base.Store` in one SQLite file (or ``:memory:``)."""

    stores_nul = True  # the store refuses NUL in new text; records from before hold it

    def __init__(
        self,
        path: str = ":memory:",
        *,
        url: str | None = None,
        vector_cache_rows: int = VECTOR_CACHE_ROWS,
    ) -> None:
        vector_cache_rows = check_vector_cache_rows(vector_cache_rows)  # before the file opens
        self.url = url or f"sqlite:///{path}"
        self.path = path
        # a caller's unlimited quota counts go with its next write (counted_writes.py)
        self.counts_home: counted_writes.Home | None = counted_writes.Home()
        try:
            conn = sqlite3.connect(
                path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            spent = out_of_descriptors()  # SQLite says "unable to open database file"
            raise StoreError(
                f"cannot open SQLite database {path!r}: {exc}; "
                + (
                    f"{spent}: close stores, files or connections it does not need, or "
                    "raise its limit (ulimit -n), then retry"
                    if spent is not None
                    else "check that the directory exists and is writable"
                ),
                retryable=spent is not None,
            ) from exc
        try:
            # Check the version before any pragma writes to the file: refuse it untouched.
            if schema_version(conn) > SCHEMA_VERSION:
                migrate(conn, path=path)  # raises SchemaVersionError
            conn.row_factory = sqlite3.Row
            if (
                schema_version(conn) == 0
                and conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
            ):
                # A new file: 8 kB pages waste less around 1.5 kB vector rows than 4 kB
                # ones (bench/storage.py). Only possible before the first table exists.
                conn.execute(f"PRAGMA page_size = {_PAGE_SIZE}")
            _enter_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            # Deleted rows are overwritten with zeros, not left in free space: a purge must
            # leave no byte of what it destroyed (forget2: single-record purge).
            conn.execute("PRAGMA secure_delete = ON")
            conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
            migrate(conn, path=path)  # its commits still checkpoint as SQLite does
            wal = _manual_checkpoints(conn) if path != ":memory:" else None
        except sqlite3.Error as exc:
            conn.close()
            if transient(exc):  # a store another process holds
                raise StoreError(
                    f"{path!r} is locked by another process ({exc}): wait for it to finish "
                    "(or stop it) and open the store again",
                    retryable=True,
                ) from exc
            if operator_needed(exc):  # damaged, read-only, a full or failing disk
                where = f"SQLite store {path!r}"
                raise failure(exc, where, "cannot be opened", writing=True, path=path) from exc
            raise StoreError(
                f"cannot use {path!r} as a memstrata store: {exc}; point the URL "
                "at a memstrata store file, or at a new file to create one"
            ) from exc
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self._wal = wal  # (bytes of WAL past which a write checkpoints it, the WAL's path)
        self._lock = threading.RLock()
        self._local = threading.local()  # this thread's read connection
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._closed = False
        self._unended = False  # a failed write's ROLLBACK failed too: the next write retries it
        self._counter_lock = threading.Lock()  # the counter buffers below
        self._flusher: ThreadPoolExecutor | None = None
        # bounded: least recently used dropped; searches keep to the store's model
        self._vectors = VectorCache(vector_cache_rows, one_model.ModelPin(repr(self.path)))
        # Buffered counters (see Counters): seq -> (accesses, latest access); (seq, name) ->
        # delta. Written by the next write transaction, flush_counters() or close().
        self._touches: dict[int, tuple[int, datetime]] = {}
        self._counts: dict[tuple[int, str], int] = {}
        self._pending_since: float | None = None
        # Buffered embedding-cache entries, (scope_tok, model, key) -> vector bytes: a search
        # embeds its query and caches it, and that must not make the read path wait for the
        # write lock. Written at the end of the next write transaction (the ones a record
        # insert takes over are never written: the record keeps the vector, ``own``).
        self._cache: dict[tuple[str, str, str], bytes] = {}
        self._cache_inflight: dict[tuple[str, str, str], bytes] | None = None
        self._inflight: (
            tuple[dict[int, tuple[int, datetime]], dict[tuple[int, str], int]] | None
        ) = None
        self._gate = _Gate()
        self._flushing = False
        if path != ":memory:" and scrub.owed(conn) is not None:
            # A purge was killed after its commit, before its bytes left the files: finish
            # that first (scrub.py). Not fatal to the open: the marker stays for the next.
            try:
                self._scrub()
            except StoreError as exc:  # SQLite's error, mapped (_scrub)
                _log.warning("memstrata: a purge's owed VACUUM/checkpoint failed: %s", exc)

    def __repr__(self) -> str:
        return f"SQLiteStore({self.url!r})"

    def close(self) -> None:
        if self._closed:  # a second close() does nothing
            return
        if self._flusher is not None:
            self._flusher.shutdown(wait=True)
        unwritten: StoreError | None = None
        try:
            with self._lock:
                if self._touches or self._counts or self._cache:
                    self.flush_counters()
        except StoreError as exc:
            unwritten = exc
        finally:
            self._vectors.clear()
            # Reads under way on other threads end first: closing a connection while a
            # thread reads from it crashes the process (a search whose embedding failed
            # left its lexical read running while the caller closed the memory).
            # Not holding the write lock meanwhile, so a reader never waits on us.
            with self._gate.exclusive(), self._readers_lock:
                self._closed = True
                for reader in self._readers:
                    reader.close()
                self._readers.clear()
            with self._lock:
                self._conn.close()
        if unwritten is not None:
            # Closed all the same: not "could not commit ... then retry" (a second close()
            # does nothing). What is lost is what a crash may lose (Counters).
            cause = unwritten.__cause__
            if not isinstance(cause, sqlite3.Error):
                raise unwritten
            raise failure(
                cause,
                f"SQLite store {self.path!r}",
                "closed without writing its buffered access counters and query cache entries",
                writing=True,
                undone="they are lost, the records are not affected",
            ) from cause

    # --- transactions --------------------------------------------------------------------
    @contextmanager
    def _tx(self, begin: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise closed_store(self)
            if self._unended:
                self._end_unended()
            if self._conn.in_transaction:  # this thread's own: the lock is reentrant
                raise StoreError(_NESTED)
            try:
                self._conn.execute(begin)
            except sqlite3.Error as exc:
                raise self._failed(exc, "could not start a transaction") from exc
            writing = begin == "BEGIN IMMEDIATE"
            if writing:
                self._check_schema()
            # A job's write first checks, under the write lock, that its claim still stands:
            # a purge (its own write transaction) deleted or took back the user's jobs
            # before, or waits for this one to commit (jobs.Fence).
            fence = current_fence() if writing else None
            if fence is not None and not outbox.holds_claim(
                self._conn, fence.job_id, fence.lease_token
            ):
                self._rollback()
                raise fence.refused()
            # Every write transaction also writes the buffered counters. Until it commits
            # they are "in flight": readers on other connections add them to what they read,
            # and the commit waits for those readers (see _Gate) so none counts them twice.
            pending = self._take_counters() if writing else None
            # The job's own cache entries are written with it, under its checked claim.
            mine = self._carry(fence)
            # the caller's quota counts (counted_writes.py): claimed last, committed with
            # this write
            counted = counted_writes.NOTHING
            try:
                if pending is not None:
                    self._write_counters(self._conn, *pending)
                yield self._conn
                if pending is not None:
                    self._write_cache(self._conn)
                if writing:
                    counted = counted_writes.claim(self.counts_home)
                if counted:
                    takes = counted_writes.merged(counted.mine)
                    shared_sql.count_sql(self._conn, takes, ph="?", lock=False)
            except BaseException as exc:
                counted_writes.settle(counted, committed=False)
                self._rollback()
                if pending is not None:
                    self._give_back_counters(*pending, carried=(fence, mine))
                if one_model.refusal(exc):  # a vector of another model (one_model.py)
                    raise self._refused_model() from None
                if isinstance(exc, sqlite3.Error):  # what happened and what to do
                    raise self._failed(exc, "failed") from exc
                raise
            try:
                if pending is not None and (pending[0] or pending[1]):
                    with self._gate.exclusive():
                        self._conn.execute("COMMIT")
                        self._inflight = None
                else:
                    self._conn.execute("COMMIT")
                self._cache_inflight = None
            except sqlite3.Error as exc:
                counted_writes.settle(counted, committed=False)
                self._rollback()
                if pending is not None:
                    self._give_back_counters(*pending, carried=(fence, mine))
                raise self._failed(exc, "could not commit") from exc
            counted_writes.settle(counted, committed=True)
            if writing:
                self._checkpoint_due()
        if begin == "BEGIN IMMEDIATE" and self._pending_since is not None:
            self._buffered()

    def _checkpoint_due(self) -> None:
        """After a write's commit, under the write lock but not the read gate: copy the WAL
        into the file once it holds :data:`_CHECKPOINT_PAGES` pages. SQLite's automatic
        checkpoint ran inside ``COMMIT``, so inside the gate, and held every search 12-27 ms
        behind it (docs/measurements.md, session 33). One ``stat`` per write (microseconds;
        ``journal_size_limit`` keeps the file's size its frames'). ``PASSIVE`` waits for
        no one; one that fails is logged and the next write tries again: the write it
        follows is committed."""
        if self._wal is None:
            return
        limit, wal = self._wal
        try:
            if os.stat(wal).st_size <= limit:
                return
            self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except FileNotFoundError:  # no WAL: nothing to copy
            return
        except (OSError, sqlite3.Error) as exc:
            _log.warning(
                "memstrata: SQLite store %r: checkpointing its WAL failed (%s); the write "
                "is committed, the next write tries again",
                self.path,
                exc,
            )

    def _check_schema(self) -> None:
        """Refuse a write once a newer memstrata has migrated the file under this process
        (its steps re-index what older code wrote: session 31 saw a process of schema 19 go
        on writing turns under the old reply rule after one of schema 20 migrated the file,
        silently). One read of the file's header, under the write lock just taken."""
        try:
            found = schema_version(self._conn)
        except sqlite3.Error as exc:
            self._rollback()
            raise self._failed(exc, "could not start a transaction") from exc
        if found > SCHEMA_VERSION:
            self._rollback()
            raise SchemaVersionError(
                f"SQLite store {self.path!r} was migrated to schema version {found} by a "
                f"newer memstrata while this process had it open (this one knows up to "
                f"{SCHEMA_VERSION}); nothing of this call was written: restart this process "
                "with that memstrata (pip install -U memstrata)"
            )

    def _rollback(self) -> None:
        """End the failed transaction, keeping the error that failed it. SQLite has already
        rolled it back itself after some errors (a full disk, an I/O error, out of memory):
        a ROLLBACK then raised "no transaction is active", raw, in place of that error. A
        ROLLBACK that fails (the disk failing) is logged, and the next write retries it
        before it begins; until then this connection writes nothing."""
        if not self._conn.in_transaction:
            return
        try:
            self._conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            self._unended = True
            _log.warning(
                "memstrata: SQLite store %r: ending a failed write's transaction failed "
                "too (%s); the next write ends it first",
                self.path,
                exc,
            )

    def _end_unended(self) -> None:
        """The ROLLBACK a failed write could not run, before the next write begins."""
        try:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            raise self._failed(exc, "could not end an earlier failed write") from exc
        self._unended = False

    def _failed(self, exc: sqlite3.Error, doing: str, *, writing: bool = True) -> StoreError:
        """SQLite's error in a transaction (rolled back) as a :class:`StoreError` that says
        what happened, what to do and whether retrying helps (failures.py); the driver's
        error is its cause."""
        where = f"SQLite store {self.path!r}"
        return failure(exc, where, doing, writing=writing, path=self.path)

    def _write(self) -> Any:
        return self._tx("BEGIN IMMEDIATE")

    def _read(self) -> Any:
        if self.path == ":memory:":
            return self._tx("BEGIN")
        return self._read_tx()

    def _reader(self) -> sqlite3.Connection:
        """This thread's read connection (opened on first use)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        try:
            conn = sqlite3.connect(
                self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )  # closed by close(), any thread
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
            conn.execute("PRAGMA query_only = ON")
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            raise self._failed(exc, "could not open a read connection", writing=False) from exc
        with self._readers_lock:
            if self._closed:
                conn.close()
                raise closed_store(self)
            self._readers.append(conn)
        self._local.conn = conn
        return conn

    @contextmanager
    def _read_tx(self) -> Iterator[sqlite3.Connection]:
        """One read transaction on this thread's connection: every statement of the call
        sees the same snapshot, and no writer waits for it (WAL)."""
        conn = self._reader()
        with self._gate.shared():
            if self._closed:
                raise closed_store(self)
            try:
                conn.execute("BEGIN")
            except sqlite3.Error as exc:
                raise self._failed(exc, "could not start a read", writing=False) from exc
            try:
                yield conn
            except sqlite3.Error as exc:  # a damaged page, a lock, a failing disk
                raise self._failed(exc, "could not read", writing=False) from exc
            finally:
                # nothing was written: ending the snapshot is all. SQLite has ended it
                # itself after some errors (an I/O error): ROLLBACK would then raise.
                if conn.in_transaction:
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.Error as exc:
                        raise self._failed(exc, "could not end a read", writing=False) from exc

    def transaction(self) -> AbstractContextManager[UnitOfWork]:
        return self._unit_of_work()

    @contextmanager
    def _unit_of_work(self) -> Iterator[UnitOfWork]:
        with self._write() as c:
            uow = _SQLiteUnitOfWork(self, c)
            yield uow
            check_finished(uow._pending)  # a history given in parts: every part came

    def _refused_model(self) -> StoreError:
        """The error for a vector the store's trigger refused (caller holds the lock)."""
        meta = dict(
            self._conn.execute(
                "SELECT key, value FROM meta WHERE key IN (?, ?)",
                (one_model.MODEL_KEY, one_model.DIMS_KEY),
            ).fetchall()
        )
        return one_model.refused(
            repr(self.path), meta.get(one_model.MODEL_KEY), meta.get(one_model.DIMS_KEY)
        )

    # --- metadata --------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        with self._read() as c:
            row = c.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        value = None if row is None else str(row[0])
        self._vectors.model.saw(key, value, read=True)
        return value

    def set_meta(self, key: str, value: str) -> None:
        with self._write() as c:
            c.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) "
                "DO UPDATE SET value = excluded.value",
                (key, value),
            )
        self._vectors.model.saw(key, value)

    # --- quota counters (memstrata.store.quota_counters; BEGIN IMMEDIATE makes them atomic) -
    def take_counters(self, takes: Sequence[qc.Take]) -> qc.Refusal | None:
        with self._write() as c:
            return shared_sql.take_sql(c, takes, ph="?", lock=False)

    def add_counters(self, takes: Sequence[qc.Take]) -> None:
        with self._write() as c:
            shared_sql.add_sql(c, takes, ph="?", lock=False)

    def counter_values(self, keys: Sequence[str]) -> dict[str, int]:
        with self._read() as c:
            return shared_sql.values_sql(c, keys, ph="?")

    def forget_counters(self, keys: Sequence[str]) -> None:
        with self._write() as c:
            shared_sql.forget_sql(c, keys, ph="?")

    def sweep_counters(self, now_us: int, limit: int = qc.SWEEP_BATCH) -> int:
        with self._write() as c:
            return shared_sql.sweep_sql(c, now_us, limit, ph="?")

    def lease(self, key: str, token: str, now_ms: int, until_ms: int) -> bool:
        with self._write() as c:
            return shared_sql.lease_sql(c, key, token, now_ms, until_ms, ph="?", lock=False)

    def release(self, key: str, token: str) -> None:
        with self._write() as c:
            shared_sql.release_sql(c, key, token, ph="?", lock=False)

    def count_tenant_records(self, tenant: str) -> int:
        with self._read() as c:
            return shared_sql.tenant_records_sql(c, tenant, ph="?")

    # --- helpers -----------------------------------------------------------------------------
    @staticmethod
    def _visible(
        c: sqlite3.Connection, scope: Scope, ids: Sequence[str], columns: str = "*"
    ) -> list[sqlite3.Row]:
        where, args = scope_sql(scope)
        rows: list[sqlite3.Row] = []
        for chunk in _chunks(list(dict.fromkeys(ids))):
            sql, vals = in_list("id", chunk)
            rows += c.execute(
                f"SELECT {columns} FROM records WHERE {sql} AND {where}", vals + args
            ).fetchall()
        return rows

    @staticmethod
    def _check_vector(r: MemoryRecord, vector: Vector) -> bytes:
        blob = encode_vector(vector)
        if r.embedding_dims is not None and len(blob) // 4 != r.embedding_dims:
            raise ValidationError(
                f"record {r.id!r} says embedding_dims={r.embedding_dims} but its vector has "
                f"{len(blob) // 4} dimensions; embed it with the store's model"
            )
        return blob

    @staticmethod
    def _index(
        c: sqlite3.Connection, seq: int, tenant: str, user: str, terms: Sequence[str]
    ) -> None:
        """Give record ``seq`` these lexical terms: nothing is written when they are the
        ones it has (a replace that keeps the text, a reterm of an unchanged record)."""
        old = lexical.indexed_terms(c, [seq]).get(seq)
        if old == lexical.terms_text(terms):
            return
        if old is not None:
            lexical.unindex(c, [seq])
        lexical.index(c, [(seq, tenant, user, terms)])

    @staticmethod
    def _bump(c: sqlite3.Connection, tenant: str, user: str) -> None:
        c.execute(_BUMP, (scope_token(tenant, user),))

    # --- records -------------------------------------------------------------------------------
    def insert(self, writes: Sequence[RecordWrite]) -> None:
        with self._write() as c:
            self._insert(c, writes)

    def append_turns(self, writes: Sequence[RecordWrite]) -> None:
        with self._write() as c:
            self._append_turns(c, writes)

    def _append_turns(self, c: sqlite3.Connection, writes: Sequence[RecordWrite]) -> None:
        _check_turns(writes)
        self._insert(c, writes)

    def _insert(self, c: sqlite3.Connection, writes: Sequence[RecordWrite]) -> None:
        """Insert records with their index rows: the records one by one (each needs its
        ``seq``, and a clash must name its id), then the lexical rows, the embedding-cache
        moves and the vectors in one ``executemany`` each (a batch of turns is thousands of
        statements otherwise). A new ``seq`` was never used (``AUTOINCREMENT``), so no old
        lexical row can hold it: nothing is looked up first, as ``replace`` must."""
        blobs = [
            self._check_vector(w.record, w.vector) if w.vector is not None else None for w in writes
        ]  # every vector checked before anything is written
        seqs = self._insert_rows(c, [w.record for w in writes])
        lexical.index(
            c,
            [
                (seq, w.record.tenant, w.record.user, w.terms)
                for seq, w in zip(seqs, writes, strict=True)
            ],
        )
        owned = self._owned_cache_entries(
            c, [(w.record, blob) for w, blob in zip(writes, blobs, strict=True)]
        )
        c.executemany(
            _UPSERT_VECTOR,
            [
                (
                    seq,
                    w.record.tenant,
                    w.record.user,
                    w.record.embedding_model,
                    len(blob) // 4,
                    int(i in owned),
                    blob,
                )
                for i, (seq, w, blob) in enumerate(zip(seqs, writes, blobs, strict=True))
                if blob is not None
            ],
        )

    def _insert_rows(self, c: sqlite3.Connection, records: Sequence[MemoryRecord]) -> list[int]:
        """Insert the records' rows in one ``executemany``; their ``seq`` values, in order.

        ``AUTOINCREMENT`` gives each new row one more than the largest ``seq`` the table ever
        held (``sqlite_sequence``), and this connection holds the write lock, so the rows of
        one batch get consecutive values after it (checked against ``last_insert_rowid``)."""
        if not records:
            return []
        row = c.execute("SELECT seq FROM sqlite_sequence WHERE name = 'records'").fetchone()
        before = int(row[0]) if row is not None else 0
        try:
            c.executemany(_INSERT, [encode_record(r) for r in records])
            c.executemany(_READERS, purged_reader.reader_rows(records))  # store/purged_reader.py
            c.executemany(_READERS, roles.role_rows(records))  # the role shares (roles.py)
            cites.insert(c, records)  # what they cite (cites.py)
        except sqlite3.IntegrityError as exc:
            if not duplicate(exc):  # a trigger or another constraint: a StoreError (_tx)
                raise
            raise ValidationError(
                f"record id {self._clashing_id(c, records, before)!r} exists already (or "
                "twice in this batch); nothing was written: use replace() to update a "
                "record, new_id() for a new one"
            ) from None
        last = int(c.execute("SELECT last_insert_rowid()").fetchone()[0])
        if last - before != len(records):
            raise StoreError(  # cannot happen with AUTOINCREMENT; never index the wrong rows
                f"SQLite numbered {len(records)} new records {before + 1}..{last}; nothing "
                "was written"
            )
        seqs = list(range(before + 1, last + 1))
        c.executemany(  # the public ones' rows (roles.py), in their listing's order
            _READERS,
            roles.public_rows(
                (r, str(encode_time(r.observed_at)), seq)
                for r, seq in zip(records, seqs, strict=True)
            ),
        )
        return seqs

    @staticmethod
    def _clashing_id(c: sqlite3.Connection, records: Sequence[MemoryRecord], before: int) -> str:
        """The first id of ``records`` stored already for its user (by an earlier write:
        ``seq <= before``; the failed batch's first rows are still there until the rollback)
        or twice in them."""
        seen: set[tuple[str, str, str]] = set()
        for r in records:
            key = (r.tenant, r.user, r.id)
            hit = c.execute(
                "SELECT 1 FROM records WHERE tenant = ? AND user = ? AND id = ? AND seq <= ?",
                (*key, before),
            ).fetchone()
            if key in seen or hit is not None:
                return r.id
            seen.add(key)
        return records[0].id

    def _owned_cache_entries(
        self, c: sqlite3.Connection, items: Sequence[tuple[MemoryRecord, bytes | None]]
    ) -> set[int]:
        """Positions (in ``items``) of the vectors that move out of the embedding cache:
        the cache holds the very same vector for the record's text, so the record keeps it
        (``own = 1``) and the entry is deleted, as ``_store_vector`` does one at a time; of
        several records with one text, the first takes the entry."""
        wanted: dict[tuple[str, str, str], list[int]] = {}
        for i, (r, blob) in enumerate(items):
            if blob is not None and r.embedding_model is not None:
                wanted.setdefault(
                    (scope_token(r.tenant, r.user), r.embedding_model, r.content_hash), []
                ).append(i)
        by_owner: dict[tuple[str, str], list[str]] = {}
        for tok, model, key in wanted:
            by_owner.setdefault((tok, model), []).append(key)
        owned: set[int] = set()
        moved: list[tuple[str, str, str]] = []
        with self._counter_lock:  # entries buffered until this transaction: never written
            buffered = self._cache_inflight or {}
            for entry, indexes in wanted.items():
                blob = buffered.get(entry)
                first = next((i for i in indexes if items[i][1] == blob), None)
                if first is not None:
                    owned.add(first)
                    moved.append(entry)  # an older row of the key may exist: deleted below
                    del buffered[entry]
        for (tok, model), keys in by_owner.items():
            taken = set(moved)
            keys = [k for k in keys if (tok, model, k) not in taken]
            for chunk in _chunks(keys):
                sql, vals = in_list("key", chunk)
                for key, blob in c.execute(
                    f"SELECT key, vector FROM embedding_cache WHERE scope_tok = ? AND "
                    f"model_id = ? AND {sql}",
                    [tok, model, *vals],
                ):
                    first = next(
                        (i for i in wanted[(tok, model, key)] if items[i][1] == bytes(blob)), None
                    )
                    if first is not None:
                        owned.add(first)
                        moved.append((tok, model, key))
        c.executemany(
            "DELETE FROM embedding_cache WHERE scope_tok = ? AND model_id = ? AND key = ?", moved
        )
        return owned

    def _store_vector(
        self, c: sqlite3.Connection, seq: int, r: MemoryRecord, vector: Vector
    ) -> None:
        """Write the record's vector. When the embedding cache holds the very same vector
        for the record's text, the cache entry moves here (``own = 1``): the vector is kept
        once, and the cache still finds it through the record (``cached_vectors``)."""
        blob = self._check_vector(r, vector)
        own = 0
        if r.embedding_model is not None:
            key = (scope_token(r.tenant, r.user), r.embedding_model, r.content_hash)
            hit = c.execute(
                "SELECT vector FROM embedding_cache WHERE scope_tok = ? AND "
                "model_id = ? AND key = ?",
                key,
            ).fetchone()
            if hit is not None and bytes(hit[0]) == blob:
                c.execute(
                    "DELETE FROM embedding_cache WHERE scope_tok = ? AND model_id = ? AND key = ?",
                    key,
                )
                own = 1
        c.execute(
            _UPSERT_VECTOR, (seq, r.tenant, r.user, r.embedding_model, len(blob) // 4, own, blob)
        )

    def get(self, scope: Scope, record_id: str, *, include_deleted: bool = False) -> MemoryRecord:
        with self._read() as c:
            return self._get(c, scope, record_id, include_deleted=include_deleted)

    def _get(
        self, c: sqlite3.Connection, scope: Scope, record_id: str, *, include_deleted: bool = False
    ) -> MemoryRecord:
        rows = self._visible(c, scope, [record_id])
        if not rows or (not include_deleted and rows[0]["status"] != RecordStatus.ACTIVE.value):
            raise NotFoundError(f"no record {record_id!r} in scope {scope}")
        return self._dec(rows[0])

    def get_many(self, scope: Scope, ids: Sequence[str]) -> list[MemoryRecord]:
        if not ids:
            return []  # no read transaction for nothing (a context's facts may find none)
        with self._read() as c:
            found = {row["id"]: row for row in self._visible(c, scope, ids)}
            return [self._dec(found[i]) for i in dict.fromkeys(ids) if i in found]

    def citing(self, scope: Scope, ids: Sequence[str]) -> builtins.list[str]:
        """The user's records whose current version cites one of ``ids`` (cites.py)."""
        if scope.caller is not None or not ids:  # a purge is the owner's
            return []
        with self._read() as c:
            return cites.citing(c, scope, ids)

    def stored_vectors(self, scope: Scope, ids: Sequence[str]) -> dict[str, StoredVector]:
        if not ids:
            return {}
        where, args = scope_sql(scope)
        out: dict[str, StoredVector] = {}
        with self._read() as c:
            for chunk in _chunks(list(dict.fromkeys(ids))):
                sql, vals = in_list("id", chunk)
                for rid, model, blob in c.execute(
                    "SELECT r.id, v.model, v.vector FROM vectors v JOIN (SELECT seq, id FROM "
                    f"records WHERE {sql} AND {where}) r ON v.seq = r.seq",
                    vals + args,
                ):
                    out[rid] = StoredVector(model, decode_vector(blob))
        return out

    def views(self, scope: Scope, ids: Sequence[str]) -> dict[str, RecordView]:
        """What a context shows of each id visible in ``scope`` (as :meth:`get_many` finds
        them), without decoding the records: ``build_context`` renders its candidates from
        these and decodes none."""
        if not ids:
            return {}
        with self._read() as c:
            rows = self._visible(c, scope, ids, VIEW_COLUMNS)
        return {row["id"]: decode_view(row) for row in rows}

    def replace(self, scope: Scope, write: RecordWrite, *, expected_version: int) -> None:
        with self._write() as c:
            self._replace(c, scope, write, expected_version=expected_version)

    def _replace(
        self, c: sqlite3.Connection, scope: Scope, write: RecordWrite, *, expected_version: int
    ) -> None:
        if scope.caller is not None:  # another caller may read, never write
            raise NotFoundError(f"no record {write.record.id!r} in scope {scope}")
        new = write.record
        rows = self._visible(c, scope, [new.id], "seq, tenant, user, version, " + _MASKED)
        if not rows:
            raise NotFoundError(f"no record {new.id!r} in scope {scope}")
        cur = rows[0]
        check_replace(new, cur["version"], (cur["tenant"], cur["user"]), expected_version)
        seq = int(cur["seq"])
        values = encode_record(new)
        old = c.execute(f"SELECT {_COLS} FROM records WHERE seq = ?", (seq,)).fetchone()
        c.execute(
            _ARCHIVE,
            (
                seq,
                expected_version,
                encode_delta(
                    reverse_delta(
                        dict(zip(COLUMNS, old, strict=True)),
                        dict(zip(COLUMNS, values, strict=True)),
                    )
                ),
            ),
        )
        c.execute(_UPDATE, tuple(values[i] for i in _UPDATE_AT) + (seq,))
        c.executemany(_READERS, purged_reader.reader_rows([new]))  # store/purged_reader.py
        gone, added = roles.changed(old[_ACCESS_AT], new)  # the role shares (roles.py)
        was, now = roles.public_changed(  # its public row (roles.py)
            old[_VISIBILITY_AT], old[_OBSERVED_AT], new, values[_OBSERVED_AT], seq
        )
        gone, added = gone + was, added + now
        c.executemany("DELETE FROM rr WHERE t = ? AND r = ? AND u = ? AND i = ?", gone)
        c.executemany(_READERS, added)
        cites.sync(c, new.tenant, new.user, new.id, old, values)  # what it cites (cites.py)
        self._index(c, seq, new.tenant, new.user, write.terms)
        lexical.sync_public(c, [seq])  # its status or access may have changed, not its terms
        if write.vector is not None:
            self._store_vector(c, seq, new, write.vector)
        # The vector cache holds the vector and the masked columns: a change to one of
        # them gives the row a new change number, and the cache loads that row again
        # (not the user's whole matrix; a new vector got one from _store_vector).
        if write.vector is None and _masked(cur) != _masked_of(new):
            c.execute(_TOUCH_VECTOR, (seq, new.tenant, new.user))

    def history(self, scope: Scope, record_id: str) -> list[MemoryRecord]:
        return history_of(self.histories(scope, [record_id]), scope, record_id)

    def histories(self, scope: Scope, ids: Sequence[str]) -> dict[str, list[MemoryRecord]]:
        with self._read() as c:
            rows = self._visible(c, scope, ids, f"seq, {_COLS}")
            deltas: list[tuple[int, int, bytes]] = []
            for chunk in _chunks([int(r["seq"]) for r in rows]):
                sql, vals = in_list("seq", chunk)
                deltas += c.execute(
                    f"SELECT seq, version, delta FROM record_history WHERE {sql} "
                    "ORDER BY seq, version DESC",
                    vals,
                ).fetchall()
        return readable_versions(versions_by_id(rows, deltas, ids, self._dec), scope)

    def shown_versions(self, scope: Scope, versions: Mapping[str, int]) -> dict[str, int]:
        """For each ``id: version``, how many versions of the record up to that one
        ``scope`` may read (of those its ``histories`` would hold); a record it cannot read
        is left out. Reads the three columns that decide it and the deltas, parsing only
        those that change one (:mod:`memstrata.store.version_numbers`)."""
        with self._read() as c:
            rows = self._visible(
                c, scope, list(versions), "seq, id, version, status, visibility, access"
            )
            by_seq: dict[int, list[tuple[int, bytes]]] = {}
            for chunk in _chunks([int(r["seq"]) for r in rows]):
                sql, vals = in_list("seq", chunk)
                for seq, version, delta in c.execute(
                    f"SELECT seq, version, delta FROM record_history WHERE {sql} "
                    "ORDER BY seq, version DESC",
                    vals,
                ):
                    by_seq.setdefault(int(seq), []).append((int(version), delta))
        return {
            str(r["id"]): readable_count(
                r, by_seq.get(int(r["seq"]), ()), scope, versions[str(r["id"])]
            )
            for r in rows
        }

    def history_parts(
        self, scope: Scope, record_id: str, *, below: int, size: int
    ) -> Iterator[list[MemoryRecord]]:
        size = max(1, size)
        with PartSpool[tuple[int, bytes]]() as deltas:
            with self._read() as c:  # one snapshot, held while the deltas are fetched
                rows = self._visible(c, scope, [record_id], f"seq, {_COLS}")
                if not rows:
                    return
                current, after = rows[0], int(rows[0]["version"])
                while page := c.execute(
                    "SELECT version, delta FROM record_history WHERE seq = ? AND version < ? "
                    "ORDER BY version DESC LIMIT ?",
                    (int(current["seq"]), after, size),
                ).fetchall():
                    deltas.add([(int(v), bytes(b)) for v, b in page])
                    after = int(page[-1][0])
            yield from parts_of(current, deltas, below, scope)

    def set_status(
        self, scope: Scope, ids: Sequence[str], status: RecordStatus, at: datetime
    ) -> list[str]:
        with self._write() as c:
            return self._set_status(c, scope, ids, status, at)

    def _set_status(
        self,
        c: sqlite3.Connection,
        scope: Scope,
        ids: Sequence[str],
        status: RecordStatus,
        at: datetime,
    ) -> list[str]:
        if scope.caller is not None:
            return []
        status = RecordStatus(status)
        deleted_at = encode_time(at) if status is RecordStatus.DELETED else None
        changed: list[str] = []
        seqs: list[int] = []
        columns = ("status", "version", "updated_at", "deleted_at", *COUNTERS)
        for row in self._visible(c, scope, ids, "seq, id, " + ", ".join(columns)):
            if row["status"] == status.value:
                continue
            check_version(row["id"], row["version"] + 1)  # the transaction is rolled back
            delta = {col: ["=", row[col]] for col in columns}
            c.execute(_ARCHIVE, (row["seq"], row["version"], encode_delta(delta)))
            c.execute(
                "UPDATE records SET status = ?, version = version + 1, "
                "updated_at = ?, deleted_at = ? WHERE seq = ?",
                (status.value, encode_time(at), deleted_at, row["seq"]),
            )
            c.execute(_TOUCH_VECTOR, (row["seq"], scope.tenant, scope.user))
            changed.append(row["id"])
            seqs.append(int(row["seq"]))
        lexical.sync_public(c, seqs)  # a deleted record leaves the public part, a restored joins
        order = {i: n for n, i in enumerate(ids)}
        return sorted(changed, key=order.__getitem__)

    def purge(
        self,
        scope: Scope,
        ids: Sequence[str],
        *,
        reterm: Mapping[str, Sequence[str]] | None = None,
    ) -> PurgeReport:
        """Destroy these records, every version, vector, counter, lexical row and the
        embedding-cache entries of their texts, and give the records named in ``reterm``
        their new lexical terms (same transaction); then leave no byte of them in the file:
        ``secure_delete`` (on for every connection) zeroes the freed cells and pages (the
        lexical index is ordinary tables: its deleted postings go the same way) and a
        ``TRUNCATE`` checkpoint empties the WAL. No ``VACUUM``: its cost is a rewrite of
        the whole file (see README, "Audit log, purge, access control")."""
        if scope.caller is not None:
            return PurgeReport()
        hashes = self._content_hashes(scope, ids)  # of every version (purge31)
        tok = scope_token(scope.tenant, scope.user)
        own = current_fence()
        with self._write() as c:
            # The user's running jobs may have read these records: they run again on what
            # is left, and nothing more they write under their claim is stored (jobs.Fence).
            outbox.take_back_claims(
                c, scope.tenant, scope.user, own.lease_token if own is not None else None
            )
            rows = self._visible(
                c,
                scope,
                ids,
                "seq, version, id, type, source_ids, structured, superseded_by, metadata, "
                "relations",
            )
            seqs = [int(r["seq"]) for r in rows]
            cites.drop_past(c, scope.tenant, scope.user, rows)  # before their history goes
            counts = {"records": 0, "versions": 0, "vectors": 0, "cache_entries": 0}
            lexical.unindex(c, seqs)
            keys = {  # the keys of the facts purged: their other facts may name them
                str(k)
                for chunk in _chunks(seqs)
                for (k,) in c.execute(
                    "SELECT json_extract(metadata, '$.key') FROM records WHERE "
                    f"{_seq_list(chunk)[0]} AND type = 'fact' "
                    "AND json_type(metadata, '$.key') = 'text'",
                    _seq_list(chunk)[1],
                )
            }
            for chunk in _chunks(seqs):
                sql, vals = _seq_list(chunk)
                counts["versions"] += c.execute(
                    f"DELETE FROM record_history WHERE {sql}", vals
                ).rowcount
                counts["vectors"] += c.execute(f"DELETE FROM vectors WHERE {sql}", vals).rowcount
                c.execute(f"DELETE FROM counters WHERE {sql}", vals)
                counts["records"] += c.execute(f"DELETE FROM records WHERE {sql}", vals).rowcount
            # Their versions' rows leave the index of readers (their events' rows stay)
            c.executemany(
                "DELETE FROM rr WHERE t = ? AND u = ? AND i = ?",
                [(scope.tenant, scope.user, r["id"]) for r in rows],
            )
            cites.drop(c, scope.tenant, scope.user, rows)  # and what they cited (cites.py)
            if seqs and reterm:
                self._reterm(c, scope, reterm)
            self._unlink_superseded(c, scope, sorted(keys), {str(r["id"]) for r in rows})
            # Texts another record of the user still holds keep their cache entry.
            still = {
                r[0]
                for part in _chunks(sorted(hashes))
                for r in c.execute(
                    "SELECT content_hash FROM records WHERE tenant = ? AND user = ? AND "
                    f"{in_list('content_hash', part)[0]}",
                    [scope.tenant, scope.user, *part],
                )
            }
            self._drop_buffered(tok, hashes - still)
            for part in _chunks(sorted(hashes - still)):
                sql, vals = in_list("key", part)
                counts["cache_entries"] += c.execute(
                    f"DELETE FROM embedding_cache WHERE scope_tok = ? AND {sql}", [tok, *vals]
                ).rowcount
            remaining = 0
            for chunk in _chunks(seqs):
                sql, vals = _seq_list(chunk)
                remaining += c.execute(
                    f"SELECT (SELECT count(*) FROM records WHERE {sql}) + "
                    f"(SELECT count(*) FROM record_history WHERE {sql}) + "
                    f"(SELECT count(*) FROM vectors WHERE {sql})",
                    vals * 3,
                ).fetchone()[0]
            if seqs:
                self._bump(c, scope.tenant, scope.user)
                c.execute(_BUMP, (PURGES,))  # other processes forget the words (traces.py)
                if self.path != ":memory:":
                    scrub.owe(c, vacuum=False)  # until the WAL is empty (scrub.py)
        if seqs:
            self._scrub()
        return PurgeReport(
            records=counts["records"],
            versions=counts["versions"],
            vectors=counts["vectors"],
            cache_entries=counts["cache_entries"],
            remaining=remaining,
        )

    def _reterm(
        self, c: sqlite3.Connection, scope: Scope, reterm: Mapping[str, Sequence[str]]
    ) -> None:
        """Rewrite the lexical rows of the user's records in ``reterm`` whose terms differ
        (purge; ``secure_delete`` zeroes the old rows' bytes)."""
        for row in self._visible(c, Scope(scope.tenant, scope.user), list(reterm), "seq, id"):
            self._index(c, int(row["seq"]), scope.tenant, scope.user, reterm[row["id"]])

    def _content_hashes(self, scope: Scope, ids: Sequence[str]) -> set[str]:
        """The text hashes of every version of these records (their embedding-cache keys):
        the current rows' and, rewinding only their text and hash by the deltas, the
        earlier versions' (``history.rewind_hash``: the other columns of a version, a
        cluster's member list among them, are not rebuilt)."""
        from .history import rewind_hash

        out: set[str] = set()
        with self._read() as c:
            for r in self._visible(c, scope, ids, "seq, version, raw, content_hash"):
                row: dict[str, Any] = {"raw": r["raw"], "content_hash": r["content_hash"]}
                out.add(str(row["content_hash"]))
                for version, blob in c.execute(
                    "SELECT version, delta FROM record_history WHERE seq = ? ORDER BY version DESC",
                    (int(r["seq"]),),
                ):
                    if int(version) < int(r["version"]):
                        row = rewind_hash(row, decode_delta(bytes(blob)))
                        out.add(str(row["content_hash"]))
        return out

    def _scrub(self, *, vacuum: bool = False) -> bool:
        """Empty the WAL, which still holds the pages a purge changed (``VACUUM`` first
        when asked or owed), and clear the purge's marker (scrub.py). Whether it emptied."""
        with self._lock:
            if self.path == ":memory:":
                return True
            try:
                return scrub.scrub(self._conn, vacuum=vacuum)
            except sqlite3.Error as exc:  # locked past the busy timeout, a full disk ...
                raise failure(
                    exc,
                    f"SQLite store {self.path!r}",
                    "could not rewrite the file (VACUUM) or empty its WAL",
                    writing=False,
                    undone=(
                        "what the call changed is committed; the bytes a purge removed "
                        "stay in the file until the next compact, purge or open does this"
                    ),
                ) from exc

    def compact(self, *, lock_timeout: float = 10.0) -> CompactReport:
        """Rewrite the file: ``VACUUM`` and a ``TRUNCATE`` checkpoint (a whole-user purge
        does this itself; a record purge relies on ``secure_delete``). The lexical index is
        ordinary tables (since schema 10), rewritten by ``VACUUM`` with the rest.
        ``lock_timeout``: unused (one writer at a time; the busy timeout applies)."""
        import time

        started = time.monotonic()
        before = self._file_bytes()
        emptied = self._scrub(vacuum=True)
        on_disk = self.path != ":memory:"
        return CompactReport(
            rewritten=(self.path,) if on_disk else (),
            bytes_before=before,
            bytes_after=self._file_bytes(),
            checkpoint=on_disk and emptied,
            wal_switched=on_disk and emptied,
            seconds=round(time.monotonic() - started, 3),
        )

    def _file_bytes(self) -> int:
        from pathlib import Path

        if self.path == ":memory:":
            return 0
        return sum(
            Path(self.path + s).stat().st_size for s in ("", "-wal") if Path(self.path + s).exists()
        )

    def purge_user(self, tenant: str, user: str) -> PurgeReport:
        """Destroy every trace of one user, then make sure no byte of it is left on disk.

        Rows first (one transaction): records, versions, vectors, counters, jobs, the
        embedding cache (query embeddings included), the lexical postings, indexed terms and
        scope row (the tenant's statistics lose the user's share), the scope's generation
        row, and the user's audit events lose who and which ids (the events stay). Then the
        bytes: ``VACUUM`` rebuilds the file so freed pages and cells keep nothing, and a
        ``TRUNCATE`` checkpoint empties the WAL. ``remaining``
        counts the rows still found plus the user's record ids and scope token still present
        in the file's bytes."""
        from ...audit import sqlite_redact_subject
        from ...quotas import subject_hash
        from ..shared_sql import purge_user_rows

        tok = scope_token(tenant, user)
        args = (tenant, user)
        with self._write() as c:
            # Ids are per user: another user's record may carry the same id (it stays).
            ids = [
                r[0]
                for r in c.execute(
                    "SELECT id FROM records WHERE tenant = ?1 AND user = ?2 AND id NOT IN "
                    "(SELECT id FROM records WHERE tenant != ?1 OR user != ?2)",
                    args,
                )
            ]
            self._drop_buffered(tok)
            cache = c.execute("DELETE FROM embedding_cache WHERE scope_tok = ?", (tok,)).rowcount
            scope_id = lexical.scope_id(c, tenant, user)
            lexical.unindex_user(c, tenant, user)
            mine = "seq IN (SELECT seq FROM records WHERE tenant = ? AND user = ?)"
            vectors = c.execute("DELETE FROM vectors WHERE tenant = ? AND user = ?", args)
            versions = c.execute(f"DELETE FROM record_history WHERE {mine}", args)
            c.execute(f"DELETE FROM counters WHERE {mine}", args)
            jobs = c.execute("DELETE FROM jobs WHERE tenant = ? AND user = ?", args)
            records = c.execute("DELETE FROM records WHERE tenant = ? AND user = ?", args)
            c.execute("DELETE FROM scope_generation WHERE scope_tok = ?", (tok,))
            # What other users shared with them names them: out of every version
            self._drop_reader(c, tenant, user)
            # The user's generation row is gone (no trace of them left): the purge epoch, a
            # row of no one, tells every process's vector cache to reload (vectors.py).
            c.execute(_BUMP, (PURGE_EPOCH,))
            c.execute(_BUMP, (PURGES,))  # other processes forget the words (traces.py)
            c.execute(
                "DELETE FROM meta WHERE key LIKE ?", (f"quota:%:{subject_hash(tenant, user)}:%",)
            )
            sqlite_redact_subject(c, tenant, user)  # reads the index of readers: then it goes
            c.execute("DELETE FROM rr WHERE t = ? AND r = ?", args)
            c.execute("DELETE FROM rr WHERE t = ? AND u = ?", args)
            cites.drop_user(c, tenant, user)  # what their records cited (cites.py)
            # Rows of other components naming the user (API keys bound to them, registered
            # by server/keys.py) go in this transaction too (store/user_tables.py).
            purge_user_rows(
                c,
                tenant,
                user,
                ph="?",
                table_exists=lambda name: (
                    c.execute(
                        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
                    ).fetchone()
                    is not None
                ),
            )
            counts = (records.rowcount, versions.rowcount, vectors.rowcount, jobs.rowcount)
            if self.path != ":memory:":
                scrub.owe(c, vacuum=True)  # until VACUUMed and the WAL empty (scrub.py)
        with self._lock:
            self._vectors.clear()  # no generation row to compare with: reload from disk
            self._scrub(vacuum=True)
        with self._read() as c:
            remaining = lexical.traces(c, tok, scope_id) + int(
                c.execute(
                    "SELECT (SELECT count(*) FROM records WHERE tenant = ?1 AND user = ?2) + "
                    "(SELECT count(*) FROM record_history h WHERE NOT EXISTS "
                    "(SELECT 1 FROM records r WHERE r.seq = h.seq)) + "
                    "(SELECT count(*) FROM vectors WHERE tenant = ?1 AND user = ?2) + "
                    "(SELECT count(*) FROM jobs WHERE tenant = ?1 AND user = ?2) + "
                    "(SELECT count(*) FROM embedding_cache WHERE scope_tok = ?3) + "
                    "(SELECT count(*) FROM scope_generation WHERE scope_tok = ?3) + "
                    "(SELECT count(*) FROM audit_log WHERE tenant = ?1 AND user = ?2)",
                    (tenant, user, tok),
                ).fetchone()[0]
            )
            # ids are unique per (tenant, user): another user's record may carry the same id
            kept = {
                r[0]
                for chunk in _chunks(ids)
                for r in c.execute(
                    f"SELECT id FROM records WHERE {in_list('id', chunk)[0]}", list(chunk)
                )
            }
        remaining += self._bytes_left([tok, *(i for i in ids if i not in kept)])
        return PurgeReport(
            records=counts[0],
            versions=counts[1],
            vectors=counts[2],
            jobs=counts[3],
            cache_entries=cache,
            remaining=remaining,
        )

    def _drop_reader(self, c: sqlite3.Connection, tenant: str, user: str) -> int:
        """Take ``user`` out of the readers of the other users' records shared with them
        (the index of readers: store/purged_reader.py), in each one's every version, and
        give each a new version. Reads those records' rows and deltas only. How many
        records were rewritten."""
        from ..purged_reader import reader_fix

        fix = reader_fix(user)
        done = 0
        for owner, rid in c.execute(
            "SELECT u, i FROM rr WHERE t = ? AND r = ? AND u != ? AND typeof(i) = 'text'",
            (tenant, user, user),
        ).fetchall():
            row = c.execute(
                f"SELECT seq, {_COLS} FROM records WHERE tenant = ? AND user = ? AND id = ?",
                (tenant, owner, rid),
            ).fetchone()
            if row is None:  # purged since: its set_access events may still name them
                continue
            newest = self._rewrite_versions(c, row, fix)
            if newest is None:
                continue
            c.execute(
                "UPDATE records SET access = ?, version = ? WHERE seq = ?",
                (str(newest["access"]), int(newest["version"]), int(row["seq"])),
            )
            self._bump(c, tenant, owner)
            done += 1
        return done

    def _unlink_superseded(
        self, c: sqlite3.Connection, scope: Scope, keys: Sequence[str], gone: set[str]
    ) -> int:
        """The user's records naming a record of ``gone`` (purged), in any version, say
        ``[purged]`` instead (``purged_reader.link_fix``; their archived versions cite
        none of them), with a new version (``rederive`` then re-links the current facts):
        the facts of ``keys`` (schema 12's index; any version superseded by one), and the
        records whose current version links to one or has a refreshed note (an archived
        note may name one), among those the index of citations says a version of which
        names one (``cites.linking``: schema 22, purge31b; a scan of the user's rows
        before). Reads the deltas of those. How many records were rewritten."""
        from ..purged_reader import link_fix, noted, past_sources_fix

        fix, past = link_fix(gone), past_sources_fix(gone)
        every, _ = key_indexes("fact", "key")
        rows: dict[int, Any] = {}
        for key in keys:
            for row in c.execute(
                f"SELECT seq, {_COLS} FROM records {every} WHERE tenant = ? AND user = ? "
                f"AND {key_sql('fact', 'key')}",
                (scope.tenant, scope.user, key),
            ).fetchall():
                rows[int(row["seq"])] = row
        linking = cites.linking(c, scope, sorted(gone))
        named = [
            int(row["seq"])
            for part in _chunks(linking)
            for row in c.execute(
                "SELECT seq, superseded_by, structured, metadata, source_ids, relations "
                f"FROM records WHERE tenant = ? AND user = ? AND {in_list('id', part)[0]}",
                [scope.tenant, scope.user, *part],
            ).fetchall()
            if int(row["seq"]) not in rows and (fix(dict(row)) or noted(row))
        ]
        for part in _chunks(named):
            sql, vals = _seq_list(part)
            for row in c.execute(f"SELECT seq, {_COLS} FROM records WHERE {sql}", vals):
                rows[int(row["seq"])] = row
        done = 0
        for seq, row in sorted(rows.items()):
            newest = self._rewrite_versions(c, row, fix, past)
            if newest is None:
                continue
            c.execute(
                "UPDATE records SET superseded_by = ?, structured = ?, metadata = ?, "
                "source_ids = ?, relations = ?, version = ? WHERE seq = ?",
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
            cites.sync(c, scope.tenant, scope.user, str(row["id"]), row, newest)  # (cites.py)
            # no version names the purged ones now (its current sources: cited, rederive's)
            cites.unlinked(c, scope.tenant, scope.user, str(row["id"]), sorted(gone))
            done += 1
        return done

    def _rewrite_versions(
        self,
        c: sqlite3.Connection,
        row: Any,
        fix: Callable[[dict[str, Any]], bool],
        past: Callable[[dict[str, Any]], bool] | None = None,
    ) -> dict[str, Any] | None:
        """The record of ``row`` with every version changed by ``fix``
        (``purged_reader.rewrite_versions``): its history written again, and its new
        current row returned for the caller to write the columns ``fix`` changes; ``None``,
        with nothing written, when ``fix`` changed no version."""
        from ..purged_reader import rewrite_versions

        seq = int(row["seq"])
        deltas = c.execute(
            "SELECT version, delta FROM record_history WHERE seq = ? ORDER BY version DESC",
            (seq,),
        ).fetchall()
        out = rewrite_versions(row, [(int(v), bytes(b)) for v, b in deltas], fix, past)
        if out is None:
            return None
        newest, chain = out
        c.execute("DELETE FROM record_history WHERE seq = ?", (seq,))
        c.executemany(_ARCHIVE, [(seq, v, blob) for v, blob in chain])
        return newest

    def _bytes_left(self, needles: Sequence[str]) -> int:
        """How many of ``needles`` still occur in the database file or its WAL."""
        if self.path == ":memory:" or not needles:
            return 0
        from pathlib import Path

        left: set[str] = set()
        for suffix in ("", "-wal"):
            p = Path(self.path + suffix)
            if not p.exists():
                continue
            data = p.read_bytes()
            left.update(n for n in needles if n.encode() in data)
        return len(left)

    def _select(
        self,
        c: sqlite3.Connection,
        scope: Scope,
        filters: Filters,
        tail: str = "",
        tail_args: Sequence[Any] = (),
        *,
        columns: str = "*",
        walk: Walk | None = None,
    ) -> list[sqlite3.Row]:
        """``columns`` of the rows of ``scope`` ``filters`` admits, then ``tail``. ``walk``
        says in the words of a caller's read what ``tail`` orders and keeps (where.py,
        ``records_from``); without it a caller's read finds every record it may read."""
        sw, sa = scope_sql(scope)
        fw, fa = filters_sql(filters)
        by = filters_index(filters)  # a fact's history: by its key's index
        source, ra = records_from(scope, filters, by, walk)  # a caller's: what it may read
        if columns == "*":
            columns = "records.*"
        return c.execute(
            f"SELECT {columns} FROM {source} WHERE {sw} AND {fw} {tail}",
            [*ra, *sa, *fa, *tail_args],
        ).fetchall()

    def list_pages(
        self, scope: Scope, filters: Filters, *, batch_size: int = 1000
    ) -> Iterator[list[MemoryRecord]]:
        size = max(1, batch_size)
        after: tuple[str, int] | None = None
        python = needs_python(filters)
        while True:
            tail = "ORDER BY observed_at, seq LIMIT ?"
            args: list[Any] = [size]
            if after is not None:
                tail, args = "AND (observed_at, seq) > (?, ?) " + tail, [*after, size]
            walk: Walk = ("ASC", None if after is None else (">", *after), size)
            with self._read() as c:  # one short read per page: writers never wait for all
                rows = self._select(c, scope, filters, tail, args, walk=walk)
                records = [self._dec(r) for r in rows]
            if not rows:
                return
            after = (rows[-1]["observed_at"], int(rows[-1]["seq"]))
            page = [r for r in records if filters.matches(r)] if python else records
            if page:
                yield page

    def list_after(
        self,
        scope: Scope,
        filters: Filters,
        record_id: str,
        *,
        limit: int = 20,
        newest_first: bool = False,
    ) -> list[MemoryRecord]:
        """What ``list(scope, filters)`` orders after the record ``record_id`` (before it,
        newest first, with ``newest_first``), up to ``limit``: one read from the record's
        place (its ``observed_at``, then insertion order), however many records share its
        time. Empty when ``scope`` holds no such record."""
        if limit <= 0:
            return []
        op, order = ("<", "DESC") if newest_first else (">", "ASC")
        tail = (
            f"AND (observed_at, seq) {op} (?, ?) ORDER BY observed_at {order}, seq {order} LIMIT ?"
        )
        with self._read() as c:
            at = self._visible(c, scope, [record_id], "observed_at, seq")
            if not at:
                return []
            args = [at[0]["observed_at"], int(at[0]["seq"]), limit]
            walk: Walk = (order, (op, *args[:2]), None if needs_python(filters) else limit)
            rows = self._select(c, scope, filters, tail, args, walk=walk)
            records = [self._dec(r) for r in rows]
        return [r for r in records if filters.matches(r)] if needs_python(filters) else records

    def reterm(self, scope: Scope, terms: Mapping[str, Sequence[str]]) -> None:
        with self._write() as c:
            self._reterm_live(c, scope, terms)

    def _reterm_live(
        self, c: sqlite3.Connection, scope: Scope, terms: Mapping[str, Sequence[str]]
    ) -> None:
        """New lexical terms for the user's records in ``terms`` (no new version); the
        user's BM25 statistics are read again."""
        if scope.caller is None and terms:
            self._reterm(c, scope, terms)
            self._bump(c, scope.tenant, scope.user)

    def count(self, scope: Scope, filters: Filters) -> int:
        with self._read() as c:
            if needs_python(filters):
                return sum(
                    filters.matches(decode_record(r)) for r in self._select(c, scope, filters)
                )
            sw, sa = scope_sql(scope)
            fw, fa = filters_sql(filters)
            source, ra = records_from(scope, filters)
            return int(
                c.execute(
                    f"SELECT count(*) FROM {source} WHERE {sw} AND {fw}", [*ra, *sa, *fa]
                ).fetchone()[0]
            )

    def key_versions(self, scope: Scope, type: str, field: str, value: str) -> KeyVersions:
        """One read of index look-ups: the name's last row and whether it has a live one
        (schema 12's ``records_fact_key`` / ``_live`` and ``records_doc_*`` for a fact's key
        and a document's qa_id; other names scan the type's rows). No record is decoded."""
        with self._read() as c:
            return self._key_versions(c, scope, type, field, value)

    def _key_versions(
        self, c: sqlite3.Connection, scope: Scope, type: str, field: str, value: str
    ) -> KeyVersions:
        newest, live = c.execute(*key_versions_sql(scope, type, field, value)).fetchone()
        return KeyVersions(bool(live), newest)

    def find_by_hash(
        self, scope: Scope, content_hash: str, types: Sequence[str]
    ) -> MemoryRecord | None:
        with self._read() as c:
            return self._find_by_hash(c, scope, content_hash, types)

    def _find_by_hash(
        self, c: sqlite3.Connection, scope: Scope, content_hash: str, types: Sequence[str]
    ) -> MemoryRecord | None:
        sql = "AND content_hash = ?"
        args: list[Any] = [content_hash]
        if types:
            tw, ta = in_list("type", [str(t) for t in types])
            sql += f" AND {tw}"
            args += ta
        rows = self._select(c, scope, Filters(), sql + " ORDER BY seq LIMIT 1", args)
        return self._dec(rows[0]) if rows else None

    # --- counters (never versions) ---------------------------------------------------------------
    def touch(self, scope: Scope, ids: Sequence[str], at: datetime) -> None:
        if not ids or scope.caller is not None:  # a caller's reads count nothing
            return
        with self._read() as c:  # the read path takes no write lock: counts are buffered
            seqs = [int(r["seq"]) for r in self._visible(c, scope, ids, "seq")]
        with self._counter_lock:
            for seq in seqs:
                n, last = self._touches.get(seq, (0, at))
                self._touches[seq] = (n + 1, max(last, at))
        self._buffered()

    def add_counts(self, scope: Scope, name: str, deltas: Mapping[str, int]) -> None:
        if not deltas:
            return
        with self._read() as c:
            rows = self._visible(c, scope, list(deltas), "seq, id")
        with self._counter_lock:
            for row in rows:
                key = (int(row["seq"]), name)
                self._counts[key] = self._counts.get(key, 0) + int(deltas[row["id"]])
        self._buffered()

    def counts(self, scope: Scope, name: str, ids: Sequence[str]) -> dict[str, int]:
        where, args = scope_sql(scope, "r.")
        out: dict[str, int] = {}
        with self._read() as c:
            for chunk in _chunks(list(dict.fromkeys(ids))):
                sql, vals = in_list("r.id", chunk)
                for seq, rid, value in c.execute(
                    "SELECT r.seq, r.id, coalesce(k.value, 0) FROM records r LEFT JOIN "
                    f"counters k ON k.seq = r.seq AND k.name = ? WHERE {sql} AND {where}",
                    [name, *vals, *args],
                ):
                    out[rid] = int(value) + self._pending_count(int(seq), name)
        return out

    def flush_counters(self) -> None:
        with self._lock:
            if self._touches or self._counts or self._cache:
                with self._write():
                    pass  # a write transaction writes the buffer

    def _buffered(self) -> None:
        """After buffering: when the buffer is due, a background thread writes it, so the
        read path never waits for (or takes) the write lock."""
        now = time.monotonic()
        with self._counter_lock:
            if self._pending_since is None:
                self._pending_since = now
            due = (
                len(self._touches) + len(self._counts) + len(self._cache) >= _FLUSH_AT
                or now - self._pending_since >= _FLUSH_AFTER_S
            )
            if not due or self._flushing:
                return
            self._flushing = True
            if self._flusher is None:
                self._flusher = ThreadPoolExecutor(1, thread_name_prefix="memstrata-counters")
        try:
            self._flusher.submit(self._flush_in_background)
        except RuntimeError:  # closing: close() writes the buffer itself
            with self._counter_lock:
                self._flushing = False

    def _flush_in_background(self) -> None:
        try:
            self.flush_counters()
        except Exception as exc:  # the buffer was given back; the next flush retries it
            _log.warning("memstrata: buffered access counters not written yet: %s", exc)
        finally:
            with self._counter_lock:
                self._flushing = False

    def _take_counters(self) -> tuple[dict[int, tuple[int, datetime]], dict[tuple[int, str], int]]:
        with self._counter_lock:
            touches, counts = self._touches, self._counts
            self._touches, self._counts, self._pending_since = {}, {}, None
            self._inflight = (touches, counts) if touches or counts else None
            self._cache_inflight, self._cache = self._cache, {}
        return touches, counts

    def _carry(self, fence: Fence | None) -> dict[tuple[str, str, str], bytes]:
        """Put the cache entries ``fence``'s job buffered (its claim just checked) among
        those this transaction writes; they are returned to check on a rollback."""
        mine: dict[tuple[str, str, str], bytes] = (
            fence.carried.pop(id(self), {}) if fence is not None else {}
        )
        if mine:
            with self._counter_lock:
                self._cache_inflight = {**(self._cache_inflight or {}), **mine}
        return mine

    def _give_back_counters(
        self,
        touches: dict[int, tuple[int, datetime]],
        counts: dict[tuple[int, str], int],
        *,
        carried: tuple[Fence | None, dict[tuple[str, str, str], bytes]] = (None, {}),
    ) -> None:
        fence, mine = carried
        with self._counter_lock:
            self._inflight = None
            self._give_back_locked(touches, counts)
            if mine and self._cache_inflight:
                # the job's entries go back to its fence, never to the shared buffer (which
                # any transaction writes, the job's claim checked or not)
                back = {k: b for k, b in mine.items() if self._cache_inflight.pop(k, None) is b}
                if fence is not None and back:
                    fence.carried[id(self)] = {**back, **fence.carried.get(id(self), {})}
            if self._cache_inflight:  # newer entries (buffered since) win
                self._cache = {**self._cache_inflight, **self._cache}
                if self._pending_since is None:
                    self._pending_since = time.monotonic()
            self._cache_inflight = None

    def _write_cache(self, c: sqlite3.Connection) -> None:
        """Write the embedding-cache entries this transaction took over (last, so that an
        insert of records could take its vectors out of them first)."""
        with self._counter_lock:
            entries = dict(self._cache_inflight or {})
        if entries:
            c.executemany(
                _UPSERT_CACHE,
                [
                    (tok, model, key, len(blob) // 4, blob)
                    for (tok, model, key), blob in entries.items()
                ],
            )

    def _buffered_vectors(self, tok: str, model_id: str, keys: Sequence[str]) -> dict[str, Vector]:
        """Entries of ``keys`` buffered or being written (not yet in a snapshot)."""
        out: dict[str, Vector] = {}
        fence = current_fence()
        mine = fence.carried.get(id(self), {}) if fence is not None else {}
        with self._counter_lock:
            if not self._cache and not self._cache_inflight and not mine:
                return out
            for k in keys:
                blob = mine.get((tok, model_id, k)) or self._cache.get((tok, model_id, k))
                if blob is None and self._cache_inflight:
                    blob = self._cache_inflight.get((tok, model_id, k))
                if blob is not None:
                    out[k] = decode_vector(blob)
        return out

    def _drop_buffered(self, tok: str, keys: set[str] | None = None) -> None:
        """Forget buffered cache entries of one user (``keys``: only these): a purge must
        not be followed by their write."""
        with self._counter_lock:
            for buf in (self._cache, self._cache_inflight):
                if buf:
                    for entry in [e for e in buf if e[0] == tok and (keys is None or e[2] in keys)]:
                        del buf[entry]

    def _pending_touch(self, seq: int) -> tuple[int, datetime] | None:
        """Accesses of ``seq`` not yet in the database (buffered or in flight)."""
        mine = self._touches.get(seq)
        inflight = self._inflight
        other = inflight[0].get(seq) if inflight is not None else None
        if mine is None or other is None:
            return mine or other
        return mine[0] + other[0], max(mine[1], other[1])

    def _pending_count(self, seq: int, name: str) -> int:
        inflight = self._inflight
        return self._counts.get((seq, name), 0) + (
            inflight[1].get((seq, name), 0) if inflight is not None else 0
        )

    def _give_back_locked(
        self, touches: dict[int, tuple[int, datetime]], counts: dict[tuple[int, str], int]
    ) -> None:
        for seq, (n, last) in touches.items():
            m, other = self._touches.get(seq, (0, last))
            self._touches[seq] = (n + m, max(last, other))
        for key, delta in counts.items():
            self._counts[key] = self._counts.get(key, 0) + delta
        if self._pending_since is None and (touches or counts):
            self._pending_since = time.monotonic()

    @staticmethod
    def _write_counters(
        c: sqlite3.Connection,
        touches: dict[int, tuple[int, datetime]],
        counts: dict[tuple[int, str], int],
    ) -> None:
        # A record purged since is simply not matched (no error, nothing written). The count
        # stops at 2**63 - 1 (validation.counted): past it SQLite would turn it into a REAL.
        c.executemany(
            f"UPDATE records SET access_count = min(access_count, {MAX_COUNT} - ?1) + ?1, "
            "last_accessed_at = max(coalesce(last_accessed_at, ?2), ?2) WHERE seq = ?3",
            [(n, encode_time(last), seq) for seq, (n, last) in touches.items()],
        )
        c.executemany(
            "INSERT INTO counters (seq, name, value) SELECT seq, ?2, ?3 FROM records "
            "WHERE seq = ?1 ON CONFLICT (seq, name) DO UPDATE SET "
            "value = value + excluded.value",
            [(seq, name, delta) for (seq, name), delta in counts.items()],
        )

    def _dec(self, row: sqlite3.Row) -> MemoryRecord:
        """Decode a row (selected with ``seq``) with its buffered accesses applied.

        They are applied to the row before decoding: ``dataclasses.replace`` on the record
        would validate every field again (most of a decode's cost, for every record that a
        recent search touched)."""
        if self._touches or self._inflight is not None:
            pending = self._pending_touch(int(row["seq"]))
            if pending is not None:
                values = dict(zip(row.keys(), row, strict=True))
                last = decode_time(values["last_accessed_at"])
                values["access_count"] = counted(int(values["access_count"]), pending[0])
                values["last_accessed_at"] = encode_time(
                    pending[1] if last is None else max(last, pending[1])
                )
                return decode_record(values)
        return decode_record(row)

    # --- session buffer --------------------------------------------------------------------------
    def recent_turns(self, scope: Scope, n: int) -> list[MemoryRecord]:
        if scope.session is None or n < 1:
            return []
        sw, sa = scope_sql(scope)
        with self._read() as c:
            rows = c.execute(
                f"SELECT * FROM records WHERE {sw} AND type = ? AND status = ? "
                "ORDER BY observed_at DESC, seq DESC LIMIT ?",
                [*sa, RecordType.MESSAGE.value, RecordStatus.ACTIVE.value, n],
            ).fetchall()
        return [self._dec(r) for r in reversed(rows)]

    # --- retrieval -------------------------------------------------------------------------------
    def vector_search(
        self, scope: Scope, vector: Vector, k: int, filters: Filters
    ) -> list[Candidate]:
        query = np.asarray(vector, dtype=np.float32).ravel()
        if k <= 0 or query.size == 0:
            return []
        with self._read() as c:
            return self._vector_search(c, scope, query, k, filters)

    def vector_records(
        self,
        scope: Scope,
        vector: Vector,
        k: int,
        filters: Filters,
        *,
        keep: Callable[[MemoryRecord], bool] | None = None,
        want: int | None = None,
    ) -> list[tuple[MemoryRecord, float]]:
        query = np.asarray(vector, dtype=np.float32).ravel()
        if k <= 0 or query.size == 0:
            return []
        with self._read() as c:
            found = self._vector_search(c, scope, query, k, filters)
            if not found:
                return []
            rows = {row["id"]: row for row in self._visible(c, scope, [f.id for f in found])}
            return kept_records(found, rows, self._dec, keep, want)

    def _vector_search(
        self, c: sqlite3.Connection, scope: Scope, query: np.ndarray, k: int, filters: Filters
    ) -> list[Candidate]:
        cache = self._vectors.load(c, scope.tenant, scope.user, query.size)
        keep = np.flatnonzero(cache.mask(scope, filters))
        if keep.size == 0:
            return []
        if _python_filters(filters) or scope.caller is not None:
            # Let SQL apply the filters (and access rules) the masks cannot; mask by id.
            allowed = {r[0] for r in self._select(c, scope, filters, columns="id")}
            keep = np.array([i for i in keep if cache.ids[i] in allowed], dtype=np.intp)
            if keep.size == 0:
                return []
        scores = cache.scores(keep, query)
        ties = cache.seq[keep]
        if not needs_python(filters):
            best = top_k(scores, k, ties)
            # Python ints and floats first (``tolist``): indexing numpy per element is slow
            rows, values = keep[best].tolist(), scores[best].tolist()
            return [Candidate(cache.ids[j], v) for j, v in zip(rows, values, strict=True)]
        order = top_k(scores, scores.size, ties)
        out: list[Candidate] = []
        step = max(4 * k, 64)  # over-fetch: most rows usually pass the metadata filter
        for start in range(0, order.size, step):
            block = order[start : start + step]
            ids = [cache.ids[keep[i]] for i in block]
            found = {r["id"]: decode_record(r) for r in self._visible(c, scope, ids)}
            for i, rid in zip(block, ids, strict=True):
                rec = found.get(rid)
                if rec is not None and filters.matches(rec):
                    out.append(Candidate(rid, float(scores[i])))
                    if len(out) == k:
                        return out
        return out

    def lexical_search(
        self, scope: Scope, terms: Sequence[str], k: int, filters: Filters
    ) -> list[Candidate]:
        if k <= 0:
            return []
        if scope.caller is not None:
            # the caller's rule is the readable part's (caller_ranked); not evaluated twice
            ow, oa = scope_sql(scope.as_caller(None), "r.")
            fw, fa = filters_sql(filters, "r.")
            return self._caller_lexical(scope, terms, k, filters, (f"{ow} AND {fw}", [*oa, *fa]))
        sw, sa = scope_sql(scope, "r.")
        fw, fa = filters_sql(filters, "r.")
        where, args = f"{sw} AND {fw}", [*sa, *fa]
        if not needs_python(filters):
            with self._read() as c:
                return [
                    Candidate(rid, score)
                    for rid, score in lexical.ranked(
                        c, scope.tenant, scope.user, terms, where, args, k
                    )
                ]
        # Metadata filters run in Python on decoded records: every match is read, in order.
        out: list[Candidate] = []
        with self._read() as c:
            hits = lexical.scored(c, scope.tenant, scope.user, terms, None)
            for start in range(0, len(hits), 500):
                block = hits[start : start + 500]
                rows = {
                    int(r["seq"]): r
                    for r in c.execute(
                        "SELECT r.* FROM json_each(?) AS hit CROSS JOIN records r "
                        f"ON r.seq = hit.value WHERE {where}",
                        [json.dumps([seq for seq, _ in block]), *args],
                    )
                }
                for seq, score in block:
                    row = rows.get(seq)
                    if row is not None and filters.matches(decode_record(row)):
                        out.append(Candidate(row["id"], score))
                        if len(out) == k:
                            return out
        return out

    def _caller_lexical(
        self,
        scope: Scope,
        terms: Sequence[str],
        k: int,
        filters: Filters,
        where: tuple[str, list[Any]],
    ) -> list[Candidate]:
        """A caller's lexical search, scored over what the caller may read (the whole
        readable part of the owner's memory: ``user_scope``), not the tenant's statistics
        (:mod:`memstrata.store.caller_bm25`)."""
        with self._read() as c:
            readable = scope_sql(scope.user_scope, "r.")
            if not needs_python(filters):
                return [
                    Candidate(rid, score)
                    for _, rid, score in lexical.caller_ranked(c, scope, terms, readable, where, k)
                ]
            hits = lexical.caller_ranked(c, scope, terms, readable, where)
            out: list[Candidate] = []
            for start in range(0, len(hits), 500):
                block = hits[start : start + 500]
                rows = {
                    int(r["seq"]): r
                    for r in c.execute(
                        "SELECT r.* FROM json_each(?) AS hit CROSS JOIN records r "
                        "ON r.seq = hit.value",
                        [json.dumps([seq for seq, _, _ in block])],
                    )
                }
                for seq, rid, score in block:
                    row = rows.get(seq)
                    if row is not None and filters.matches(decode_record(row)):
                        out.append(Candidate(rid, score))
                        if len(out) == k:
                            return out
            return out

    # --- embeddings -------------------------------------------------------------------------------
    def cached_vectors(self, scope: Scope, model_id: str, keys: Sequence[str]) -> dict[str, Vector]:
        tok = scope_token(scope.tenant, scope.user)
        out = self._buffered_vectors(tok, model_id, keys)
        with self._read() as c:
            for chunk in _chunks([k for k in dict.fromkeys(keys) if k not in out]):
                sql, vals = in_list("key", chunk)
                for k, blob in c.execute(
                    f"SELECT key, vector FROM embedding_cache WHERE "
                    f"scope_tok = ? AND model_id = ? AND {sql}",
                    [tok, model_id, *vals],
                ):
                    out[k] = decode_vector(blob)
            # Passage vectors that moved into a record (``own``): found through the record.
            rest = [k for k in dict.fromkeys(keys) if k not in out and not k.startswith("q:")]
            for chunk in _chunks(rest):
                sql, vals = in_list("r.content_hash", chunk)
                for k, blob in c.execute(
                    "SELECT r.content_hash, v.vector FROM records r JOIN vectors v ON "
                    f"v.seq = r.seq WHERE r.tenant = ? AND r.user = ? AND {sql} AND "
                    "v.own = 1 AND v.model = ?",
                    [scope.tenant, scope.user, *vals, model_id],
                ):
                    out.setdefault(k, decode_vector(blob))
        return out

    def cache_vectors(self, scope: Scope, model_id: str, vectors: Mapping[str, Vector]) -> None:
        """Buffered like the counters (written by the next write transaction, at the latest
        within about a second, by a background thread): a search caches its query's vector
        without waiting for the write lock. A crash may lose buffered entries (a cache)."""
        tok = scope_token(scope.tenant, scope.user)
        blobs = {(tok, model_id, k): encode_vector(v) for k, v in vectors.items()}
        if not blobs:
            return
        fence = current_fence()
        if fence is not None:  # a job's: written by its next write, under its claim
            with self._counter_lock:
                fence.carried[id(self)] = {**fence.carried.get(id(self), {}), **blobs}
            return
        with self._counter_lock:
            self._cache.update(blobs)
        self._buffered()

    def scan(self, batch_size: int = 500) -> Iterator[list[MemoryRecord]]:
        last = 0
        while True:
            with self._read() as c:
                rows = c.execute(
                    "SELECT * FROM records WHERE seq > ? ORDER BY seq LIMIT ?",
                    (last, max(1, batch_size)),
                ).fetchall()
            if not rows:
                return
            last = int(rows[-1]["seq"])
            yield [self._dec(r) for r in rows]

    def set_vectors(
        self, items: Sequence[tuple[MemoryRecord, Vector]], model_id: str, dims: int
    ) -> None:
        """Each record's vector becomes ``vector``, made by ``model_id``: the passage vector
        of the record's text, so it is kept as the cache's entry too (``own``; an entry the
        cache holds with the same vector is deleted, as an insert does). Every record's
        ``seq`` is read in one statement per user; a missing record writes nothing."""
        moved = reembedded(items, model_id, dims)
        with self._write() as c:
            seqs = self._seqs(c, [r for r, _ in moved])
            self._owned_cache_entries(c, [(r, blob) for r, blob in moved])
            c.executemany(
                _UPSERT_VECTOR,
                [
                    (seq, r.tenant, r.user, model_id, dims, 1, blob)
                    for seq, (r, blob) in zip(seqs, moved, strict=True)
                ],
            )
            c.executemany(
                "UPDATE records SET embedding_model = ?, embedding_dims = ? WHERE seq = ?",
                [(model_id, dims, seq) for seq in seqs],
            )
            for tenant, user in dict.fromkeys((r.tenant, r.user) for r, _ in moved):
                self._bump(c, tenant, user)

    @staticmethod
    def _seqs(c: sqlite3.Connection, records: Sequence[MemoryRecord]) -> list[int]:
        """The ``seq`` of each record (by tenant, user and id), in order; ``NotFoundError``
        naming the first one not stored."""
        found: dict[tuple[str, str, str], int] = {}
        for (tenant, user), ids in user_ids(records).items():
            for chunk in _chunks(ids):
                sql, vals = in_list("id", chunk)
                for rid, seq in c.execute(
                    f"SELECT id, seq FROM records WHERE tenant = ? AND user = ? AND {sql}",
                    [tenant, user, *vals],
                ):
                    found[(tenant, user, rid)] = seq
        return seqs_in_order(records, found)

    # --- jobs ----------------------------------------------------------------------------------
    def enqueue(self, jobs: Sequence[Job]) -> None:
        with self._write() as c:
            self._enqueue(c, jobs)

    @staticmethod
    def _enqueue(c: sqlite3.Connection, jobs: Sequence[Job]) -> None:
        outbox.enqueue(c, jobs)

    def claim_jobs(
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
        with self._write() as c:
            return outbox.claim_jobs(
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

    def renew_leases(self, token: str, until: datetime) -> list[str]:
        with self._write() as c:
            return outbox.renew_leases(c, token, until)

    def finish_job(self, job_id: str, lease_token: str | None = None) -> None:
        with self._write() as c:
            outbox.finish_job(c, job_id, lease_token)

    def fail_job(
        self, job_id: str, error: str, retry_at: datetime | None, lease_token: str | None = None
    ) -> None:
        with self._write() as c:
            outbox.fail_job(c, job_id, error, retry_at, lease_token)

    def give_back_job(
        self, job_id: str, reason: str, run_at: datetime, lease_token: str | None = None
    ) -> None:
        with self._write() as c:
            outbox.give_back_job(c, job_id, reason, run_at, lease_token)

    def count_open_jobs(
        self, *, tenant: str | None = None, user: str | None = None, session: str | None = None
    ) -> int:
        with self._read() as c:
            return outbox.count_open(c, tenant, user, session)

    def sweep_done_jobs(self, before: datetime, limit: int = DONE_SWEEP_BATCH) -> int:
        """Delete up to ``limit`` done jobs of any user due before ``before`` (the
        retention ``maintain`` sweeps); returns how many."""
        with self._write() as c:
            return outbox.sweep_done(c, before, limit)

    def list_jobs(self, tenant: str, user: str, *, status: str | None = None) -> list[Job]:
        with self._read() as c:
            return outbox.list_jobs(c, tenant, user, status)

    def stats(self, scope: Scope) -> StoreStats:
        where, args = scope_sql(scope)
        with self._read() as c:
            by_type = {
                t: n
                for t, n in c.execute(
                    f"SELECT type, count(*) FROM records WHERE {where} GROUP BY type", args
                )
            }
            active = c.execute(
                f"SELECT count(*) FROM records WHERE {where} AND status = ?",
                [*args, RecordStatus.ACTIVE.value],
            ).fetchone()[0]
            jobs = dict(
                c.execute(
                    "SELECT status, count(*) FROM jobs WHERE tenant = ? AND "
                    "user = ? GROUP BY status",
                    (scope.tenant, scope.user),
                )
            )
            users = c.execute(
                "SELECT count(DISTINCT user) FROM records WHERE tenant = ?", (scope.tenant,)
            ).fetchone()[0]
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
    def dump_records(self, batch_size: int = 500) -> Iterator[list[RecordDump]]:
        return dump.dump_records(self, batch_size)

    def load_records(self, dumps: Sequence[RecordDump]) -> int:
        return dump.load_records(self, dumps)

    def dump_cache(self, batch_size: int = 500) -> Iterator[list[CacheEntry]]:
        self.flush_counters()  # buffered cache entries too
        return dump.dump_cache(self, batch_size)

    def load_cache(self, entries: Sequence[CacheEntry]) -> int:
        return dump.load_cache(self, entries)

    def dump_jobs(self, batch_size: int = 500) -> Iterator[list[Job]]:
        return dump.dump_jobs(self, batch_size)

    def load_jobs(self, jobs: Sequence[Job]) -> int:
        return dump.load_jobs(self, jobs)

    def dump_audit(self, batch_size: int = 500) -> Iterator[list[AuditEvent]]:
        return dump.dump_audit(self, batch_size)

    def load_audit(self, events: Sequence[AuditEvent]) -> int:
        return dump.load_audit(self, events)

    def dump_keys(self, batch_size: int = 500) -> Iterator[list[KeyRow]]:
        return dump.dump_keys(self, batch_size)

    def load_keys(self, keys: Sequence[KeyRow]) -> int:
        return dump.load_keys(self, keys)

    def meta_items(self) -> dict[str, str]:
        return dump.meta_items(self)

    def finish_load(self) -> None:
        """Nothing is deferred by a SQLite load."""

    # Last in the class: below it, ``list`` in annotations would name this method.
    def list(
        self,
        scope: Scope,
        filters: Filters,
        *,
        limit: int = 100,
        offset: int = 0,
        newest_first: bool = True,
    ) -> list[MemoryRecord]:
        if limit <= 0:
            return []
        with self._read() as c:
            return self._list(c, ListQuery(scope, filters, limit, offset, newest_first))

    def list_many(self, queries: Sequence[ListQuery]) -> builtins.list[builtins.list[MemoryRecord]]:
        """What ``list`` returns for each query, all read in one read transaction."""
        if all(q.limit <= 0 for q in queries):
            return [[] for _ in queries]
        with self._read() as c:
            return [self._list(c, q) if q.limit > 0 else [] for q in queries]

    def _list(self, c: sqlite3.Connection, q: ListQuery) -> builtins.list[MemoryRecord]:
        offset = max(0, q.offset)
        order = "DESC" if q.newest_first else "ASC"
        tail = f"ORDER BY observed_at {order}, seq {order}"
        if not needs_python(q.filters):
            rows = self._select(
                c,
                q.scope,
                q.filters,
                tail + " LIMIT ? OFFSET ?",
                (q.limit, offset),
                walk=(order, None, q.limit + offset),
            )
            return [self._dec(r) for r in rows]
        rows = self._select(c, q.scope, q.filters, tail, walk=(order, None, None))
        records = [self._dec(r) for r in rows]
        return [r for r in records if q.filters.matches(r)][offset : offset + q.limit]


class _Gate:
    """Many readers or one committer: a commit that writes in-flight counters waits for the
    read transactions under way, and new ones wait for it (a commit is short), so a reader
    either sees the counters in its snapshot or in flight, never both, never neither."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._committing = False

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._committing:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            while self._committing:
                self._cond.wait()
            self._committing = True  # new readers wait from here on
            while self._readers:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._committing = False
                self._cond.notify_all()


def _seq_list(seqs: Sequence[int]) -> tuple[str, list[Any]]:
    return f"seq IN ({', '.join('?' * len(seqs))})", list(seqs)


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


def _check_turns(writes: Sequence[RecordWrite]) -> None:
    for w in writes:
        if w.record.type is not RecordType.MESSAGE:
            raise ValidationError(
                f"record {w.record.id!r} is a {w.record.type.value}, not a turn; "
                "append_turns takes message records, use insert() for anything else"
            )


class _SQLiteUnitOfWork:
    """The calls of one ``BEGIN IMMEDIATE`` transaction (see ``UnitOfWork``)."""

    def __init__(self, store: SQLiteStore, conn: sqlite3.Connection) -> None:
        self._s = store
        self._c = conn
        self._pending: dict[int, int] = {}  # insert_history's parts: the next one's version

    def get(self, scope: Scope, record_id: str, *, include_deleted: bool = False) -> MemoryRecord:
        return self._s._get(self._c, scope, record_id, include_deleted=include_deleted)

    def find_by_hash(
        self, scope: Scope, content_hash: str, types: Sequence[str]
    ) -> MemoryRecord | None:
        return self._s._find_by_hash(self._c, scope, content_hash, types)

    def key_versions(self, scope: Scope, type: str, field: str, value: str) -> KeyVersions:
        """``BEGIN IMMEDIATE`` already keeps every other writer out until this one ends."""
        return self._s._key_versions(self._c, scope, type, field, value)

    def insert(self, writes: Sequence[RecordWrite]) -> None:
        self._s._insert(self._c, writes)

    def append_turns(self, writes: Sequence[RecordWrite]) -> None:
        self._s._append_turns(self._c, writes)

    def replace(self, scope: Scope, write: RecordWrite, *, expected_version: int) -> None:
        self._s._replace(self._c, scope, write, expected_version=expected_version)

    def set_status(
        self, scope: Scope, ids: Sequence[str], status: RecordStatus, at: datetime
    ) -> list[str]:
        return self._s._set_status(self._c, scope, ids, status, at)

    def reterm(self, scope: Scope, terms: Mapping[str, Sequence[str]]) -> None:
        self._s._reterm_live(self._c, scope, terms)

    def enqueue(self, jobs: Sequence[Job]) -> None:
        self._s._enqueue(self._c, jobs)

    def insert_history(
        self,
        histories: Sequence[Sequence[MemoryRecord]],
        newer: Sequence[MemoryRecord | None] | None = None,
    ) -> None:
        dump.insert_history(self._c, histories, newer, self._pending)

    def append_audit(self, events: Sequence[AuditEvent]) -> None:
        """Audit events in this transaction: they commit, or roll back, with its writes
        (``audit_log`` is a table of this database; ``SQLiteAudit`` reads them)."""
        from ...audit_backends import sqlite_append_audit

        sqlite_append_audit(self._c, events)
