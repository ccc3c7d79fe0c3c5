"""Bulk read and write of a SQLite store (:class:`~memstrata.store.base.StoreCopy`).

``memstrata migrate`` copies a store through these functions; the store's methods of the
same names call them. Reads take one short read transaction per batch (keyset paging on
``seq`` or the key), so a large file is streamed, never loaded whole. Each load is one
``BEGIN IMMEDIATE`` transaction that skips what is already there, so an interrupted copy
can be run again.

History is kept as reverse deltas (``history.py``): a dumped record carries every version
whole, and a load turns consecutive versions back into deltas. A record with more than
``portability.HISTORY_PAGE`` earlier versions has its deltas spooled to a temporary file
in its batch's read and its versions made from them a part at a time, newest part first
(``RecordDump.earlier``); a load writes its parts as they come, in the batch's
transaction. A batch ends early where its short histories pass ``HISTORY_PAGE`` versions
(``history_parts.batch_cut``). The embedding cache is the
logical one :meth:`SQLiteStore.cached_vectors` answers from: the ``embedding_cache`` rows
plus the passage vectors that moved into their record (``vectors.own``), once per key.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ...audit import AuditEvent
from ...audit_backends import AUDIT_COLUMNS, sqlite_index_readers
from ...audit_types import event_of_row, row_of_event
from ...jobs import Job
from ...records import MemoryRecord
from .. import purged_reader  # the module: it imports this package (history)
from ..base import CacheEntry, RecordDump
from ..history_parts import EarlierVersions, PartSpool, batch_cut, part_size
from ..key_rows import INSERT_KEY, KEY_ROW_COLUMNS, KeyRow, ensure_sqlite_table
from ..past_versions import history_key, newer_of
from . import cites, lexical, roles
from .codec import COLUMNS, decode_record, decode_vector, encode_record, encode_vector, scope_token
from .history import (
    apply_delta,
    archived,
    decode_delta,
    encode_delta,
    newest_parts,
    part_deltas,
    reverse_delta,
)
from .outbox import JOB_COLUMNS, job_from_row, job_row
from .scrub import OWED

if TYPE_CHECKING:
    from .store import SQLiteStore

__all__ = [
    "dump_audit",
    "dump_cache",
    "dump_jobs",
    "dump_keys",
    "dump_records",
    "insert_history",
    "load_audit",
    "load_cache",
    "load_jobs",
    "load_keys",
    "load_records",
    "meta_items",
]

_COLS = ", ".join(COLUMNS)
_INSERT = f"INSERT INTO records ({_COLS}) VALUES ({', '.join('?' * len(COLUMNS))})"
_ARCHIVE = "INSERT INTO record_history (seq, version, delta) VALUES (?, ?, ?)"
# The index of readers (store/purged_reader.py; migrations.py v16): (tenant, reader, user,
# record id) for each version naming a reader.
_READERS = "INSERT OR IGNORE INTO rr VALUES (?, ?, ?, ?)"
_CHUNK = 500  # ids or seqs bound in one statement
T = TypeVar("T")


def _marks(n: int) -> str:
    return ", ".join("?" * n)


# --- records ---------------------------------------------------------------------------------
def dump_records(s: SQLiteStore, batch_size: int = 500) -> Iterator[list[RecordDump]]:
    last = 0
    size = max(1, batch_size)
    limit = part_size()
    spools: list[PartSpool[tuple[int, bytes]]] = []  # the long histories of the batch given
    try:
        while True:
            _close(spools)
            with s._read() as c:
                rows = c.execute(
                    "SELECT * FROM records WHERE seq > ? ORDER BY seq LIMIT ?", (last, size)
                ).fetchall()
                if not rows:
                    return
                rows = rows[: batch_cut([int(r["version"]) - 1 for r in rows], limit)]
                seqs = [int(r["seq"]) for r in rows]
                marks = _marks(len(seqs))
                vectors = {
                    int(seq): decode_vector(blob)
                    for seq, blob in c.execute(
                        f"SELECT seq, vector FROM vectors WHERE seq IN ({marks})", seqs
                    )
                }
                terms = {
                    seq: tuple(text.split()) for seq, text in lexical.indexed_terms(c, seqs).items()
                }
                counters: dict[int, dict[str, int]] = {}
                for seq, name, value in c.execute(
                    f"SELECT seq, name, value FROM counters WHERE seq IN ({marks})", seqs
                ):
                    counters.setdefault(int(seq), {})[str(name)] = int(value)
                long = {int(r["seq"]) for r in rows if int(r["version"]) - 1 > limit}
                older = [
                    int(r["seq"])
                    for r in rows
                    if int(r["version"]) > 1 and int(r["seq"]) not in long
                ]
                deltas: dict[int, list[bytes]] = {}
                if older:
                    for seq, blob in c.execute(
                        f"SELECT seq, delta FROM record_history WHERE seq IN "
                        f"({_marks(len(older))}) ORDER BY seq, version DESC",
                        older,
                    ):
                        deltas.setdefault(int(seq), []).append(bytes(blob))
                spooled: dict[int, tuple[int, PartSpool[tuple[int, bytes]]]] = {}
                for seq in sorted(long):  # in this read: the row's own history
                    spools.append(spool := PartSpool[tuple[int, bytes]]())
                    spooled[seq] = (_spool_history(c, seq, spool, limit), spool)
                wanted = set(seqs)
                for (seq, name), delta in s._counts.items():  # buffered, not yet written
                    if seq in wanted:
                        mine = counters.setdefault(seq, {})
                        mine[name] = mine.get(name, 0) + delta
            out: list[RecordDump] = []
            for row in rows:
                seq = int(row["seq"])
                current = s._dec(row)
                earlier = None
                versions = [current]
                if seq in spooled:
                    count, spool = spooled[seq]
                    earlier = EarlierVersions(count, newest_parts(row, spool))
                else:
                    values: dict[str, Any] = {col: row[col] for col in COLUMNS}
                    for blob in deltas.get(seq, []):
                        values = apply_delta(values, decode_delta(blob))
                        versions.append(decode_record(values))
                out.append(
                    RecordDump(
                        tuple(reversed(versions)),
                        vectors.get(seq),
                        terms.get(seq, ()),
                        counters.get(seq, {}),
                        earlier,
                    )
                )
            last = seqs[-1]
            yield out
    finally:
        _close(spools)


def _spool_history(
    c: sqlite3.Connection, seq: int, spool: PartSpool[tuple[int, bytes]], size: int
) -> int:
    """Spool the deltas of record ``seq``, newest first, ``size`` a page; how many."""
    count = 0
    cur = c.execute(
        "SELECT version, delta FROM record_history WHERE seq = ? ORDER BY version DESC", (seq,)
    )
    while page := cur.fetchmany(size):
        spool.add([(int(v), bytes(b)) for v, b in page])
        count += len(page)
    return count


def _close(spools: list[PartSpool[tuple[int, bytes]]]) -> None:
    for spool in spools:
        spool.close()
    spools.clear()


def load_records(s: SQLiteStore, dumps: Sequence[RecordDump]) -> int:
    """Write the records not stored yet, in one transaction: a long history's parts too
    (read from its dump as they are written), so that a copy killed in the middle of one
    leaves none of it, and the record is copied whole when the copy is run again."""
    if not dumps:
        return 0
    new = 0
    with s._write() as c:
        users: set[tuple[str, str]] = set()
        for d in dumps:
            r = d.record
            if c.execute(
                "SELECT 1 FROM records WHERE tenant = ? AND user = ? AND id = ?",
                (r.tenant, r.user, r.id),
            ).fetchone():
                continue
            rows = [encode_record(v) for v in d.versions]
            cur = c.execute(_INSERT, rows[-1])
            seq = int(cur.lastrowid or 0)
            s._index(c, seq, r.tenant, r.user, d.terms)
            if d.vector is not None:
                s._store_vector(c, seq, r, d.vector)
            named = [dict(zip(COLUMNS, row, strict=True)) for row in rows]
            for old, newer in zip(named[:-1], named[1:], strict=True):
                c.execute(_ARCHIVE, (seq, old["version"], encode_delta(reverse_delta(old, newer))))
            c.executemany(_READERS, purged_reader.reader_rows(d.versions))
            cites.insert_versions(c, d.versions[:-1])  # what the earlier ones name (cites.py)
            c.executemany(_READERS, roles.role_rows([r]))  # its current roles (roles.py)
            cites.insert(c, [r])  # what it cites (cites.py)
            at = str(named[-1]["observed_at"])  # as stored: its public row's place (roles.py)
            c.executemany(_READERS, roles.public_rows([(r, at, seq)]))
            if d.earlier is not None:
                for part, past in part_deltas(r, d.earlier):
                    c.executemany(_ARCHIVE, [(seq, version, blob) for version, blob in past])
                    c.executemany(_READERS, purged_reader.reader_rows(part))
                    cites.insert_versions(c, part)
            c.executemany(
                "INSERT INTO counters (seq, name, value) VALUES (?, ?, ?)",
                [(seq, name, int(v)) for name, v in sorted(d.counters.items())],
            )
            users.add((r.tenant, r.user))
            new += 1
        for tenant, user in sorted(users):
            s._bump(c, tenant, user)
    return new


def insert_history(
    c: sqlite3.Connection,
    histories: Sequence[Sequence[MemoryRecord]],
    newer: Sequence[MemoryRecord | None] | None = None,
    pending: dict[int, int] | None = None,
) -> None:
    """``UnitOfWork.insert_history`` on the transaction's connection: the records' rows
    (one read per user and 500 ids), which of them have history (one read per 500), then
    the deltas in one ``executemany`` (``pending``: the unit of work's, see
    :func:`~memstrata.store.sqlite.history.archived`)."""
    after = newer_of(histories, newer)
    wanted = [list(h) for h in histories if h]
    if not wanted:
        return
    by_user: dict[tuple[str, str], list[str]] = {}
    for past in wanted:
        tenant, user, rid = history_key(past)
        by_user.setdefault((tenant, user), []).append(rid)
    rows: dict[tuple[str, str, str], sqlite3.Row] = {}
    for (tenant, user), ids in by_user.items():
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            for r in c.execute(
                f"SELECT seq, {_COLS} FROM records WHERE tenant = ? AND user = ? AND id IN "
                f"({_marks(len(chunk))})",
                [tenant, user, *chunk],
            ):
                rows[(tenant, user, r["id"])] = r
    seqs = [int(r["seq"]) for r in rows.values()]
    kept: set[int] = set()
    for start in range(0, len(seqs), _CHUNK):
        part = seqs[start : start + _CHUNK]
        kept.update(
            int(seq)
            for (seq,) in c.execute(
                f"SELECT DISTINCT seq FROM record_history WHERE seq IN ({_marks(len(part))})",
                part,
            )
        )
    archive = archived(rows, wanted, kept, after, pending)
    c.executemany(_ARCHIVE, archive)
    c.executemany(_READERS, purged_reader.reader_rows(v for past in wanted for v in past))
    cites.insert_versions(c, [v for past in wanted for v in past])  # (cites.py)


# --- embedding cache -------------------------------------------------------------------------
def dump_cache(s: SQLiteStore, batch_size: int = 500) -> Iterator[list[CacheEntry]]:
    size = max(1, batch_size)
    key: tuple[str, str, str] = ("", "", "")
    while True:
        with s._read() as c:
            rows = c.execute(
                "SELECT scope_tok, model_id, key, vector FROM embedding_cache "
                "WHERE (scope_tok, model_id, key) > (?, ?, ?) "
                "ORDER BY scope_tok, model_id, key LIMIT ?",
                (*key, size),
            ).fetchall()
        if not rows:
            break
        key = (rows[-1][0], rows[-1][1], rows[-1][2])
        yield [CacheEntry(r[0], r[1], r[2], decode_vector(r[3])) for r in rows]
    # Passage vectors that moved into their record: the first per key, unless a cache row
    # holds that key (cached_vectors prefers the row).
    last = 0
    while True:
        with s._read() as c:
            rows = c.execute(
                "SELECT v.seq, r.tenant, r.user, v.model, r.content_hash, v.vector FROM vectors v "
                "JOIN records r ON r.seq = v.seq WHERE v.own = 1 AND v.model IS NOT NULL AND "
                "v.seq > ? AND NOT EXISTS (SELECT 1 FROM records r2 JOIN vectors v2 ON "
                "v2.seq = r2.seq WHERE r2.tenant = r.tenant AND r2.user = r.user AND "
                "r2.content_hash = r.content_hash AND v2.own = 1 AND v2.model = v.model AND "
                "r2.seq < r.seq) ORDER BY v.seq LIMIT ?",
                (last, size),
            ).fetchall()
            if not rows:
                return
            out = []
            for _, tenant, user, model, chash, blob in rows:
                tok = scope_token(tenant, user)
                if c.execute(
                    "SELECT 1 FROM embedding_cache WHERE scope_tok = ? AND "
                    "model_id = ? AND key = ?",
                    (tok, model, chash),
                ).fetchone():
                    continue
                out.append(CacheEntry(tok, model, chash, decode_vector(blob)))
        last = int(rows[-1][0])
        if out:
            yield out


def load_cache(s: SQLiteStore, entries: Sequence[CacheEntry]) -> int:
    rows = []
    for e in entries:
        blob = encode_vector(e.vector)
        rows.append((e.scope_tok, e.model_id, e.key, len(blob) // 4, blob))
    new = 0
    with s._write() as c:
        for row in rows:
            new += c.execute(
                "INSERT INTO embedding_cache (scope_tok, model_id, key, dims, "
                "vector) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                row,
            ).rowcount
    return new


def _pages(
    s: SQLiteStore,
    sql: str,
    key: str,
    first: Any,
    batch_size: int,
    decode: Callable[[sqlite3.Row], T],
) -> Iterator[list[T]]:
    """The rows ``sql`` selects (``... WHERE <key> > ? ORDER BY <key> LIMIT ?``), decoded, a
    page at a time, each page in a read of its own starting after the last one's last
    ``key``."""
    last = first
    while True:
        with s._read() as c:
            rows = c.execute(sql, (last, max(1, batch_size))).fetchall()
        if not rows:
            return
        last = rows[-1][key]
        yield [decode(r) for r in rows]


# --- jobs ------------------------------------------------------------------------------------
def dump_jobs(s: SQLiteStore, batch_size: int = 500) -> Iterator[list[Job]]:
    sql = f"SELECT {JOB_COLUMNS} FROM jobs WHERE id > ? ORDER BY id LIMIT ?"
    return _pages(s, sql, "id", "", batch_size, job_from_row)


def load_jobs(s: SQLiteStore, jobs: Sequence[Job]) -> int:
    rows = [job_row(j) for j in jobs]
    new = 0
    with s._write() as c:
        for row in rows:
            new += c.execute(
                f"INSERT INTO jobs ({JOB_COLUMNS}) VALUES ({_marks(15)}) ON CONFLICT DO NOTHING",
                row,
            ).rowcount
    return new


# --- audit log -------------------------------------------------------------------------------
def dump_audit(s: SQLiteStore, batch_size: int = 500) -> Iterator[list[AuditEvent]]:
    sql = f"SELECT seq, {AUDIT_COLUMNS} FROM audit_log WHERE seq > ? ORDER BY seq LIMIT ?"
    return _pages(s, sql, "seq", 0, batch_size, _event)


def _event(row: sqlite3.Row) -> AuditEvent:
    return event_of_row(tuple(row)[1:], json_ids=True)  # seq, then an event


def load_audit(s: SQLiteStore, events: Sequence[AuditEvent]) -> int:
    rows = [row_of_event(e, json_ids=True) for e in events]
    new = 0
    with s._write() as c:
        for row in rows:
            new += c.execute(
                f"INSERT INTO audit_log ({AUDIT_COLUMNS}) VALUES ({_marks(11)}) "
                "ON CONFLICT (id) DO NOTHING",
                row,
            ).rowcount
        sqlite_index_readers(c, events)
    return new


# --- API keys (the server's api_keys table, when the file has one) -------------------------
def dump_keys(s: SQLiteStore, batch_size: int = 500) -> Iterator[list[KeyRow]]:
    last = ""
    while True:
        with s._read() as c:
            if last == "" and not _has_table(c, "api_keys"):
                return
            rows = c.execute(
                f"SELECT {KEY_ROW_COLUMNS} FROM api_keys WHERE id > ? ORDER BY id LIMIT ?",
                (last, max(1, batch_size)),
            ).fetchall()
        if not rows:
            return
        last = str(rows[-1]["id"])
        yield [KeyRow.of(r) for r in rows]


def load_keys(s: SQLiteStore, keys: Sequence[KeyRow]) -> int:
    if not keys:
        return 0
    new = 0
    with s._write() as c:
        ensure_sqlite_table(c)  # a file no key store opened yet; registered for purges
        for key in keys:
            new += c.execute(INSERT_KEY.format(marks=_marks(9)), key.values()).rowcount
    return new


def _has_table(c: sqlite3.Connection, name: str) -> bool:
    return (
        c.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        is not None
    )


def meta_items(s: SQLiteStore) -> dict[str, str]:
    with s._read() as c:
        rows = c.execute("SELECT key, value FROM meta WHERE key != ? ORDER BY key", (OWED,))
        return {str(k): str(v) for k, v in rows}  # a purge's owed scrub is this file's own
