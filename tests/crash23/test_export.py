"""kill -9 in the middle of ``memstrata export FILE`` (SQLite and PostgreSQL): nothing by
the name asked for until the export is whole — an earlier export there stays as it was —
and what is left is ``FILE.partial``, which has no end line, so an import refuses it and
writes nothing. Running the export again writes the whole file and leaves no
``.partial``. (An export only reads: the store is as it was.)"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.errors import MemstrataError

from .child import VICTIM
from .kill import run

N = 2500  # three pages of 1,000


def _fill(url: str) -> None:
    with Memory(url, embedder="hashing", background=False) as mem:
        turns = [{"role": "user", "content": f"turn {i} about wombat{i:04d}z"} for i in range(N)]
        recs = mem.add_messages(VICTIM, turns)
        for r in recs[:50]:
            mem.update(VICTIM, r.id, expected_version=r.version, content=r.text + " (edited)")


@pytest.mark.parametrize("gate", ["call:record_lines@2", "call:record_lines@3", "call:end_line@1"])
def test_a_killed_export_leaves_nothing_that_looks_complete(
    url: str, tmp_path: Path, gate: str
) -> None:
    _fill(url)
    out = tmp_path / "backup.jsonl"
    out.write_text("an earlier export\n")
    assert run(url, gate, "cli", "export", str(out), "--embeddings") == -signal.SIGKILL
    assert out.read_text() == "an earlier export\n"  # untouched until the new one is whole
    partial = Path(str(out) + ".partial")
    lines = partial.read_text().splitlines()
    assert lines and all('"end"' not in line for line in lines)
    with Memory(url, embedder="hashing", background=False) as mem:
        before = mem.store.stats(VICTIM.user_scope).records
        with partial.open(encoding="utf-8") as fp, pytest.raises(MemstrataError, match="end"):
            mem.import_records(fp, into=Scope("acme", "elsewhere"))
        assert mem.store.stats(VICTIM.user_scope).records == before == N
    assert run(url, "-", "cli", "export", str(out), "--embeddings") == 0
    assert not partial.exists()
    end = json.loads(out.read_text().splitlines()[-1])
    assert end == {"end": "complete", "count": N, "past_versions": 50}
