"""A process at its file descriptor limit (``ulimit -n``) that opens SQLite stores, or
searches from many threads (each thread's read connection is a descriptor or three): the
error says the process ran out of descriptors and that a retry may succeed; once some are
closed, the same process opens and searches again.

Before session 30 SQLite's "unable to open database file" was put down to the file:
"SQLite cannot open the file ...: check that it and its folder exist and that this process
may read and write them", ``retryable=False`` (a server answered 500, "retrying will not
help").

Each case runs in a child process with ``RLIMIT_NOFILE`` lowered (never the test's own).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

CHILD = textwrap.dedent(
    """
    import json, os, resource, sys, threading
    from memstrata import Memory, Scope
    from memstrata.errors import MemstrataError, StoreError

    me = Scope("acme", "alice", session="s1")
    folder = sys.argv[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))
    out = {"errors": [], "raw": []}
    mems = []
    try:
        for i in range(100):
            m = Memory(f"sqlite:///{folder}/s{i}.db", embedder="hashing", background=False)
            m.add(me, "a heron by the lake", dedup=False)
            mems.append(m)
    except StoreError as e:
        out["errors"].append([str(e), e.retryable])
    out["opened"] = len(mems)

    def search():
        try:
            mems[0].search(me, "heron")
        except StoreError as e:
            out["errors"].append([str(e), e.retryable])
        except BaseException as e:
            out["raw"].append(repr(e))

    threads = [threading.Thread(target=search) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for m in mems[1:]:
        m.close()
    with Memory(f"sqlite:///{folder}/again.db", embedder="hashing", background=False) as m:
        m.add(me, "a heron once descriptors were back", dedup=False)
        out["again"] = len(m.search(me, "heron"))
    out["first"] = len(mems[0].search(me, "heron"))
    print(json.dumps(out))
    """
)


def test_running_out_of_descriptors_says_so_and_may_be_retried(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["raw"] == [] and 1 <= out["opened"] < 100, out
    assert out["errors"], out  # the opening at the limit, and threads' read connections
    for message, retryable in out["errors"]:
        assert "run out of file descriptors" in message and "ulimit -n" in message, message
        assert retryable is True, message
    assert out["again"] == 1 and out["first"] == 1, out


PG_CHILD = textwrap.dedent(
    """
    import json, resource, sys
    from memstrata import Memory, Scope
    from memstrata.errors import StoreError

    me = Scope("acme", "alice", session="s1")
    url = sys.argv[1]
    with Memory(url, embedder="hashing", background=False) as m:
        m.add(me, "a heron by the lake", dedup=False)
    resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))
    out = {"errors": []}
    mems = []
    try:
        for i in range(100):
            m = Memory(url, embedder="hashing", background=False)
            m.search(me, "heron")
            mems.append(m)
    except StoreError as e:
        out["errors"].append([str(e), e.retryable])
    out["opened"] = len(mems)
    for m in mems[1:]:
        m.close()
    with Memory(url, embedder="hashing", background=False) as m:
        out["again"] = len(m.search(me, "heron"))
    print(json.dumps(out))
    """
)


def test_postgresql_out_of_descriptors_is_a_store_error(pg_url: str) -> None:
    # psycopg's connect makes an epoll selector: EMFILE was a raw OSError
    done = subprocess.run(
        [sys.executable, "-c", PG_CHILD, pg_url], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert 1 <= out["opened"] < 100 and len(out["errors"]) == 1, out
    message, retryable = out["errors"][0]
    assert "run out of file descriptors" in message and "ulimit -n" in message, message
    assert retryable is True
    assert out["again"] == 1, out
