"""Step 31's back-fill of ``record_past_links`` from the histories written before it, made
before the migration's transaction (pg33).

The step's table and trigger take a lock of ``records`` that every write waits for until
the whole migration commits; the back-fill read every record with a history and rebuilt
its versions in Python inside that transaction (3.3 s for 10,000 histories, with writes
waiting: docs/measurements.md, session 33). Now, when a store is upgraded, :func:`prefill`
makes it first, a part at a time (:data:`PART` records, in autocommit mode), with no lock
of anything but the new table, and notes in a temporary table what it read of each record
(its row's and its deltas' ``xmin``: the transactions that wrote them). In the
migration's transaction the step (:func:`catch_up`) compares that with the rows as they
are, and fills again only the records changed since (a new version, a purge's rewrite, a
history dropped): one set-based read of ``record_history``. Without a pre-fill (a fresh
store, another memstrata's), :func:`fill` reads every history, as before.

A migration killed during the pre-fill leaves the table's rows at its version (< 31):
nothing reads them, and the next upgrade empties it first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import psycopg

from memstrata.store.sqlite.codec import COLUMNS

__all__ = ["DDL", "PART", "catch_up", "fill", "prefill"]

# v31 (pg32): what a store purge reads for refreshed notes. A purge rewrote every record of
# the user holding a refreshed note (records_noted: an archived version's note, or what it
# cited, may name a purged id), reading each one's whole history at every purge. Now it
# reads those whose versions name a purged id: ``record_past_links`` holds every id an
# archived version names where a purge rewrites it (citations.linked_columns: its
# sources, a cluster's members, the link fields of ``linked_ids``), written by a trigger
# when an update changes one of those columns (the version it archives), kept while the
# record is (ON DELETE CASCADE); the current version's are found by records_linked and
# records_cited. Versions archived before this step are read once from the history.
TABLE = """
CREATE TABLE IF NOT EXISTS record_past_links (
    id TEXT COLLATE "C" NOT NULL,
    seq BIGINT NOT NULL REFERENCES records (seq) ON DELETE CASCADE,
    PRIMARY KEY (id, seq)
);
CREATE INDEX IF NOT EXISTS record_past_links_seq ON record_past_links (seq);
"""
DDL = (
    TABLE
    + """
CREATE OR REPLACE FUNCTION record_past_links_keep() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO record_past_links (id, seq)
  SELECT DISTINCT i, OLD.seq FROM (
    SELECT unnest(linked_ids(OLD.structured, OLD.metadata, OLD.relations, OLD.superseded_by))
    UNION ALL SELECT v #>> '{}' FROM jsonb_path_query(OLD.source_ids::jsonb, 'lax $[*]') v
      WHERE jsonb_typeof(v) = 'string'
    UNION ALL SELECT v #>> '{}' FROM jsonb_path_query(OLD.structured::jsonb, 'lax $.members[*]') v
      WHERE jsonb_typeof(v) = 'string'
  ) q (i) WHERE i <> '[purged]' AND i <> OLD.id
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $f$;
DROP TRIGGER IF EXISTS record_past_links ON records;
CREATE TRIGGER record_past_links AFTER UPDATE ON records FOR EACH ROW
WHEN (OLD.source_ids IS DISTINCT FROM NEW.source_ids
   OR OLD.structured IS DISTINCT FROM NEW.structured
   OR OLD.metadata IS DISTINCT FROM NEW.metadata
   OR OLD.relations IS DISTINCT FROM NEW.relations
   OR OLD.superseded_by IS DISTINCT FROM NEW.superseded_by)
