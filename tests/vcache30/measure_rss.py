"""RSS of a `memstrata serve` process that searched 30 users x 2,000 records (hashing
embedder, 384 dimensions), with the default vector cache bound and with
`--vector-cache-rows 10000` (vcache30, docs/measurements.md).

    PYTHONPATH=src python tests/vcache30/measure_rss.py [users] [per_user]
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx2  # noqa: E402

from memstrata import Memory, Message, Scope  # noqa: E402
from memstrata.records import Role  # noqa: E402
from memstrata.server.keys import open_key_store  # noqa: E402
from serving import free_port, launch  # noqa: E402

WORDS = [f"w{i}" for i in range(3000)]


def seed(db: str, users: int, per_user: int) -> None:
    rng = random.Random(30)
    mem = Memory(db, embedder="hashing:384", background=False)
    try:
        for u in range(users):
            scope = Scope("acme", f"u{u}", session="s")
            for start in range(0, per_user, 500):
                turns = [
                    Message(Role.USER, " ".join(rng.sample(WORDS, 12)))
                    for _ in range(min(500, per_user - start))
                ]
                mem.add_messages(scope, turns)
    finally:
        mem.close()


def rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of the process, KiB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def serve_and_search(db: str, tmp: Path, key: str, users: int, *extra: str) -> None:
    auth = {"Authorization": f"Bearer {key}"}
    port = free_port()
    args = ["--db", db, "--embedder", "hashing:384", "serve", "--port", str(port),
            "--log-level", "warning", "--no-background", "--rate-limit", "0", *extra]  # fmt: skip
    ready = lambda url: httpx2.get(f"{url}/readyz", timeout=5).status_code == 200  # noqa: E731
    with launch(args, tmp, ready, f"http://127.0.0.1:{port}") as s:
        pid = s.proc.pid
        before = rss_kib(pid)
        t0 = time.perf_counter()
        with httpx2.Client(base_url=s.url, headers=auth, timeout=120) as c:
            for _ in range(2):
                for u in range(users):
                    got = c.post(
                        f"/v1/users/u{u}/search",
                        json={"query": "w1 w2 w3 w77", "top_k": 5, "mode": "dense"},
                    )
                    assert got.status_code == 200, got.text
        took = time.perf_counter() - t0
        after = rss_kib(pid)
        label = " ".join(extra) or "default (500,000)"
        print(
            f"{label}: RSS before searches {before[0] / 1024:.0f} MiB, after "
            f"{after[0] / 1024:.0f} MiB (peak {after[1] / 1024:.0f} MiB); "
            f"{2 * users} searches in {took:.1f} s"
        )


def main() -> None:
    users = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    per_user = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        db = f"sqlite:///{tmp / 'rss.db'}"
        t0 = time.perf_counter()
        seed(db, users, per_user)
        print(f"seeded {users} x {per_user} in {time.perf_counter() - t0:.0f} s")
        keys = open_key_store(db)
        try:
            key = keys.create("acme").secret
        finally:
            keys.close()
        for extra in ((), ("--vector-cache-rows", "10000")):
            serve_and_search(db, tmp, key, users, *extra)


if __name__ == "__main__":
    main()
