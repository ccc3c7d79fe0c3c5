"""What step 31's trigger adds to an update that changes a link column — docs/
measurements.md, session 32, pg32. Not a test: run it by hand.

    PYTHONPATH=src python tests/pg32/measure_update.py NAME=SRC NAME=SRC

Alternating rounds (20), each a fresh process on a fresh schema: 20 summaries, each
replaced 15 times with another 10 of 200 turns as its sources (``store.replace``); printed
the median of the rounds' median times of one replace, for each tree."""

from __future__ import annotations

import statistics
import subprocess
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from servers import postgres  # noqa: E402

ROUND = """
import statistics, sys, time
from dataclasses import replace
from memstrata import Memory, Message, Scope
from memstrata.records import Role
from memstrata.store.types import RecordWrite
mem = Memory(sys.argv[1], embedder="hashing", background=False)
scope = Scope("acme", "alice", session="s1")
owner = scope.user_scope
said = [Message(Role.USER, f"turn {i}") for i in range(200)]
turns = [t.id for t in mem.add_messages(scope, said)]
recs = [mem.add(owner, f"summary {k}", type="summary", dedup=False).id for k in range(20)]
took = []
for rnd in range(int(sys.argv[2])):
    for k, rid in enumerate(recs):
        r = mem.store.get(owner, rid, include_deleted=True)
        start = (rnd + k) % 190
        new = replace(r, version=r.version + 1, source_ids=tuple(turns[start:start + 10]))
        t = time.perf_counter()
        mem.store.replace(owner, RecordWrite(new, None, ()), expected_version=r.version)
        took.append(time.perf_counter() - t)
mem.close()
print(statistics.median(took) * 1e3)
"""
server = postgres()
trees = dict(a.split("=") for a in sys.argv[1:])
out = {}
for r in range(20):
    for name, src in list(trees.items())[:: 1 if r % 2 == 0 else -1]:
        schema = "u_" + uuid.uuid4().hex[:12]
        d = subprocess.run(
            [sys.executable, "-c", ROUND, server.url(schema), "15"],
            env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        )
        out.setdefault(name, []).append(float(d.stdout))
        server.drop(schema)
for name, v in out.items():
    print(name, f"{statistics.median(v):.3f} ms", [round(x, 3) for x in v])