EXECUTE FUNCTION record_past_links_keep();
"""
)
PART = 200  # records whose history is read at a time
_SEEN = "pg_temp.memstrata_past_links_seen"  # what the pre-fill read, for this session
_COLS = ", ".join(f'"{c}"' if c == "user" else c for c in COLUMNS)
_FILL = (
    "INSERT INTO record_past_links (id, seq) SELECT u.id, u.seq FROM "
    "unnest(%s::text[], %s::bigint[]) AS u (id, seq) "
    "WHERE EXISTS (SELECT 1 FROM records r WHERE r.seq = u.seq) ON CONFLICT DO NOTHING"
)
_TRIES = 5  # a record deleted between a part's read and its insert: the insert again


async def _part(
    cur: psycopg.AsyncCursor[tuple[object, ...]], seqs: Sequence[int], seen: bool
) -> None:
    """Fill the ids of the archived versions of the records ``seqs``; ``seen`` (the
    pre-fill, in autocommit mode): note in :data:`_SEEN` the ``xmin`` of each row and
    delta read, in the statements that read them (a write between the two reads changes
    one of them, so the step fills that record again)."""
    from memstrata.store.citations import linked_columns
    from memstrata.store.sqlite.history import apply_delta, decode_delta

    await cur.execute(
        f"SELECT seq, xmin::text AS x_, {_COLS} FROM records WHERE seq = ANY(%s) ORDER BY seq",
        (list(seqs),),
    )
    names = [d.name for d in cur.description or ()]
    rows = [dict(zip(names, r, strict=True)) for r in await cur.fetchall()]
    await cur.execute(
        "SELECT seq, version, xmin::text, delta FROM record_history WHERE seq = ANY(%s) "
        "ORDER BY seq, version DESC",
        (list(seqs),),
    )
    deltas: dict[int, list[tuple[int, bytes]]] = {}
    read: list[tuple[int, int, str]] = []
    for seq, version, x, delta in await cur.fetchall():
        deltas.setdefault(cast(int, seq), []).append(
            (cast(int, version), bytes(cast(bytes, delta)))
        )
        read.append((cast(int, seq), cast(int, version), str(x)))
    pairs: set[tuple[str, int]] = set()
    for row in rows:
        seq = cast(int, row["seq"])
        read.append((seq, -1, str(row.pop("x_"))))
        version = {k: v for k, v in row.items() if k != "seq"}
        for v, blob in deltas.get(seq, []):
            if v >= int(cast(int, row["version"])):
                continue
            version = apply_delta(version, decode_delta(blob))
            pairs.update((i, seq) for i in linked_columns(version) if i != row["id"])
    if pairs:
        ids, ofs = zip(*sorted(pairs), strict=True)
        for tried in range(1, _TRIES + 1):
            try:
                await cur.execute(_FILL, (list(ids), list(ofs)))
                break
            except psycopg.errors.ForeignKeyViolation:
                if not seen or tried == _TRIES:
                    raise
    if seen:
        await cur.execute(
            f"INSERT INTO {_SEEN} (seq, version, x) SELECT * FROM "
            "unnest(%s::bigint[], %s::int[], %s::text[])",
            [list(c) for c in zip(*read, strict=True)] if read else ([], [], []),
        )


async def _parts(cur: psycopg.AsyncCursor[tuple[object, ...]], last: int) -> list[int]:
    """The next :data:`PART` records with a history after ``seq`` ``last``."""
    await cur.execute(
        "SELECT DISTINCT seq FROM record_history WHERE seq > %s ORDER BY seq LIMIT %s",
        (last, PART),
    )
    return [cast(int, r[0]) for r in await cur.fetchall()]


async def fill(cur: psycopg.AsyncCursor[tuple[object, ...]]) -> None:
    """Every record with a history, :data:`PART` at a time (its versions rebuilt from its
    deltas once), in the caller's transaction."""
    last = 0
    while seqs := await _parts(cur, last):
        await _part(cur, seqs, seen=False)
        last = seqs[-1]


async def prefill(conn: psycopg.AsyncConnection[tuple[object, ...]]) -> None:
    """Fill the table (made here if missing, emptied if a killed upgrade left rows) before
    the migration's transaction, a transaction a part; ``conn`` is in autocommit mode, its
    search path the store's schema; the caller holds the migration lock."""
    async with conn.cursor() as cur:
        await cur.execute(TABLE.encode())
        await cur.execute("TRUNCATE record_past_links")
        await cur.execute(
            f"CREATE TEMPORARY TABLE IF NOT EXISTS {_SEEN.split('.')[1]} "
            "(seq BIGINT NOT NULL, version INTEGER NOT NULL, x TEXT NOT NULL)"
        )
        await cur.execute(f"TRUNCATE {_SEEN}")
        last = 0
        while seqs := await _parts(cur, last):
            await _part(cur, seqs, seen=True)
            last = seqs[-1]


async def catch_up(cur: psycopg.AsyncCursor[tuple[object, ...]]) -> bool:
    """In the migration's transaction, after the trigger: fill again the records whose row
    or deltas changed since :func:`prefill` read them; ``False`` (nothing done) when no
    pre-fill was made in this session."""
    await cur.execute("SELECT to_regclass(%s) IS NOT NULL", (_SEEN,))
    row = await cur.fetchone()
    if not row or not row[0]:
        return False
    await cur.execute(
        "WITH now AS (SELECT r.seq, -1 AS version, r.xmin::text AS x FROM records r "
        "WHERE r.seq IN (SELECT seq FROM record_history) UNION ALL "
        "SELECT h.seq, h.version, h.xmin::text FROM record_history h) "
        f"SELECT DISTINCT coalesce(n.seq, s.seq) FROM now n FULL JOIN {_SEEN} s "
        "ON s.seq = n.seq AND s.version = n.version AND s.x = n.x "
        "WHERE n.seq IS NULL OR s.seq IS NULL ORDER BY 1"
    )
    changed = [cast(int, r[0]) for r in await cur.fetchall()]
    for at in range(0, len(changed), PART):
        seqs = changed[at : at + PART]
        await cur.execute("DELETE FROM record_past_links WHERE seq = ANY(%s)", (seqs,))
        await _part(cur, seqs, seen=False)
    await cur.execute(f"DROP TABLE {_SEEN}")
    return True
