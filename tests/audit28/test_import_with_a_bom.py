"""An export saved again by an editor that writes a UTF-8 byte-order mark (Windows Notepad,
PowerShell's ``Out-File``) is refused with "line 1 is not a memstrata export header; export
with `memstrata export` first": nothing is written, but the advice is wrong (the file is an
export) and the mark is not named (session 28's audit).

Fixed by the lead after exphist28 (``portability.py``'s header check skips a leading
U+FEFF, as ``utf-8-sig`` does); over HTTP and from the CLI too."""

from __future__ import annotations

import codecs
import io
import json
from pathlib import Path

from typer.testing import CliRunner

from memstrata import ImportFormatError, Memory, Scope
from memstrata.cli.app import app


def test_an_export_with_a_bom_imports_or_names_the_bom() -> None:
    with Memory("memory://", embedder="hashing", background=False) as src:
        src.add(Scope("t", "u"), "a note")
        out = io.StringIO()
        src.export_records(Scope("t", "u"), out)
    with Memory("memory://", embedder="hashing", background=False) as dst:
        try:
            report = dst.import_records(io.StringIO("\ufeff" + out.getvalue()))
        except ImportFormatError as exc:
            assert "byte-order mark" in str(exc) or "BOM" in str(exc), str(exc)
        else:
            assert report.imported == 1


def test_the_cli_imports_an_export_saved_with_a_bom(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'bom.db'}"
    base = ["--db", db, "--tenant", "acme", "--user", "alice", "--embedder", "hashing"]
    with Memory("memory://", embedder="hashing", background=False) as src:
        src.add(Scope("acme", "alice"), "a note saved again by Notepad")
        out = io.StringIO()
        src.export_records(Scope("acme", "alice"), out)
    path = tmp_path / "bom.jsonl"
    path.write_bytes(codecs.BOM_UTF8 + out.getvalue().encode("utf-8"))
    res = CliRunner().invoke(app, [*base, "import", str(path)])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, [*base, "stats", "--json"])
    assert json.loads(res.stdout)["records"] == 1
