"""``memstrata migrate``: exit codes, the summary, and what a dry run leaves behind."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memstrata.cli.app import app
from memstrata.store import open_store

from .conftest import populate


def _run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, list(args))
    return res.exit_code, res.stdout, res.stderr


def test_migrate_prints_a_summary_and_exits_0_when_verified(tmp_path: Path) -> None:
    src, dst = tmp_path / "src.db", tmp_path / "dst.db"
    populate(f"sqlite:///{src}")
    code, out, _ = _run("--db", f"sqlite:///{src}", "migrate", "--to", f"sqlite:///{dst}")
    assert code == 0, out
    assert "records" in out and "verified: the target holds exactly" in out
    code, out, _ = _run(
        "--db", f"sqlite:///{src}", "migrate", "--to", f"sqlite:///{dst}", "--verify-only", "--json"
    )
    assert code == 0 and json.loads(out)["ok"] is True


def test_a_dry_run_into_a_new_file_creates_nothing(tmp_path: Path) -> None:
    src, dst = tmp_path / "src.db", tmp_path / "new.db"
    populate(f"sqlite:///{src}")
    code, out, _ = _run(
        "--db", f"sqlite:///{src}", "migrate", "--to", f"sqlite:///{dst}", "--dry-run", "--json"
    )
    assert code == 0
    report = json.loads(out)
    assert report["dry_run"] and report["counts"]["records"]["source"] > 40
    assert report["target"] == f"sqlite:///{dst}"
    assert not dst.exists()


def test_differences_exit_1_and_are_listed(tmp_path: Path) -> None:
    src, dst = tmp_path / "src.db", tmp_path / "dst.db"
    populate(f"sqlite:///{src}")
    assert _run("--db", f"sqlite:///{src}", "migrate", "--to", f"sqlite:///{dst}")[0] == 0
    store = open_store(f"sqlite:///{dst}")
    store.purge_user("acme", "bob")
    store.close()
    code, out, _ = _run(
        "--db", f"sqlite:///{src}", "migrate", "--to", f"sqlite:///{dst}", "--verify-only"
    )
    assert code == 1
    assert "differs: records acme/bob/" in out and "missing in the target" in out


def test_a_missing_source_file_is_refused(tmp_path: Path) -> None:
    code, _, err = _run(
        "--db",
        f"sqlite:///{tmp_path / 'typo.db'}",
        "migrate",
        "--to",
        f"sqlite:///{tmp_path / 'dst.db'}",
    )
    assert code == 2 and "no memstrata store" in err
    assert not (tmp_path / "typo.db").exists() and not (tmp_path / "dst.db").exists()
