"""Issue 7 item 5: concurrent ``add()`` of the same texts makes one record per text.

8 writers (threads sharing a ``Memory``, threads with a ``Memory`` each, and processes on
one SQLite file) add the same 30 texts in different orders; afterwards there are exactly
30 records, each mentioned 8 times, and no ``add()`` raised (before: 54-102 records and
``ConflictError``s).
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from memstrata import Memory, Scope

WRITERS = 8
SUBJECTS = [
    "the boiler",
    "my passport",
    "the rent",
    "Kemi's birthday",
    "the dentist",
    "the car insurance",
    "our Lisbon flight",
    "the library books",
    "the gym plan",
    "the tax return",
]
ACTIONS = ["is due on the {n}th", "needs a call before {n} pm", "costs {n}0 euros"]
TEXTS = [
    f"Reminder {i}: {s} {a.format(n=i + 2)}"
    for i, (s, a) in enumerate((s, a) for a in ACTIONS for s in SUBJECTS)
]
SCOPE = Scope("acme", "alice")


def _check(mem: Memory) -> None:
    records = mem.list(SCOPE, limit=1000)
    by_text: dict[str, list[int]] = {}
    for r in records:
        by_text.setdefault(r.text, []).append(int(r.metadata.get("mentions", 1)))
    assert sorted(by_text) == sorted(TEXTS)
    assert all(len(v) == 1 for v in by_text.values()), {
        t: v for t, v in by_text.items() if len(v) > 1
    }
    assert all(v == [WRITERS] for v in by_text.values()), by_text  # every mention kept


def _writer(
    mem: Memory, seed: int, errors: list[BaseException], barrier: threading.Barrier
) -> None:
    texts = list(TEXTS)
    random.Random(seed).shuffle(texts)
    barrier.wait()
    for text in texts:
        try:
            mem.add(SCOPE, text, importance=0.5)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted empty
            errors.append(exc)


@pytest.mark.parametrize("url", ["sqlite", "memory"])
def test_threads_sharing_one_memory(tmp_path: Path, url: str) -> None:
    mem = Memory(
        f"sqlite:///{tmp_path / 'm.db'}" if url == "sqlite" else "memory://",
        embedder="hashing",
        background=False,
    )
    errors: list[BaseException] = []
    barrier = threading.Barrier(WRITERS)
    threads = [
        threading.Thread(target=_writer, args=(mem, i, errors, barrier)) for i in range(WRITERS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    _check(mem)
    mem.close()


def test_threads_with_a_memory_each_on_one_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    Memory(url, embedder="hashing", background=False).close()  # create + migrate once
    mems = [Memory(url, embedder="hashing", background=False) for _ in range(WRITERS)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(WRITERS)
    threads = [
        threading.Thread(target=_writer, args=(m, i, errors, barrier)) for i, m in enumerate(mems)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    _check(mems[0])
    for m in mems:
        m.close()


_CHILD = textwrap.dedent("""
    import random, sys
    from memstrata import Memory, Scope
    from tests.store.test_concurrent_dedup import TEXTS
    url, seed = sys.argv[1], int(sys.argv[2])
    mem = Memory(url, embedder="hashing", background=False)
    texts = list(TEXTS)
    random.Random(seed).shuffle(texts)
    for text in texts:
        mem.add(Scope("acme", "alice"), text, importance=0.5)
    mem.close()
""")


def test_processes_on_one_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    Memory(url, embedder="hashing", background=False).close()
    root = Path(__file__).resolve().parents[2]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, url, str(i)], cwd=root, stderr=subprocess.PIPE, text=True
        )
        for i in range(WRITERS)
    ]
    failures = []
    for p in procs:
        _, err = p.communicate(timeout=300)
        if p.returncode != 0:
            failures.append(err[-2000:])
    assert failures == []
    mem = Memory(url, embedder="hashing", background=False)
    _check(mem)
    mem.close()
