"""Bulk read and write of a PostgreSQL store (:class:`~memstrata.store.base.StoreCopy`).

``memstrata migrate`` copies a store through these functions; the store's methods of the
same names call them. A dump reads its pages by key (``seq`` for records and audit events,
the primary key otherwise) inside one read-only REPEATABLE READ transaction: the copy is the
store at one moment, with nothing skipped that committed out of ``seq`` order and no record
whose history was read after its row changed. Each load is one transaction that skips what
is already there, so an interrupted copy can be run again. A record with more than
``portability.HISTORY_PAGE`` earlier versions has its deltas spooled to a temporary file
(in the snapshot, a page at a time) and its versions made a part at a time, newest part
first (``RecordDump.earlier``); a load writes the parts as they come, in its transaction,
so a copy killed in the middle of one leaves none of it. A record's terms are
read back as what the lexical index holds for it (``lex_tokens``: FTS5's tokens of its
terms), which index to the very same tokens again.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from memstrata._async.store.postgres.audit import AUDIT_COLUMNS
from memstrata._async.store.postgres.outbox import JOB_COLUMNS
from memstrata._async.store.postgres.vectors import vector_array
from memstrata.audit import AuditEvent
from memstrata.audit_types import event_of_row, row_of_event
from memstrata.jobs import Job
from memstrata.records import MemoryRecord
from memstrata.store import citations, purged_reader
from memstrata.store.history_parts import EarlierVersions, PartSpool, batch_cut, part_size
from memstrata.store.key_rows import INSERT_KEY, KEY_ROW_COLUMNS, KeyRow, pg_registration
from memstrata.store.past_versions import history_key, newer_of
from memstrata.store.sqlite.codec import (
    COLUMNS,
    decode_record,
    decode_vector,
    encode_record,
    encode_vector,
    scope_token,
)
from memstrata.store.sqlite.history import (
    apply_delta,
    archived,
    decode_delta,
    encode_delta,
    newest_parts,
    part_deltas,
    reverse_delta,
)
from memstrata.store.sqlite.outbox import job_from_row, job_row
from memstrata.store.types import CacheEntry, RecordDump, RecordWrite

if TYPE_CHECKING:
    from memstrata._async.store.postgres.store import AsyncPostgresStore

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

_QCOLS = ", ".join(f'"{c}"' if c == "user" else c for c in COLUMNS)
_KEYS = "unnest(%s::text[], %s::text[], %s::text[]) AS k(t, u, i)"
_MATCH = 'v.tenant = k.t COLLATE "C" AND v."user" = k.u COLLATE "C" AND v.id = k.i COLLATE "C"'
T = TypeVar("T")


_DEFERRED: weakref.WeakKeyDictionary[AsyncPostgresStore, set[int]] = weakref.WeakKeyDictionary()


async def finish_load(s: AsyncPostgresStore) -> None:
    """Build the HNSW indexes whose creation loading deferred."""
    for dims in sorted(_DEFERRED.pop(s, set())):
        s._hnsw.discard(dims)
        await s._ensure_hnsw(dims)


def _keys(records: Sequence[Any]) -> tuple[list[str], list[str], list[str]]:
    return ([r.tenant for r in records], [r.user for r in records], [r.id for r in records])


# --- records ---------------------------------------------------------------------------------
async def dump_records(
    s: AsyncPostgresStore, batch_size: int = 500
) -> AsyncIterator[list[RecordDump]]:
    last = 0
    size = max(1, batch_size)
    limit = part_size()
    spools: list[PartSpool[tuple[int, bytes]]] = []  # the long histories of the batch given
    try:
        async with s._snapshot() as c:
            while True:
                _close(spools)
                rows = await (
                    await c.execute(
                        f"SELECT seq, {_QCOLS}, lex_tokens FROM records WHERE seq > %s "
                        "ORDER BY seq LIMIT %s",
                        (last, size),
                    )
                ).fetchall()
                if not rows:
                    return
                rows = rows[: batch_cut([int(r["version"]) - 1 for r in rows], limit)]
                seqs = [int(r["seq"]) for r in rows]
                vectors = {
                    int(r["seq"]): np.asarray(r["embedding"].to_numpy(), dtype=np.float32)
                    for r in await (
                        await c.execute(
                            "SELECT seq, embedding FROM vectors WHERE seq = ANY(%s)", (seqs,)
                        )
                    ).fetchall()
                }
                counters: dict[int, dict[str, int]] = {}
                for r in await (
                    await c.execute(
                        "SELECT seq, name, value FROM counters WHERE seq = ANY(%s)", (seqs,)
                    )
                ).fetchall():
                    counters.setdefault(int(r["seq"]), {})[str(r["name"])] = int(r["value"])
                current = [decode_record(r) for r in rows]
                long = {int(r["seq"]) for r in rows if int(r["version"]) - 1 > limit}
                older = [
                    int(r["seq"])
                    for r, rec in zip(rows, current, strict=True)
                    if rec.version > 1 and int(r["seq"]) not in long
                ]
                deltas: dict[int, list[bytes]] = {}
                if older:
                    for h in await (
                        await c.execute(
                            "SELECT seq, delta FROM record_history WHERE seq = ANY(%s) "
                            "ORDER BY seq, version DESC",
                            (older,),
                        )
                    ).fetchall():
                        deltas.setdefault(int(h["seq"]), []).append(bytes(h["delta"]))
                spooled: dict[int, tuple[int, PartSpool[tuple[int, bytes]]]] = {}
                for r in rows:  # in the snapshot: the row's own history
                    if (seq := int(r["seq"])) in long:
                        spools.append(spool := PartSpool[tuple[int, bytes]]())
                        held = await _spool_history(c, seq, int(r["version"]), spool, limit)
                        spooled[seq] = (held, spool)
                out = []
                for row, rec in zip(rows, current, strict=True):
                    seq = int(row["seq"])
                    newest: list[Any] = [rec]
                    earlier = None
                    if seq in spooled:
                        count, spool = spooled[seq]
                        earlier = EarlierVersions(count, newest_parts(row, spool))
                    else:
                        values: dict[str, Any] = {col: row[col] for col in COLUMNS}
                        for blob in deltas.get(seq, []):
                            values = apply_delta(values, decode_delta(blob))
                            newest.append(decode_record(values))
                    versions = tuple(reversed(newest))
                    out.append(
                        RecordDump(
                            versions,
                            vectors.get(seq),
                            tuple(row["lex_tokens"] or ()),
                            counters.get(seq, {}),
                            earlier,
                        )
                    )
                last = seqs[-1]
                yield out
    finally:
        _close(spools)


async def _spool_history(
    c: Any, seq: int, below: int, spool: PartSpool[tuple[int, bytes]], size: int
) -> int:
    """Spool the deltas of record ``seq`` below version ``below`` (its row's), newest
    first, ``size`` a page (keyset: one page held at a time); how many."""
    count = 0
    while page := await (
        await c.execute(
            "SELECT version, delta FROM record_history WHERE seq = %s AND version < %s "
            "ORDER BY version DESC LIMIT %s",
            (seq, below, size),
        )
    ).fetchall():
        spool.add([(int(h["version"]), bytes(h["delta"])) for h in page])
        count += len(page)
        below = int(page[-1]["version"])
    return count


def _close(spools: list[PartSpool[tuple[int, bytes]]]) -> None:
    for spool in spools:
        spool.close()
    spools.clear()


async def load_records(s: AsyncPostgresStore, dumps: Sequence[RecordDump]) -> int:
    if not dumps:
        return 0
    async with s._read() as c:
        present = {
            (r["t"], r["u"], r["i"])
            for r in await (
                await c.execute(
                    f"SELECT k.t, k.u, k.i FROM {_KEYS} JOIN records v ON {_MATCH}",
                    _keys([d.record for d in dumps]),
                )
            ).fetchall()
        }
    todo = [d for d in dumps if (d.record.tenant, d.record.user, d.record.id) not in present]
    if not todo:
        return 0
    # The HNSW index is built once at the end (finish_load): filled row by row it made the
    # copy 4.4x slower (2,000 records, measured).
    for d in todo:
        if d.vector is not None:
            dims = int(np.asarray(d.vector).size)
            if dims not in s._hnsw:
                s._hnsw.add(dims)
                _DEFERRED.setdefault(s, set()).add(dims)
    prepared = s._prepare([RecordWrite(d.record, d.vector, d.terms) for d in todo])
    async with s._write() as c:
        # Another process may have loaded some of them since: look again, inside.
        present = {
            (r["t"], r["u"], r["i"])
            for r in await (
                await c.execute(
                    f"SELECT k.t, k.u, k.i FROM {_KEYS} JOIN records v ON {_MATCH}",
                    _keys([d.record for d in todo]),
                )
            ).fetchall()
        }
        if present:
            keep = [
                i
                for i, d in enumerate(todo)
                if (d.record.tenant, d.record.user, d.record.id) not in present
            ]
            todo = [todo[i] for i in keep]
            prepared = [prepared[i] for i in keep]
        await s._insert(c, prepared, own=False)  # the cache as it was copied: see _insert
        seqs = {
            (r["tenant"], r["user"], r["id"]): int(r["seq"])
            for r in await (
                await c.execute(
                    f'SELECT v.seq, v.tenant, v."user", v.id FROM {_KEYS} '
                    f"JOIN records v ON {_MATCH}",
                    _keys([d.record for d in todo]),
                )
            ).fetchall()
        }
        history = []
        for d in todo:
            named = [dict(zip(COLUMNS, encode_record(v), strict=True)) for v in d.versions]
            seq = seqs[(d.record.tenant, d.record.user, d.record.id)]
            for old, newer in zip(named[:-1], named[1:], strict=True):
                history.append((seq, old["version"], encode_delta(reverse_delta(old, newer))))
        if history:
            async with c.cursor() as cur:
                await cur.executemany(
                    "INSERT INTO record_history (seq, version, delta) VALUES (%s, %s, %s)",
                    history,
                )
        await add_readers(c, purged_reader.reader_rows(v for d in todo for v in d.versions[:-1]))
        await add_past_links(
            c,
            [
                (seqs[(d.record.tenant, d.record.user, d.record.id)], v)
                for d in todo
                for v in d.versions[:-1]
            ],
        )
        for d in todo:  # long histories: a part at a time, in this transaction
            if d.earlier is None:
                continue
            seq = seqs[(d.record.tenant, d.record.user, d.record.id)]
            for part, past in part_deltas(d.record, d.earlier):
                async with c.cursor() as cur:
                    await cur.executemany(
                        "INSERT INTO record_history (seq, version, delta) VALUES (%s, %s, %s)",
                        [(seq, version, blob) for version, blob in past],
                    )
                await add_readers(c, purged_reader.reader_rows(part))
                await add_past_links(c, [(seq, v) for v in part])
        counts = [
            (seqs[(d.record.tenant, d.record.user, d.record.id)], name, int(value))
            for d in todo
            for name, value in sorted(d.counters.items())
        ]
        if counts:
            async with c.cursor() as cur:
                await cur.executemany(
                    "INSERT INTO counters (seq, name, value) VALUES (%s, %s, %s)", counts
                )
        for tenant, user in sorted({(d.record.tenant, d.record.user) for d in todo}):
            await s._bump(c, tenant, user)
    if todo:
        s._grew(len(todo))
    return len(todo)


async def insert_history(
    c: Any,
    histories: Sequence[Sequence[MemoryRecord]],
    newer: Sequence[MemoryRecord | None] | None = None,
    pending: dict[int, int] | None = None,
) -> None:
    """``UnitOfWork.insert_history`` on the transaction's connection: the records' rows
    and which of them have history (two reads), then the deltas in one ``executemany``
    (``pending``: the unit of work's, see :func:`memstrata.store.sqlite.history.archived`)."""
    after = newer_of(histories, newer)
    wanted = [list(h) for h in histories if h]
    if not wanted:
        return
    keys = [history_key(past) for past in wanted]
    columns = ", ".join(f"v.{q}" for q in _QCOLS.split(", "))
    rows = {
        (r["tenant"], r["user"], r["id"]): r
        for r in await (
            await c.execute(
                f"SELECT v.seq, {columns} FROM {_KEYS} JOIN records v ON {_MATCH}",
                [list(col) for col in zip(*keys, strict=True)],
            )
        ).fetchall()
    }
    kept = {
        int(r["seq"])
        for r in await (
            await c.execute(
                "SELECT DISTINCT seq FROM record_history WHERE seq = ANY(%s)",
                ([int(r["seq"]) for r in rows.values()],),
            )
        ).fetchall()
    }
    archive = archived(rows, wanted, kept, after, pending)
    async with c.cursor() as cur:
        await cur.executemany(
            "INSERT INTO record_history (seq, version, delta) VALUES (%s, %s, %s)", archive
        )
    await add_readers(c, purged_reader.reader_rows(v for past in wanted for v in past))
    await add_past_links(
        c,
        [
            (int(rows[history_key(p)]["seq"]), v)
            for p in wanted
            for v in p
            if history_key(p) in rows
        ],
    )


async def add_past_links(c: Any, versions: Sequence[tuple[int, MemoryRecord]]) -> None:
    """The ids archived versions name where a purge rewrites them (``citations.linked``),
    by the ``seq`` of their record: step 31's ``record_past_links`` (its trigger sees the
    versions an update archives, not those a load or an import writes as history)."""
    links = sorted({(i, seq) for seq, v in versions for i in citations.linked(v) if i != v.id})
    if links:
        await c.execute(
            "INSERT INTO record_past_links (id, seq) SELECT * FROM "
            "unnest(%s::text[], %s::bigint[]) ON CONFLICT DO NOTHING",
            ([i for i, _ in links], [seq for _, seq in links]),
        )


async def add_readers(c: Any, rows: Sequence[purged_reader.ReaderRow]) -> None:
    """Rows of the index of readers (store/purged_reader.py) for versions written as deltas
    and loaded events (a current row's are the trigger's, schema step 20)."""
    rows = [r for r in rows if "\x00" not in r[1]]  # a legacy id (schema.py, step 20)
    if rows:
        async with c.cursor() as cur:
            await cur.executemany(
                'INSERT INTO record_readers (tenant, reader, "user", id) '
                "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                rows,
            )


# --- embedding cache -------------------------------------------------------------------------
async def dump_cache(
    s: AsyncPostgresStore, batch_size: int = 500
) -> AsyncIterator[list[CacheEntry]]:
    key = ("", "", "")
    async with s._snapshot() as c:
        while True:
            rows = await (
                await c.execute(
                    "SELECT scope_tok, model_id, key, vector FROM embedding_cache "
                    "WHERE (scope_tok, model_id, key) > (%s, %s, %s) "
                    "ORDER BY scope_tok, model_id, key LIMIT %s",
                    (*key, max(1, batch_size)),
                )
            ).fetchall()
            if not rows:
                break
            key = (rows[-1]["scope_tok"], rows[-1]["model_id"], rows[-1]["key"])
            yield [
                CacheEntry(
                    r["scope_tok"], r["model_id"], r["key"], decode_vector(bytes(r["vector"]))
                )
                for r in rows
            ]
        # Passage vectors that moved into their record (``vectors.own``): the first per key,
        # unless a cache row holds that key (cached_vectors prefers the row), as SQLite.
        last = 0
        while True:
            rows = await (await c.execute(_OWN_ENTRIES, (last, max(1, batch_size)))).fetchall()
            if not rows:
                return
            last = int(rows[-1]["seq"])
            found = [
                (scope_token(r["tenant"], r["user"]), r["model"], r["content_hash"], r)
                for r in rows
            ]
            held = await (
                await c.execute(
                    "SELECT scope_tok, model_id, key FROM embedding_cache WHERE (scope_tok, "
                    "model_id, key) IN (SELECT * FROM unnest(%s::text[], %s::text[], %s::text[]))",
                    [[f[i] for f in found] for i in range(3)],
                )
            ).fetchall()
            rowed = {(h["scope_tok"], h["model_id"], h["key"]) for h in held}
            out = [
                CacheEntry(tok, model, key, vector_array(r["embedding"]))
                for tok, model, key, r in found
                if (tok, model, key) not in rowed
            ]
            if out:
                yield out


_OWN_ENTRIES = (
    'SELECT v.seq, r.tenant, r."user", v.model, r.content_hash, v.embedding FROM vectors v '
    "JOIN records r ON r.seq = v.seq WHERE v.own AND v.model IS NOT NULL AND v.seq > %s "
    "AND NOT EXISTS (SELECT 1 FROM records r2 JOIN vectors v2 ON v2.seq = r2.seq WHERE "
    'r2.tenant = r.tenant AND r2."user" = r."user" AND r2.content_hash = r.content_hash '
    "AND v2.own AND v2.model = v.model AND r2.seq < r.seq) ORDER BY v.seq LIMIT %s"
)


async def load_cache(s: AsyncPostgresStore, entries: Sequence[CacheEntry]) -> int:
    if not entries:
        return 0
    blobs = [encode_vector(e.vector) for e in entries]
    async with s._write() as c:
        cur = await c.execute(
            "INSERT INTO embedding_cache (scope_tok, model_id, key, dims, vector) "
            "SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::int[], %s::bytea[]) "
            "ON CONFLICT DO NOTHING",
            (
                [e.scope_tok for e in entries],
                [e.model_id for e in entries],
                [e.key for e in entries],
                [len(b) // 4 for b in blobs],
                blobs,
            ),
        )
        return int(cur.rowcount)


async def _pages(
    s: AsyncPostgresStore,
    sql: str,
    key: str,
    first: Any,
    batch_size: int,
    decode: Callable[[Any], T],
) -> AsyncIterator[list[T]]:
    """The rows ``sql`` selects (``... WHERE <key> > %s ORDER BY <key> LIMIT %s``), decoded, a
    page at a time in one snapshot: each page starts after the last one's last ``key``."""
    last = first
    async with s._snapshot() as c:
        while True:
            rows = await (await c.execute(sql, (last, max(1, batch_size)))).fetchall()
            if not rows:
                return
            last = rows[-1][key]
            yield [decode(r) for r in rows]


# --- jobs ------------------------------------------------------------------------------------
def dump_jobs(s: AsyncPostgresStore, batch_size: int = 500) -> AsyncIterator[list[Job]]:
    sql = f"SELECT {JOB_COLUMNS} FROM jobs WHERE id > %s ORDER BY id LIMIT %s"
    return _pages(s, sql, "id", "", batch_size, job_from_row)


async def load_jobs(s: AsyncPostgresStore, jobs: Sequence[Job]) -> int:
    rows = [job_row(j) for j in jobs]
    new = 0
    async with s._write() as c:
        for row in rows:
            new += (
                await c.execute(
                    f"INSERT INTO jobs ({JOB_COLUMNS}) VALUES "
                    f"({', '.join(['%s'] * 15)}) ON CONFLICT DO NOTHING",
                    row,
                )
            ).rowcount
    return new


# --- audit log -------------------------------------------------------------------------------
def dump_audit(s: AsyncPostgresStore, batch_size: int = 500) -> AsyncIterator[list[AuditEvent]]:
    sql = f"SELECT seq, {AUDIT_COLUMNS} FROM audit_log WHERE seq > %s ORDER BY seq LIMIT %s"
    return _pages(s, sql, "seq", 0, batch_size, _event)


def _event(row: Any) -> AuditEvent:
    return event_of_row(tuple(row.values())[1:], json_ids=False)  # seq, then an event


async def load_audit(s: AsyncPostgresStore, events: Sequence[AuditEvent]) -> int:
    rows = [row_of_event(e, json_ids=False) for e in events]
    new = 0
    async with s._write() as c:
        for row in rows:
            new += (
                await c.execute(
                    f"INSERT INTO audit_log ({AUDIT_COLUMNS}) VALUES "
                    f"({', '.join(['%s'] * 11)}) ON CONFLICT (id) DO NOTHING",
                    row,
                )
            ).rowcount
        await add_readers(c, purged_reader.event_reader_rows(events))
    return new


# --- API keys (the server's api_keys table, schema step 5) ---------------------------------
def dump_keys(s: AsyncPostgresStore, batch_size: int = 500) -> AsyncIterator[list[KeyRow]]:
    sql = f"SELECT {KEY_ROW_COLUMNS} FROM api_keys WHERE id > %s ORDER BY id LIMIT %s"
    return _pages(s, sql, "id", "", batch_size, KeyRow.of)


async def load_keys(s: AsyncPostgresStore, keys: Sequence[KeyRow]) -> int:
    if not keys:
        return 0
    new = 0
    async with s._write() as c:
        for statement, params in pg_registration():  # for users' purges (user_tables.py)
            await c.execute(statement, params)
        for key in keys:
            new += (
                await c.execute(INSERT_KEY.format(marks=", ".join(["%s"] * 9)), key.values())
            ).rowcount
    return new


async def meta_items(s: AsyncPostgresStore) -> dict[str, str]:
    async with s._read() as c:
        return {
            str(r["key"]): str(r["value"])
            for r in await (await c.execute("SELECT key, value FROM meta ORDER BY key")).fetchall()
        }
