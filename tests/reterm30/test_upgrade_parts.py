"""SQLite's schema 20 / PostgreSQL's step 27 read the turns a part at a time
(``reterm.PART``), write only the turns whose stored terms differ, survive a ``kill -9`` in
the middle (the step is one transaction: the next open runs it again, to the same result as
an uninterrupted run), and ``memstrata migrate`` (``copy_store``) of an old store copies
today's terms (it opens the source, which upgrades it)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata import Memory
from memstrata.clock import FixedClock
from memstrata.store.migrate import copy_store
from reterm30.old_stores import VICTIM, differing, index_under, mark_old, stored
from store.reterm_files import lex_tables, pg_lexical, pg_version
from turn_calls import add_in_calls

N = 24
SESSIONS = ["a", None, "b", None, None, "a"] * 4
ASKS = [i % 3 != 2 for i in range(N)]
HOURS = [(7 * i) % 5 for i in range(N)]
CUTS = {3, 7, 8, 13, 19}


def _old_store(url: str) -> tuple[list[str], dict[str, tuple[str, ...]]]:
    """A store whose every turn is indexed under the question of the turn two before it
    (no rule ever did so; many differ from today's), marked as older; the turns' ids and
    the terms stored then."""
    clock = FixedClock(datetime(2026, 1, 1, 12, 0, tzinfo=UTC))
    mem = Memory(url, embedder="hashing", clock=clock, background=False)
    try:
        times = [datetime(2025, 6, 1, h, tzinfo=UTC) for h in HOURS]
        ids = add_in_calls(mem, clock, ASKS, SESSIONS, times, CUTS)
        texts = {rid: mem.store.get(VICTIM, rid).text for rid in ids}
        index_under(mem, {rid: texts[ids[i - 2]] if i >= 2 else None for i, rid in enumerate(ids)})
        assert len(differing(mem, ids)) > N // 3
        old = stored(mem)
    finally:
        mem.close()
    mark_old(url)
    return ids, old


def _current_store(url: str) -> list[str]:
    """A store written by today's code, marked as older."""
    clock = FixedClock(datetime(2026, 1, 1, 12, 0, tzinfo=UTC))
    mem = Memory(url, embedder="hashing", clock=clock, background=False)
    try:
        times = [datetime(2025, 6, 1, h, tzinfo=UTC) for h in HOURS]
        ids = add_in_calls(mem, clock, ASKS, SESSIONS, times, CUTS)
        assert differing(mem, ids) == {}
    finally:
        mem.close()
    mark_old(url)
    return ids


def _lexical(url: str) -> list[object]:
    if url.startswith("sqlite:///"):
        return lex_tables(Path(url[len("sqlite:///") :]))[1:]
    return pg_lexical(url)


def _version(url: str) -> int:
    if url.startswith("sqlite:///"):
        return int(str(lex_tables(Path(url[len("sqlite:///") :]))[0]))
    return int(str(pg_version(url)))


def _latest(url: str) -> int:
    from memstrata.store.postgres.schema import SCHEMA_VERSION as PG_LATEST
    from memstrata.store.sqlite.migrations import SCHEMA_VERSION as SQLITE_LATEST

    return SQLITE_LATEST if url.startswith("sqlite:///") else PG_LATEST


def _lexical_module(url: str) -> Any:
    if url.startswith("sqlite:///"):
        from memstrata.store.sqlite import lexical
    else:
        from memstrata.store.postgres import lexical  # type: ignore[no-redef]
    return lexical


def test_a_current_store_is_read_not_written(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _current_store(url)
    want, version = _lexical(url), _version(url)
    lexical = _lexical_module(url)
    calls: list[object] = []
    index = lexical.index

    def counted(*a: Any, **k: Any) -> Any:
        calls.append(a)
        return index(*a, **k)

    monkeypatch.setattr(lexical, "index", counted)
    monkeypatch.setattr("memstrata.search.reterm.PART", 5)  # several parts
    Memory(url, embedder="hashing", background=False).close()
    assert calls == []
    assert _lexical(url) == want
    # the re-term's step and every later one (purge31's schema 21 / step 28) ran
    assert version + 1 <= _version(url) == _latest(url)


def test_only_the_turns_that_differ_are_written(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ids, old = _old_store(url)
    lexical = _lexical_module(url)
    written: list[int] = []
    index = lexical.index

    def counted(conn: Any, docs: Any, *a: Any, **k: Any) -> Any:
        written.extend(int(d[0]) for d in docs if int(d[0]) > 0)  # not public docs
        return index(conn, docs, *a, **k)

    monkeypatch.setattr(lexical, "index", counted)
    monkeypatch.setattr("memstrata.search.reterm.PART", 5)
    mem = Memory(url, embedder="hashing", background=False)
    try:
        after = stored(mem)
        assert differing(mem, ids) == {}
    finally:
        mem.close()
    changed = [rid for rid in ids if after[rid] != old[rid]]
    assert changed
    assert len(written) == len(set(written)) == len(changed)


_KILLED = """
import sys, time
import memstrata.search.reterm as rt
rt.PART = 4
if sys.argv[1].startswith("sqlite"):
    from memstrata.store.sqlite import lexical
else:
    from memstrata.store.postgres import lexical
index = lexical.index
def stop(*a, **k):
    index(*a, **k)
    print("mid", flush=True)
    time.sleep(600)
lexical.index = stop
from memstrata.store import open_store
open_store(sys.argv[1])
"""


def _kill_mid_migration(url: str) -> None:
    """Open ``url`` in another process and ``kill -9`` it once the re-term wrote its first
    part."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED, url], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "mid"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_kill_mid_migration_then_an_open_gives_the_uninterrupted_result(
    url: str, tmp_path: Path
) -> None:
    ids, _ = _old_store(url)
    want = _lexical(url)
    copy = None
    if url.startswith("sqlite:///"):  # the same file, upgraded without a kill
        path = Path(url[len("sqlite:///") :])
        copy = tmp_path / "copy.db"
        for suffix in ("", "-wal", "-shm"):
            if Path(f"{path}{suffix}").exists():
                shutil.copy(f"{path}{suffix}", f"{copy}{suffix}")
    _kill_mid_migration(url)
    assert _lexical(url) == want  # the step's transaction left nothing of itself
    mem = Memory(url, embedder="hashing", background=False)
    try:
        assert differing(mem, ids) == {}
    finally:
        mem.close()
    if copy is not None:
        Memory(f"sqlite:///{copy}", embedder="hashing", background=False).close()
        assert lex_tables(copy) == lex_tables(Path(url[len("sqlite:///") :]))


def test_memstrata_migrate_of_an_old_store_copies_todays_terms(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    source = f"sqlite:///{tmp_path / 'old.db'}"
    ids, _ = _old_store(source)
    for target in (f"sqlite:///{tmp_path / 'new.db'}", request.getfixturevalue("pg_url")):
        report = copy_store(source, target)
        assert report.ok
        mem = Memory(target, embedder="hashing", background=False)
        try:
            assert differing(mem, ids) == {}
        finally:
            mem.close()
