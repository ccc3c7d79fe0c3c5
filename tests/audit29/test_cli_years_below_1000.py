"""``memstrata list`` / ``search`` showed a record observed in year 1 as "1-01-01 00:01"
and one in year 999 as "999-05-01" (glibc's ``strftime("%Y")`` does not pad), a column
that no longer reads as a date or sorts as one. Session 29's audit: four digits, as the
ISO 8601 the JSON output already gives."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from typer.testing import CliRunner

from memstrata import Memory, Scope
from memstrata.cli.app import app


def test_years_below_1000_have_four_digits(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with Memory(db, embedder="hashing", background=False) as mem:
        mem.add(Scope("t", "u"), "early bees", observed_at=datetime(1, 1, 1, 0, 1, tzinfo=UTC))
        mem.add(Scope("t", "u"), "medieval bees", observed_at=datetime(999, 5, 1, tzinfo=UTC))
    args = ["--db", db, "--tenant", "t", "--user", "u", "--embedder", "hashing"]
    listed = CliRunner().invoke(app, [*args, "list"]).stdout
    assert "0001-01-01 00:01" in listed and "0999-05-01 00:00" in listed, listed
    found = CliRunner().invoke(app, [*args, "search", "bees"]).stdout
    assert "0001-01-01" in found and "0999-05-01" in found, found
