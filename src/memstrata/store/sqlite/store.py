"""The SQLite store: the embedded default and the reference every other store must match.

One file in WAL mode holds records, their history, vectors, an FTS5 lexical index, the
embedding cache and the job queue. The connection runs in autocommit mode and every write
method is one ``BEGIN IMMEDIATE`` transaction, so a write applies whole or not at all and
two processes sharing a file serialise their writes instead of failing half-way.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import numpy as np

from ...errors import ConflictError, NotFoundError, StoreError, ValidationError
from ...filters import Filters
from ...jobs import Job
from ...records import MemoryRecord, RecordStatus
from ...scope import Scope
from ..base import Candidate, PurgeReport, RecordWrite, StoreStats, Vector
from . import outbox
from .codec import (
    COLUMNS,
    decode_record,
    decode_vector,
    encode_record,
    encode_time,
    encode_vector,
    scope_token,
)
from .lexical import BM25_WEIGHTS, match_expression, terms_text
from .migrations import SCHEMA_VERSION, migrate, schema_version
from .vectors import VectorCache, dot, top_k
from .where import filters_sql, in_list, needs_python, scope_sql

__all__ = ["SQLiteStore"]

_COLS = ", ".join(COLUMNS)
_INSERT = f"INSERT INTO records ({_COLS}) VALUES ({', '.join('?' * len(COLUMNS))})"
_UPDATE = f"UPDATE records SET {', '.join(c + ' = ?' for c in COLUMNS[1:])} WHERE id = ?"
_ARCHIVE = f"INSERT INTO record_versions ({_COLS}) SELECT {_COLS} FROM records WHERE id = ?"
_MASKED = "type, agent, session, visibility, status, superseded_by, importance"


def _masked(row: sqlite3.Row) -> tuple[object, ...]:
    return (row["type"], row["agent"], row["session"], row["visibility"], row["status"],
            row["superseded_by"], float(row["importance"]))


def _masked_of(r: MemoryRecord) -> tuple[object, ...]:
    return (r.type.value, r.agent, r.session, r.access.visibility.value, r.status.value,
            r.superseded_by, float(r.importance))


_BUMP = ("INSERT INTO scope_generation (scope_tok, generation) VALUES (?, 1) "
         "ON CONFLICT (scope_tok) DO UPDATE SET generation = generation + 1")
_UPSERT_VECTOR = ("INSERT INTO vectors (record_id, tenant, user, model, dims, vector) "
                  "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (record_id) DO UPDATE SET "
                  "model = excluded.model, dims = excluded.dims, vector = excluded.vector")
_BUSY_TIMEOUT_S = 10.0
_CHUNK = 500  # ids per IN (...) list


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), _CHUNK):
        yield items[i:i + _CHUNK]


class SQLiteStore:
    """A :class:`~memstrata.store.base.Store` in one SQLite file (or ``:memory:``)."""

    def __init__(self, path: str = ":memory:", *, url: str | None = None) -> None:
        self.url = url or f"sqlite:///{path}"
        self.path = path
        try:
            conn = sqlite3.connect(path, timeout=_BUSY_TIMEOUT_S, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite database {path!r}: {exc}; check that the "
                             "directory exists and is writable") from exc
        try:
            # Check the version before any pragma writes to the file: refuse it untouched.
            if schema_version(conn) > SCHEMA_VERSION:
                migrate(conn, path=path)  # raises SchemaVersionError
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
            migrate(conn, path=path)
        except sqlite3.Error as exc:
            conn.close()
            raise StoreError(f"cannot use {path!r} as a memstrata store: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self._lock = threading.RLock()
        self._vectors = VectorCache()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.url!r})"

    def close(self) -> None:
        with self._lock:
            self._vectors.clear()
            self._conn.close()

    # --- transactions --------------------------------------------------------------------
    @contextmanager
    def _tx(self, begin: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._conn.execute(begin)
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite could not start a transaction: {exc}") from exc
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._conn.execute("ROLLBACK")
                raise StoreError(f"SQLite could not commit: {exc}") from exc

    def _write(self) -> Any:
        return self._tx("BEGIN IMMEDIATE")

    def _read(self) -> Any:
        return self._tx("BEGIN")

    # --- metadata --------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        with self._read() as c:
            row = c.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self._write() as c:
            c.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) "
                      "DO UPDATE SET value = excluded.value", (key, value))

    # --- helpers -----------------------------------------------------------------------------
    @staticmethod
    def _visible(c: sqlite3.Connection, scope: Scope, ids: Sequence[str],
                 columns: str = "*") -> list[sqlite3.Row]:
        where, args = scope_sql(scope)
        rows: list[sqlite3.Row] = []
        for chunk in _chunks(list(dict.fromkeys(ids))):
            sql, vals = in_list("id", chunk)
            rows += c.execute(f"SELECT {columns} FROM records WHERE {sql} AND {where}",
                              vals + args).fetchall()
        return rows

    @staticmethod
    def _check_vector(r: MemoryRecord, vector: Vector) -> bytes:
        blob = encode_vector(vector)
        if r.embedding_dims is not None and len(blob) // 4 != r.embedding_dims:
            raise ValidationError(
                f"record {r.id!r} says embedding_dims={r.embedding_dims} but its vector has "
                f"{len(blob) // 4} dimensions; embed it with the store's model")
        return blob

    @staticmethod
    def _index(c: sqlite3.Connection, seq: int, r: MemoryRecord, terms: Sequence[str]) -> None:
        c.execute("DELETE FROM lexical WHERE rowid = ?", (seq,))
        c.execute("INSERT INTO lexical (rowid, scope_tok, terms) VALUES (?, ?, ?)",
                  (seq, scope_token(r.tenant, r.user), terms_text(terms)))

    @staticmethod
    def _bump(c: sqlite3.Connection, tenant: str, user: str) -> None:
        c.execute(_BUMP, (scope_token(tenant, user),))

    # --- records -------------------------------------------------------------------------------
    def insert(self, writes: Sequence[RecordWrite]) -> None:
        with self._write() as c:
            for w in writes:
                r = w.record
                try:
                    cur = c.execute(_INSERT, encode_record(r))
                except sqlite3.IntegrityError:
                    raise ValidationError(
                        f"record id {r.id!r} exists already (or twice in this batch); nothing "
                        "was written: use replace() to update a record, new_id() for a new one"
                    ) from None
                seq = int(cur.lastrowid or 0)
                self._index(c, seq, r, w.terms)
                if w.vector is not None:
                    dims, blob = self._vector_tail(r, w.vector)
                    c.execute(_UPSERT_VECTOR, (r.id, r.tenant, r.user, r.embedding_model,
                                               dims, blob))

    def _vector_tail(self, r: MemoryRecord, vector: Vector) -> tuple[int, bytes]:
        blob = self._check_vector(r, vector)
        return len(blob) // 4, blob

    def get(self, scope: Scope, record_id: str, *, include_deleted: bool = False) -> MemoryRecord:
        with self._read() as c:
            rows = self._visible(c, scope, [record_id])
        if not rows or (not include_deleted and rows[0]["status"] != RecordStatus.ACTIVE.value):
            raise NotFoundError(f"no record {record_id!r} in scope {scope}")
        return decode_record(rows[0])

    def get_many(self, scope: Scope, ids: Sequence[str]) -> list[MemoryRecord]:
        with self._read() as c:
            found = {row["id"]: row for row in self._visible(c, scope, ids)}
        return [decode_record(found[i]) for i in dict.fromkeys(ids) if i in found]

    def replace(self, scope: Scope, write: RecordWrite, *, expected_version: int) -> None:
        new = write.record
        with self._write() as c:
            rows = self._visible(c, scope, [new.id], "seq, tenant, user, version, " + _MASKED)
            if not rows:
                raise NotFoundError(f"no record {new.id!r} in scope {scope}")
            cur = rows[0]
            if cur["version"] != expected_version:
                raise ConflictError(
                    f"record {new.id!r} is at version {cur['version']}, but this update was "
                    f"based on version {expected_version}; re-read the record and apply the "
                    "change again")
            if new.version != expected_version + 1:
                raise ValidationError(f"the new version of {new.id!r} must be "
                                      f"{expected_version + 1}, got {new.version}")
            if (new.tenant, new.user) != (cur["tenant"], cur["user"]):
                raise ValidationError(f"replace cannot move record {new.id!r} to another "
                                      "tenant or user; insert a copy under a new id instead")
            c.execute(_ARCHIVE, (new.id,))
            c.execute(_UPDATE, encode_record(new)[1:] + (new.id,))
            self._index(c, int(cur["seq"]), new, write.terms)
            if write.vector is not None:
                dims, blob = self._vector_tail(new, write.vector)
                c.execute(_UPSERT_VECTOR, (new.id, new.tenant, new.user, new.embedding_model,
                                           dims, blob))
            # The vector cache holds the vector and the masked columns: only a change to one
            # of them invalidates it (a content-only update, e.g. a cluster's hit count, on
            # every search would otherwise reload a user's whole matrix each time).
            if write.vector is not None or _masked(cur) != _masked_of(new):
                self._bump(c, new.tenant, new.user)

    def history(self, scope: Scope, record_id: str) -> list[MemoryRecord]:
        with self._read() as c:
            rows = self._visible(c, scope, [record_id])
            if not rows:
                raise NotFoundError(f"no record {record_id!r} in scope {scope}")
            old = c.execute(f"SELECT {_COLS} FROM record_versions WHERE id = ? "
                            "ORDER BY version", (record_id,)).fetchall()
        return [decode_record(r) for r in [*old, rows[0]]]

    def set_status(self, scope: Scope, ids: Sequence[str], status: RecordStatus,
                   at: datetime) -> list[str]:
        status = RecordStatus(status)
        deleted_at = encode_time(at) if status is RecordStatus.DELETED else None
        changed: list[str] = []
        with self._write() as c:
            for row in self._visible(c, scope, ids, "id, status"):
                if row["status"] == status.value:
                    continue
                c.execute(_ARCHIVE, (row["id"],))
                c.execute("UPDATE records SET status = ?, version = version + 1, "
                          "updated_at = ?, deleted_at = ? WHERE id = ?",
                          (status.value, encode_time(at), deleted_at, row["id"]))
                changed.append(row["id"])
            if changed:
                self._bump(c, scope.tenant, scope.user)
        order = {i: n for n, i in enumerate(ids)}
        return sorted(changed, key=order.__getitem__)

    def purge(self, scope: Scope, ids: Sequence[str]) -> PurgeReport:
        with self._write() as c:
            rows = self._visible(c, scope, ids, "seq, id")
            found = [r["id"] for r in rows]
            counts = {"records": 0, "versions": 0, "vectors": 0}
            for chunk in _chunks(found):
                sql, vals = in_list("id", chunk)
                vsql, _ = in_list("record_id", chunk)
                counts["versions"] += c.execute(
                    f"DELETE FROM record_versions WHERE {sql}", vals).rowcount
                counts["vectors"] += c.execute(f"DELETE FROM vectors WHERE {vsql}", vals).rowcount
                counts["records"] += c.execute(f"DELETE FROM records WHERE {sql}", vals).rowcount
            for row in rows:
                c.execute("DELETE FROM lexical WHERE rowid = ?", (row["seq"],))
            remaining = 0
            for chunk in _chunks(found):
                sql, vals = in_list("id", chunk)
                vsql, _ = in_list("record_id", chunk)
                remaining += c.execute(
                    f"SELECT (SELECT count(*) FROM records WHERE {sql}) + "
                    f"(SELECT count(*) FROM record_versions WHERE {sql}) + "
                    f"(SELECT count(*) FROM vectors WHERE {vsql})",
                    vals * 3).fetchone()[0]
            if found:
                self._bump(c, scope.tenant, scope.user)
        return PurgeReport(**counts, remaining=remaining)

    def purge_user(self, tenant: str, user: str) -> PurgeReport:
        tok = scope_token(tenant, user)
        mine = ("SELECT content_hash FROM records WHERE tenant = ?1 AND user = ?2 UNION "
                "SELECT content_hash FROM record_versions WHERE tenant = ?1 AND user = ?2")
        with self._write() as c:
            cache = c.execute(
                f"DELETE FROM embedding_cache WHERE content_hash IN ({mine}) "
                "AND NOT EXISTS (SELECT 1 FROM records o WHERE o.content_hash = "
                "embedding_cache.content_hash AND NOT (o.tenant = ?1 AND o.user = ?2)) "
                "AND NOT EXISTS (SELECT 1 FROM record_versions o WHERE o.content_hash = "
                "embedding_cache.content_hash AND NOT (o.tenant = ?1 AND o.user = ?2))",
                (tenant, user)).rowcount
            c.execute("DELETE FROM lexical WHERE rowid IN "
                      "(SELECT seq FROM records WHERE tenant = ? AND user = ?)", (tenant, user))
            args = (tenant, user)
            vectors = c.execute("DELETE FROM vectors WHERE tenant = ? AND user = ?", args)
            versions = c.execute("DELETE FROM record_versions WHERE tenant = ? AND user = ?",
                                 args)
            jobs = c.execute("DELETE FROM jobs WHERE tenant = ? AND user = ?", args)
            records = c.execute("DELETE FROM records WHERE tenant = ? AND user = ?", args)
            self._bump(c, tenant, user)
            remaining = c.execute(
                "SELECT (SELECT count(*) FROM records WHERE tenant = ?1 AND user = ?2) + "
                "(SELECT count(*) FROM record_versions WHERE tenant = ?1 AND user = ?2) + "
                "(SELECT count(*) FROM vectors WHERE tenant = ?1 AND user = ?2) + "
                "(SELECT count(*) FROM jobs WHERE tenant = ?1 AND user = ?2) + "
                "(SELECT count(*) FROM lexical WHERE lexical MATCH ?3)",
                (tenant, user, f'scope_tok : "{tok}"')).fetchone()[0]
            return PurgeReport(records=records.rowcount, versions=versions.rowcount,
                               vectors=vectors.rowcount, jobs=jobs.rowcount,
                               cache_entries=cache, remaining=int(remaining))

    def _select(self, c: sqlite3.Connection, scope: Scope, filters: Filters,
                tail: str = "", tail_args: Sequence[Any] = (), *,
                columns: str = "*") -> list[sqlite3.Row]:
        sw, sa = scope_sql(scope)
        fw, fa = filters_sql(filters)
        return c.execute(f"SELECT {columns} FROM records WHERE {sw} AND {fw} {tail}",
                         [*sa, *fa, *tail_args]).fetchall()

    def count(self, scope: Scope, filters: Filters) -> int:
        with self._read() as c:
            if needs_python(filters):
                return sum(filters.matches(decode_record(r))
                           for r in self._select(c, scope, filters))
            sw, sa = scope_sql(scope)
            fw, fa = filters_sql(filters)
            return int(c.execute(f"SELECT count(*) FROM records WHERE {sw} AND {fw}",
                                 [*sa, *fa]).fetchone()[0])

    def find_by_hash(self, scope: Scope, content_hash: str,
                     types: Sequence[str]) -> MemoryRecord | None:
        sql = "AND content_hash = ?"
        args: list[Any] = [content_hash]
        if types:
            tw, ta = in_list("type", [str(t) for t in types])
            sql += f" AND {tw}"
            args += ta
        with self._read() as c:
            rows = self._select(c, scope, Filters(), sql + " ORDER BY seq LIMIT 1", args)
        return decode_record(rows[0]) if rows else None

    def touch(self, scope: Scope, ids: Sequence[str], at: datetime) -> None:
        where, args = scope_sql(scope)
        with self._write() as c:
            for chunk in _chunks(list(dict.fromkeys(ids))):
                sql, vals = in_list("id", chunk)
                c.execute("UPDATE records SET access_count = access_count + 1, "
                          f"last_accessed_at = ? WHERE {sql} AND {where}",
                          [encode_time(at), *vals, *args])

    # --- retrieval -------------------------------------------------------------------------------
    def vector_search(self, scope: Scope, vector: Vector, k: int,
                      filters: Filters) -> list[Candidate]:
        query = np.asarray(vector, dtype=np.float32).ravel()
        if k <= 0 or query.size == 0:
            return []
        with self._read() as c:
            cache = self._vectors.load(c, scope.tenant, scope.user, query.size)
            keep = np.flatnonzero(cache.mask(scope, filters))
            if keep.size == 0:
                return []
            if _python_filters(filters):
                # Let SQL apply the filters the masks cannot, then mask by id.
                allowed = {r[0] for r in self._select(c, scope, filters, columns="id")}
                keep = np.array([i for i in keep if cache.ids[i] in allowed], dtype=np.intp)
                if keep.size == 0:
                    return []
            scores = dot(cache.matrix, query)[keep]
            if not needs_python(filters):
                best = top_k(scores, k)
                return [Candidate(cache.ids[keep[i]], float(scores[i])) for i in best]
            order = top_k(scores, scores.size)
            out: list[Candidate] = []
            step = max(4 * k, 64)  # over-fetch: most rows usually pass the metadata filter
            for start in range(0, order.size, step):
                block = order[start:start + step]
                ids = [cache.ids[keep[i]] for i in block]
                found = {r["id"]: decode_record(r) for r in self._visible(c, scope, ids)}
                for i, rid in zip(block, ids, strict=True):
                    rec = found.get(rid)
                    if rec is not None and filters.matches(rec):
                        out.append(Candidate(rid, float(scores[i])))
                        if len(out) == k:
                            return out
            return out

    def lexical_search(self, scope: Scope, terms: Sequence[str], k: int,
                       filters: Filters) -> list[Candidate]:
        expr = match_expression(scope_token(scope.tenant, scope.user), terms)
        if expr is None or k <= 0:
            return []
        sw, sa = scope_sql(scope, "r.")
        fw, fa = filters_sql(filters, "r.")
        python = needs_python(filters)
        cols = "r.*" if python else "r.id"  # decoding is only needed to filter in Python
        sql = (f"SELECT {cols}, -bm25(lexical, {BM25_WEIGHTS}) AS score FROM lexical "
               f"JOIN records r ON r.seq = lexical.rowid WHERE lexical MATCH ? AND {sw} AND {fw} "
               f"ORDER BY bm25(lexical, {BM25_WEIGHTS}), r.seq")
        args: list[Any] = [expr, *sa, *fa]
        if not python:
            sql += " LIMIT ?"
            args.append(k)
        with self._read() as c:
            rows = c.execute(sql, args).fetchall()
        out = [Candidate(r["id"], float(r["score"])) for r in rows
               if not python or filters.matches(decode_record(r))]
        return out[:k]

    # --- embeddings -------------------------------------------------------------------------------
    def cached_vectors(self, model_id: str, hashes: Sequence[str]) -> dict[str, Vector]:
        out: dict[str, Vector] = {}
        with self._read() as c:
            for chunk in _chunks(list(dict.fromkeys(hashes))):
                sql, vals = in_list("content_hash", chunk)
                for h, blob in c.execute(f"SELECT content_hash, vector FROM embedding_cache "
                                         f"WHERE model_id = ? AND {sql}", [model_id, *vals]):
                    out[h] = decode_vector(blob)
        return out

    def cache_vectors(self, model_id: str, vectors: Mapping[str, Vector]) -> None:
        rows = []
        for h, v in vectors.items():
            blob = encode_vector(v)
            rows.append((model_id, h, len(blob) // 4, blob))
        with self._write() as c:
            c.executemany("INSERT INTO embedding_cache (model_id, content_hash, dims, vector) "
                          "VALUES (?, ?, ?, ?) ON CONFLICT (model_id, content_hash) DO UPDATE "
                          "SET dims = excluded.dims, vector = excluded.vector", rows)

    def scan(self, batch_size: int = 500) -> Iterator[list[MemoryRecord]]:
        last = 0
        while True:
            with self._read() as c:
                rows = c.execute("SELECT * FROM records WHERE seq > ? ORDER BY seq LIMIT ?",
                                 (last, max(1, batch_size))).fetchall()
            if not rows:
                return
            last = int(rows[-1]["seq"])
            yield [decode_record(r) for r in rows]

    def set_vectors(self, items: Sequence[tuple[str, Vector]], model_id: str, dims: int) -> None:
        with self._write() as c:
            users: set[tuple[str, str]] = set()
            for record_id, vector in items:
                blob = encode_vector(vector)
                if len(blob) // 4 != dims:
                    raise ValidationError(f"vector for {record_id!r} has {len(blob) // 4} "
                                          f"dimensions, but set_vectors was told {dims}")
                row = c.execute("SELECT tenant, user FROM records WHERE id = ?",
                                (record_id,)).fetchone()
                if row is None:
                    raise NotFoundError(f"no record {record_id!r}; nothing was re-embedded")
                c.execute(_UPSERT_VECTOR, (record_id, row["tenant"], row["user"], model_id,
                                           dims, blob))
                c.execute("UPDATE records SET embedding_model = ?, embedding_dims = ? "
                          "WHERE id = ?", (model_id, dims, record_id))
                users.add((row["tenant"], row["user"]))
            for tenant, user in users:
                self._bump(c, tenant, user)

    # --- jobs ----------------------------------------------------------------------------------
    def enqueue(self, jobs: Sequence[Job]) -> None:
        with self._write() as c:
            outbox.enqueue(c, jobs)

    def claim_jobs(self, now: datetime, *, limit: int, lease_seconds: float,
                   tenant: str | None = None, user: str | None = None,
                   session: str | None = None, due_before: datetime | None = None) -> list[Job]:
        with self._write() as c:
            return outbox.claim_jobs(c, now, limit=limit, lease_seconds=lease_seconds,
                                     tenant=tenant, user=user, session=session,
                                     due_before=due_before)

    def finish_job(self, job_id: str) -> None:
        with self._write() as c:
            outbox.finish_job(c, job_id)

    def fail_job(self, job_id: str, error: str, retry_at: datetime | None) -> None:
        with self._write() as c:
            outbox.fail_job(c, job_id, error, retry_at)

    def list_jobs(self, tenant: str, user: str, *, status: str | None = None) -> list[Job]:
        with self._read() as c:
            return outbox.list_jobs(c, tenant, user, status)

    def stats(self, scope: Scope) -> StoreStats:
        where, args = scope_sql(scope)
        with self._read() as c:
            by_type = {t: n for t, n in c.execute(
                f"SELECT type, count(*) FROM records WHERE {where} GROUP BY type", args)}
            active = c.execute(f"SELECT count(*) FROM records WHERE {where} AND status = ?",
                               [*args, RecordStatus.ACTIVE.value]).fetchone()[0]
            jobs = dict(c.execute("SELECT status, count(*) FROM jobs WHERE tenant = ? AND "
                                  "user = ? GROUP BY status", (scope.tenant, scope.user)))
            users = c.execute("SELECT count(DISTINCT user) FROM records WHERE tenant = ?",
                              (scope.tenant,)).fetchone()[0]
        total = sum(by_type.values())
        return StoreStats(records=total, active=int(active), deleted=total - int(active),
                          by_type=by_type,
                          pending_jobs=jobs.get("pending", 0) + jobs.get("running", 0),
                          failed_jobs=jobs.get("failed", 0), users=int(users))


    # Last in the class: below it, ``list`` in annotations would name this method.
    def list(self, scope: Scope, filters: Filters, *, limit: int = 100, offset: int = 0,
             newest_first: bool = True) -> list[MemoryRecord]:
        if limit <= 0:
            return []
        offset = max(0, offset)
        order = "DESC" if newest_first else "ASC"
        tail = f"ORDER BY observed_at {order}, seq {order}"
        with self._read() as c:
            if not needs_python(filters):
                rows = self._select(c, scope, filters, tail + " LIMIT ? OFFSET ?",
                                    (limit, offset))
                return [decode_record(r) for r in rows]
            records = [decode_record(r) for r in self._select(c, scope, filters, tail)]
        return [r for r in records if filters.matches(r)][offset:offset + limit]

def _python_filters(f: Filters) -> bool:
    """Filters the vector cache cannot apply as numpy masks (SQL or Python applies them)."""
    return bool(f.metadata or f.tags_any is not None or f.tags_all or f.ids is not None
                or f.sources is not None or f.observed_after or f.observed_before
                or f.valid_at is not None)
