"""Old records whose text holds a NUL character (stored before every store refused one).

PostgreSQL text cannot hold NUL, and an update keeps the old version in the history, so
before ``replace_nul`` such a store could not be migrated to PostgreSQL at all, and the
dry run said nothing about it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memstrata.memory
import memstrata.writes
from memstrata import Memory, Scope
from memstrata.cli.app import app
from memstrata.errors import ValidationError
from memstrata.store import open_store
from memstrata.store.migrate import copy_store, verify_stores
from memstrata.text import validate_content

ALICE = Scope("acme", "alice", session="s1")


@pytest.fixture
def old_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A SQLite store written under the old rule: stored text could hold a NUL."""

    def old_rule(content: object, **kw: object) -> str:
        return validate_content(content, **{**kw, "stored": False})  # type: ignore[arg-type]

    url = f"sqlite:///{tmp_path / 'old.db'}"
    with monkeypatch.context() as m:
        m.setattr(memstrata.writes, "validate_content", old_rule)
        m.setattr(memstrata.memory, "validate_content", old_rule)
        mem = Memory(url, embedder="hashing", background=False)
        mem.add(ALICE, "clean note about tea")
        mem.add_message(ALICE, "user", "hello \x00 world, I like green tea")
        r = mem.add(ALICE, "note with a NUL\x00 inside", type="fact")
        mem.update(ALICE, r.id, content="two\x00 NULs\x00 now", expected_version=r.version)
        mem.add(ALICE, "another clean note")
        mem.close()
    yield url


def _texts(url: str) -> list[str]:
    store = open_store(url)
    try:
        return [
            t
            for batch in store.dump_records(100)  # type: ignore[attr-defined]
            for d in batch
            for v in d.versions
            for t in (v.content.raw, v.content.summary or "")
        ]
    finally:
        store.close()


def test_a_dry_run_counts_the_texts_postgresql_cannot_hold(old_store: str, pg_url: str) -> None:
    report = copy_store(old_store, pg_url, dry_run=True)
    assert report.nul_texts == 3  # the message, and the fact's two versions
    assert not report.target_stores_nul
    assert report.as_dict()["nul_texts"] == 3
    assert _texts(pg_url) == []


def test_the_copy_stops_before_the_batch_and_names_the_record_and_the_remedy(
    old_store: str, pg_url: str
) -> None:
    with pytest.raises(ValidationError) as err:
        copy_store(old_store, pg_url, batch_size=1)
    text = str(err.value)
    assert "acme/alice/" in text and "--replace-nul" in text and "--resume" in text
    assert "\x00" not in "".join(_texts(pg_url))  # the refused batch left nothing
    report = copy_store(old_store, pg_url, resume=True, replace_nul=True)
    assert report.ok, report.mismatches
    assert report.nul_texts == 3 and report.as_dict()["nul_replaced"] == 3


def test_replace_nul_copies_every_version_and_verifies(old_store: str, pg_url: str) -> None:
    report = copy_store(old_store, pg_url, replace_nul=True)
    assert report.ok, report.mismatches
    texts = _texts(pg_url)
    assert "note with a NUL\ufffd inside" in texts  # the earlier version too
    assert "two\ufffd NULs\ufffd now" in texts
    assert "hello \ufffd world, I like green tea" in texts
    assert all("\x00" not in t for t in texts)
    # the source is unchanged; comparing without the replacement names the changed records
    assert sum("\x00" in t for t in _texts(old_store)) == 3
    plain = verify_stores(old_store, pg_url)
    assert plain.mismatch_total == 2 and not plain.ok
    assert verify_stores(old_store, pg_url, replace_nul=True).ok
    mem = Memory(pg_url, embedder="hashing", background=False)
    try:
        hits = mem.search(ALICE.user_scope, "green tea", top_k=3)
        assert any("\ufffd" in h.text for h in hits)
    finally:
        mem.close()


def test_a_target_that_holds_nul_gets_the_text_as_it_was(old_store: str, tmp_path: Path) -> None:
    target = f"sqlite:///{tmp_path / 'copy.db'}"
    report = copy_store(old_store, target)
    assert report.ok and report.nul_texts == 3 and report.as_dict()["nul_replaced"] == 0
    assert sorted(_texts(target)) == sorted(_texts(old_store))


def test_the_cli_says_what_to_do(old_store: str, pg_url: str) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["--db", old_store, "migrate", "--to", pg_url, "--dry-run"])
    assert res.exit_code == 0
    assert "3 texts of old records hold a NUL character" in " ".join(res.stdout.split())
    assert "--replace-nul" in res.stdout
    res = runner.invoke(app, ["--db", old_store, "migrate", "--to", pg_url])
    assert res.exit_code == 2 and "--replace-nul" in res.stderr
    res = runner.invoke(
        app, ["--db", old_store, "migrate", "--to", pg_url, "--resume", "--replace-nul", "--json"]
    )
    assert res.exit_code == 0, res.stdout
    report = json.loads(res.stdout)
    assert report["ok"] and report["nul_replaced"] == 3
