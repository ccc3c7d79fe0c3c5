"""Where an import's PostgreSQL time goes, against SQLite's (pg33) — docs/measurements.md,
session 33, pg33. Not a test: run it by hand (big_store.py's server must be up).

    PYTHONPATH=SRC python tests/pg33/measure_import.py [RECORDS] [ROUNDS] [profile]

Once: a SQLite memory of ``RECORDS`` synthetic turns of one user (``add_messages``, 500 a
call), a tenth of them edited once (``update``: an earlier version each), exported with
embeddings to /tmp/pg33-export-N.jsonl. Each round imports that file into a fresh SQLite
file and a fresh PostgreSQL schema, and prints each import's time, the statements sent to
PostgreSQL (``execute`` calls, ``executemany`` calls and their rows, ``COPY``s) and whether
the PostgreSQL store exports again what the file holds (the header's time aside).
``profile`` prints each import's 30 costliest functions of the library's stores and memory
(cProfile, cumulative); ``statements`` the 12 PostgreSQL statements that took longest (the
time of their ``execute``, summed by their first 70 characters)."""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from memstrata import Memory, Message, Role, Scope  # noqa: E402
from pg33.big_store import admin_url  # noqa: E402

ALICE = Scope("acme", "alice", session="s1")
TIMES: Counter[str] = Counter()  # seconds per statement (its first 70 characters)


def export_file(n: int) -> Path:
    path = Path(f"/tmp/pg33-export-{n}.jsonl")
    if path.exists():
        return path
    from memstrata.bench.synth import synth_messages

    with tempfile.TemporaryDirectory() as d:
        mem = Memory(f"sqlite:///{d}/src.db", embedder="hashing", background=False)
        msgs = [
            Message(Role(m.role), m.content, observed_at=m.observed_at)
            for m in synth_messages(n, 1, 3)
        ]
        recs: list[Any] = []
        for i in range(0, n, 500):
            recs += mem.add_messages(ALICE, msgs[i : i + 500])
        for rec in recs[::10]:
            mem.update(
                ALICE.user_scope, rec.id, expected_version=rec.version, content=f"edited {rec.text}"
            )
        with path.open("w") as fp:
            mem.export_records(ALICE.user_scope, fp, include_embeddings=True)
        mem.close()
    return path


def counted() -> Counter[str]:
    seen: Counter[str] = Counter()
    cur = psycopg.Cursor
    ex, many, copy = cur.execute, cur.executemany, cur.copy

    def key(query: Any) -> str:
        text = query.decode() if isinstance(query, bytes) else str(query)
        return " ".join(text.split())[:70]

    def execute(self: Any, query: Any, params: Any = None, **kw: Any) -> Any:
        seen["execute"] += 1
        t = time.perf_counter()
        try:
            return ex(self, query, params, **kw)
        finally:
            TIMES[key(query)] += time.perf_counter() - t

    def executemany(self: Any, query: Any, params_seq: Any, **kw: Any) -> Any:
        rows = list(params_seq)
        seen["executemany"] += 1
        seen["executemany rows"] += len(rows)
        t = time.perf_counter()
        try:
            return many(self, query, rows, **kw)
        finally:
            TIMES["many: " + key(query)] += time.perf_counter() - t

    def copy_(self: Any, statement: Any, params: Any = None, **kw: Any) -> Any:
        seen["copy"] += 1
        return copy(self, statement, params, **kw)

    cur.execute, cur.executemany, cur.copy = execute, executemany, copy_  # type: ignore[method-assign]
    return seen


def export_lines(mem: Memory) -> list[Any]:
    out = io.StringIO()
    mem.export_records(ALICE.user_scope, out, include_embeddings=True)
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    return [x for x in lines if "exported_at" not in x]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    profile = "profile" in sys.argv
    path = export_file(n)
    want = [json.loads(x) for x in path.read_text().splitlines()]
    want = [x for x in want if "exported_at" not in x]
    seen = counted()
    for r in range(rounds):
        with tempfile.TemporaryDirectory() as d:
            mem = Memory(f"sqlite:///{d}/dst.db", embedder="hashing", background=False)
            sprof = cProfile.Profile() if profile else None
            t = time.perf_counter()
            with path.open() as fp:
                if sprof:
                    sprof.enable()
                rep = mem.import_records(fp)
                if sprof:
                    sprof.disable()
            sq = time.perf_counter() - t
            mem.close()
        schema = "imp_" + uuid.uuid4().hex[:10]
        url = admin_url() + "&" + f"schema={schema}"
        mem = Memory(url, embedder="hashing", background=False)
        seen.clear()
        TIMES.clear()
        prof = cProfile.Profile() if profile else None
        t = time.perf_counter()
        with path.open() as fp:
            if prof:
                prof.enable()
            rep2 = mem.import_records(fp)
            if prof:
                prof.disable()
        pg = time.perf_counter() - t
        same = export_lines(mem) == want
        mem.close()
        with psycopg.connect(admin_url(), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        print(
            f"round {r}: sqlite {sq:.2f} s ({rep.imported}, {rep.versions} versions), "
            f"postgresql {pg:.2f} s ({rep2.imported}, {rep2.versions}), "
            f"ratio {pg / sq:.2f}, statements {dict(seen)}, round trip same: {same}",
            flush=True,
        )
        if "statements" in sys.argv:
            for q, secs in TIMES.most_common(12):
                print(f"  {secs:7.3f} s  {q}")
        for name, p in (("sqlite", sprof), ("postgresql", prof)):
            if p:
                print("---", name)
                stats = pstats.Stats(p).sort_stats("cumulative")
                stats.print_stats("memstrata/(store|memory|layers)", 30)
    print("load:", os.getloadavg())


if __name__ == "__main__":
    main()
