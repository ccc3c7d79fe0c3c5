"""``copy_store`` between backends: everything copied, verified, refused when it must be."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from memstrata import FixedClock, Memory
from memstrata.errors import EmbeddingMismatchError, StoreError, ValidationError
from memstrata.filters import Filters
from memstrata.jobs import JobStatus
from memstrata.store import open_store
from memstrata.store.migrate import copy_store, verify_stores
from memstrata.store.sqlite.history import decode_delta, encode_delta
from servers import PgServer

from .conftest import ALICE, BOB, CAROL, GONE, NOW, ZHANG, populate


@pytest.fixture(scope="module")
def source_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One populated SQLite store (read-only for the tests that share it)."""
    path = tmp_path_factory.mktemp("src") / "src.db"
    populate(f"sqlite:///{path}")
    return path


def _src(source_file: Path, tmp_path: Path) -> str:
    """A private copy of the shared source (migrating may upgrade or flush a file)."""
    copy = tmp_path / "source.db"
    copy.write_bytes(source_file.read_bytes())
    return f"sqlite:///{copy}"


def _schema(url: str) -> str:
    return url.rsplit("schema=", 1)[1].split("&")[0]


@pytest.mark.parametrize("kind", ["postgresql", "sqlite", "memory"])
def test_round_trip_copies_everything_and_verifies(
    source_file: Path, tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    src = _src(source_file, tmp_path)
    dst = {"sqlite": f"sqlite:///{tmp_path / 'dst.db'}", "memory": "memory://", "postgresql": ""}[
        kind
    ] or request.getfixturevalue("pg_url")
    target = open_store(dst)  # kept open: a memory:// target lives as long as this object
    try:
        report = copy_store(src, target)
        assert report.ok, report.mismatches
        counts = report.counts
        for kind_name, c in counts.items():
            assert c.source == c.target == c.copied, kind_name
        assert counts["records"].source > 40 and counts["versions"].source >= 6
        assert counts["cache"].source > 0 and counts["jobs"].source > 0
        assert counts["audit"].source > 0 and counts["counters"].source == 2
        _same_through_the_api(src, target)
    finally:
        target.close()


def _same_through_the_api(src_url: str, target: object) -> None:
    """What a user of either store sees is the same: records, histories, searches, jobs."""
    src = open_store(src_url)
    try:
        for scope in (ALICE.user_scope, BOB.user_scope, CAROL.user_scope, ZHANG.user_scope):
            every = Filters(include_deleted=True, include_superseded=True)
            want = src.list(scope, every, limit=1000)
            got = target.list(scope, every, limit=1000)  # type: ignore[attr-defined]
            assert [r.id for r in got] == [r.id for r in want]
            assert got == want
            for r in want:
                assert target.history(scope, r.id) == src.history(scope, r.id)  # type: ignore[attr-defined]
            assert (
                target.list_jobs(scope.tenant, scope.user)  # type: ignore[attr-defined]
                == [_cleared(j) for j in src.list_jobs(scope.tenant, scope.user)]
            )
        assert target.list(GONE.user_scope, Filters(include_deleted=True)) == []  # type: ignore[attr-defined]
        zh = src.list(ZHANG.user_scope, Filters(types=["fact"]))[0]
        assert "腰果" in zh.text and len(src.history(ZHANG.user_scope, zh.id)) == 2
        years = {r.observed_at.year for r in src.list(ALICE.user_scope, Filters(), limit=100)}
        assert {1, 9999} <= years
    finally:
        src.close()


def _cleared(job: object) -> object:
    from memstrata.store.migrate.digest import copied_job

    return copied_job(job)  # type: ignore[arg-type]


def test_the_target_answers_searches_and_contexts_like_the_source(
    source_file: Path, tmp_path: Path, pg_url: str
) -> None:
    src = _src(source_file, tmp_path)
    assert copy_store(src, pg_url).ok
    clock = FixedClock(NOW)
    a = Memory(src, embedder="hashing", clock=clock, background=False)
    b = Memory(pg_url, embedder="hashing", clock=clock, background=False)
    try:
        for scope, query in (
            (ALICE.user_scope, "peanuts allergy"),
            (ZHANG.user_scope, "花生"),
            (BOB.user_scope, "message number 7"),
        ):
            for mode in ("lexical", "dense", "hybrid"):
                want = [h.record.id for h in a.search(scope, query, mode=mode)]
                assert [h.record.id for h in b.search(scope, query, mode=mode)] == want
        assert b.build_context(ALICE, "peanuts").text == a.build_context(ALICE, "peanuts").text
    finally:
        a.close()
        b.close()


def test_running_jobs_arrive_pending_with_their_attempts(source_file: Path, tmp_path: Path) -> None:
    src = _src(source_file, tmp_path)
    dst = f"sqlite:///{tmp_path / 'dst.db'}"
    assert copy_store(src, dst).ok
    before, after = open_store(src), open_store(dst)
    try:
        running = before.list_jobs("acme", "alice", status="running")
        assert len(running) == 1 and running[0].attempts == 1
        copied = {j.id: j for j in after.list_jobs("acme", "alice")}[running[0].id]
        assert copied.status is JobStatus.PENDING and copied.attempts == 1
        assert copied.lease_token is None and copied.lease_until is None
        failed = after.list_jobs("globex", "carol", status="failed")
        assert [j.last_error for j in failed] == ["boom: gave up"]
    finally:
        before.close()
        after.close()


def test_the_target_refuses_another_embedder_as_the_source_does(
    source_file: Path, tmp_path: Path, pg_url: str
) -> None:
    src = _src(source_file, tmp_path)
    assert copy_store(src, pg_url).ok
    for url in (src, pg_url):
        with pytest.raises(EmbeddingMismatchError, match="hashing"):
            Memory(url, embedder="hashing:64", background=False)


def test_a_corrupted_target_row_is_named(
    source_file: Path, tmp_path: Path, pg_url: str, pg_server: PgServer
) -> None:
    src = _src(source_file, tmp_path)
    assert copy_store(src, pg_url).ok
    store = open_store(src)
    fact = store.list(ALICE.user_scope, Filters(types=["fact"]))[0]
    note = store.list(BOB.user_scope, Filters(), limit=1)[0]
    zh = store.list(ZHANG.user_scope, Filters(types=["fact"]))[0]
    store.close()
    schema = _schema(pg_url)
    with psycopg.connect(pg_server.admin_url, autocommit=True) as conn:
        conn.execute(
            f'UPDATE "{schema}".records SET raw = %s WHERE id = %s',
            ("Alice likes peanuts", fact.id),
        )
        # history is reverse deltas: version 1 of zh's fact gets another text
        seq, blob = conn.execute(
            f'SELECT h.seq, h.delta FROM "{schema}".record_history h JOIN "{schema}".records r '
            "ON r.seq = h.seq WHERE r.id = %s AND h.version = 1",
            (zh.id,),
        ).fetchone()
        delta = decode_delta(blob)
        delta["raw"] = ["=", "张伟什么都吃"]
        conn.execute(
            f'UPDATE "{schema}".record_history SET delta = %s WHERE seq = %s AND version = 1',
            (encode_delta(delta), seq),
        )
        conn.execute(
            f'UPDATE "{schema}".vectors SET embedding = embedding + embedding WHERE seq = '
            f'(SELECT seq FROM "{schema}".records WHERE id = %s)',
            (note.id,),
        )
        conn.execute(f'DELETE FROM "{schema}".jobs WHERE id = %s', ("doomed",))
    report = verify_stores(src, pg_url)
    assert not report.ok
    found = {(m.kind, m.item): m.what for m in report.mismatches}
    # history is reverse deltas from the current row: an older version that had the same
    # text shows the damage too
    assert found[("records", f"acme/alice/{fact.id}")] == (
        "current version, history differ (fields: content)"
    )
    assert found[("records", f"示例公司/张伟/{zh.id}")] == "history differ"
    assert found[("records", f"acme/bob/{note.id}")] == "vector differ"
    assert found[("jobs", "doomed")] == "missing in the target"
    assert report.mismatch_total == 4


def test_a_rerun_copies_nothing_twice(source_file: Path, tmp_path: Path, pg_url: str) -> None:
    src = _src(source_file, tmp_path)
    first = copy_store(src, pg_url)
    assert first.ok
    again = copy_store(src, pg_url, resume=True)
    assert again.ok
    assert {k: c.copied for k, c in again.counts.items()} == dict.fromkeys(again.counts, 0)
    assert {k: c.target for k, c in again.counts.items()} == {
        k: c.target for k, c in first.counts.items()
    }


def test_an_occupied_target_is_refused_untouched(
    source_file: Path, tmp_path: Path, pg_url: str
) -> None:
    src = _src(source_file, tmp_path)
    other = Memory(pg_url, embedder="hashing", background=False)
    other.add(ALICE, "already here")
    other.close()
    before = verify_stores(pg_url, "memory://").counts
    with pytest.raises(StoreError, match="already holds records.*--resume"):
        copy_store(src, pg_url)
    after = verify_stores(pg_url, "memory://").counts
    assert {k: c.source for k, c in after.items()} == {k: c.source for k, c in before.items()}
    # With --resume the copy goes in, and verification names what only the target has: the
    # record and its embedding-cache entry.
    report = copy_store(src, pg_url, resume=True)
    assert not report.ok and report.mismatch_total == 2
    found = {m.kind: m.what for m in report.mismatches}
    assert found["records"] == "in the target only (not in the source)"
    assert found["cache"].endswith("in the target")


def test_a_target_of_another_embedder_is_refused(source_file: Path, tmp_path: Path) -> None:
    src = _src(source_file, tmp_path)
    dst = f"sqlite:///{tmp_path / 'other.db'}"
    Memory(dst, embedder="hashing:64", background=False).close()
    with pytest.raises(EmbeddingMismatchError, match="embedding_model|embedding_dims"):
        copy_store(src, dst, resume=True)


def test_a_dry_run_writes_nothing(source_file: Path, tmp_path: Path, pg_url: str) -> None:
    src = _src(source_file, tmp_path)
    report = copy_store(src, pg_url, dry_run=True)
    assert report.ok and report.counts["records"].source > 40
    assert all(c.copied == 0 for c in report.counts.values())
    assert all(c.source == 0 for c in verify_stores(pg_url, "memory://").counts.values())


def test_postgres_to_sqlite_and_back(source_file: Path, tmp_path: Path, pg_url: str) -> None:
    src = _src(source_file, tmp_path)
    assert copy_store(src, pg_url).ok
    back = f"sqlite:///{tmp_path / 'back.db'}"
    assert copy_store(pg_url, back).ok
    report = verify_stores(src, back)
    assert report.ok, report.mismatches


@pytest.mark.parametrize("pair", [("same", "same"), ("batch", 0)])
def test_bad_arguments_are_refused(tmp_path: Path, pair: tuple[str, object]) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    if pair[0] == "same":
        with pytest.raises(ValidationError, match="same store"):
            copy_store(url, f"sqlite:///{tmp_path}/./a.db")
    else:
        with pytest.raises(ValidationError, match="batch_size"):
            copy_store(url, "memory://", batch_size=0)
