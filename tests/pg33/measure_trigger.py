"""What step 31's trigger adds to a cluster's updates, by the rule of step 31 (every id of
the archived version) and of step 33 (the ids the update drops) — docs/measurements.md,
session 33, pg33. Not a test: run it by hand (big_store.py's server must be up).

    PYTHONPATH=src python tests/pg33/measure_trigger.py [MEMBERS] [ROUNDS]

Each round, for each rule (and with no trigger), on a fresh schema: a cluster record
replaced ``MEMBERS`` times, each replace adding one member (``store.replace``); printed
the median time of the last 100 replaces and the rows ``record_past_links`` holds."""

from __future__ import annotations

import statistics
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from memstrata import Memory, Message, Role, Scope  # noqa: E402
from memstrata.records import Content  # noqa: E402
from memstrata.store.postgres import backfill  # noqa: E402
from memstrata.store.types import RecordWrite  # noqa: E402
from pg33.big_store import admin_url  # noqa: E402


def run(rule: str, members: int) -> tuple[float, int]:
    schema = "trg_" + uuid.uuid4().hex[:10]
    url = admin_url() + f"&schema={schema}"
    mem = Memory(url, embedder="hashing", background=False)
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}", public')
        if rule == "none":
            conn.execute("DROP TRIGGER record_past_links ON records")
        elif rule == "31":
            conn.execute(backfill.DDL.encode())  # step 31's function and trigger
    scope = Scope("acme", "alice", session="s1")
    owner = scope.user_scope
    turns = [
        t.id
        for at in range(0, members, 500)
        for t in mem.add_messages(
            scope,
            [Message(Role.USER, f"turn {i}") for i in range(at, min(members, at + 500))],
        )
    ]
    rid = mem.add(owner, "a cluster", type="cluster", dedup=False).id
    took = []
    for n in range(1, members + 1):
        r = mem.store.get(owner, rid, include_deleted=True)
        new = replace(
            r,
            version=r.version + 1,
            content=Content(r.text, None, {"members": turns[:n]}),
            source_ids=tuple(turns[:n]),
        )
        t = time.perf_counter()
        mem.store.replace(owner, RecordWrite(new, None, ()), expected_version=r.version)
        took.append(time.perf_counter() - t)
    mem.close()
    with psycopg.connect(admin_url(), autocommit=True) as conn:
        (rows,) = conn.execute(f'SELECT count(*) FROM "{schema}".record_past_links').fetchone()
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    return statistics.median(took[-100:]) * 1e3, int(rows)


def main() -> None:
    members = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    for r in range(rounds):
        for rule in ("31", "33", "none")[:: 1 if r % 2 == 0 else -1]:
            ms, rows = run(rule, members)
            print(f"round {r} rule {rule}: median replace {ms:.2f} ms, {rows} rows", flush=True)


if __name__ == "__main__":
    main()
