"""The PostgreSQL look-up of a store purge (records naming the purged ids), before and after
purge31b, on one user of ``turns`` turns (tests/purge31/users.py) — docs/measurements.md,
session 31, purge31b. Not a test: run it by hand.

    PYTHONPATH=src python tests/purge31b/measure_pg_lookup.py [turns ...]

Printed for each size: the rows and shared buffers of the scan (lead31's statement) and of
the two statements that replace it (EXPLAIN ANALYZE, BUFFERS), for the victim's id."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

from memstrata import Memory
from memstrata.store.postgres.schema import LINKED_ROWS, NOTED_ROWS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from purge31.users import user_of_size  # noqa: E402
from servers import postgres  # noqa: E402

SCAN = (
    "SELECT seq, superseded_by, structured, metadata, source_ids, relations "
    'FROM records WHERE tenant = %s AND "user" = %s AND ' + LINKED_ROWS
)
LINKED = (
    "SELECT seq, superseded_by, structured, metadata, source_ids, relations FROM records "
    'WHERE tenant = %s AND "user" = %s AND '
    "linked_ids(structured, metadata, relations, superseded_by) && %s::text[] AND " + LINKED_ROWS
)
NOTED = (
    "SELECT seq, superseded_by, structured, metadata, source_ids, relations FROM records "
    'WHERE tenant = %s AND "user" = %s AND ' + NOTED_ROWS
)


def _plan(conn: object, sql: str, args: Sequence[object]) -> str:
    rows = conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, args).fetchall()  # type: ignore[attr-defined]
    text = "\n".join(str(r[0]) for r in rows)
    top = text.splitlines()[0]
    buffers = re.search(r"Buffers: shared hit=(\d+)(?: read=(\d+))?", text)
    hit = int(buffers.group(1)) + int(buffers.group(2) or 0) if buffers else 0
    removed = sum(int(x) for x in re.findall(r"Rows Removed by Filter: (\d+)", text))
    time = re.search(r"Execution Time: ([\d.]+) ms", text)
    took = time.group(1) if time else "?"
    return f"{top.split('  (')[0].strip()} | buffers {hit} | filtered out {removed} | {took} ms"


def main() -> None:
    import uuid

    import psycopg

    server = postgres()
    schema = "t_" + uuid.uuid4().hex[:16]
    url = server.url(schema)
    with Memory(url, embedder="hashing", background=False) as mem:
        for n in [int(a) for a in sys.argv[1:]] or [100, 1000, 10000]:
            user = f"u{n}"
            scope, victim = user_of_size(mem, user, n)
            with psycopg.connect(server.admin_url, autocommit=True) as conn:
                conn.execute(f'SET search_path TO "{schema}", public')
                conn.execute("ANALYZE records")
                for name, sql, args in (
                    ("scan", SCAN, ["acme", user]),
                    ("linked", LINKED, ["acme", user, [victim]]),
                    ("noted", NOTED, ["acme", user]),
                ):
                    print(n, name, _plan(conn, sql, args), flush=True)
    server.drop(schema)


if __name__ == "__main__":
    main()
