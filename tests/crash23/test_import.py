"""kill -9 in the middle of an import (format 3, with history), on SQLite and PostgreSQL:
while it embeds (before its transaction), inside its one transaction (first and second
page), at its commit and after it. The store is left without the import or with all of
it — never a record without its past versions, its vector or its lexical postings — and no
temporary file is left behind; a second import adds what is missing and nothing twice."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.filters import Filters

from .child import SCRIPT, VICTIM
from .kill import run

N, EDITED = 1500, 300  # records; of them, records with two past versions each


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A format-3 export of N turns, EDITED of them updated twice (without vectors: the
    import embeds them, a step the kill can land in)."""
    base = tmp_path_factory.mktemp("export")
    with Memory(f"sqlite:///{base / 'src.db'}", embedder="hashing", background=False) as mem:
        turns = [{"role": "user", "content": f"turn {i} about quokka{i:04d}y"} for i in range(N)]
        recs = mem.add_messages(VICTIM, turns)
        for r in recs[:EDITED]:
            once = mem.update(VICTIM, r.id, expected_version=r.version, content=r.text + " (1)")
            mem.update(VICTIM, r.id, expected_version=once.version, content=r.text + " (2)")
        path = base / "export.jsonl"
        with path.open("w", encoding="utf-8") as fp:
            assert mem.export_records(VICTIM.user_scope, fp) == N
    end = json.loads(path.read_text().splitlines()[-1])
    assert end == {"end": "complete", "count": N, "past_versions": 2 * EDITED}
    return path


def _ids(export: Path) -> list[str]:
    out = []
    for line in export.read_text().splitlines():
        item = json.loads(line)
        if "record" in item:
            out.append(item["record"]["id"])
    return out


def _state(url: str, ids: list[str]) -> int:
    """How many of the file's records the store holds: 0 or all, each whole."""
    with Memory(url, embedder="hashing", background=False) as mem:
        held = mem.list(VICTIM.user_scope, filters=Filters(include_deleted=True), limit=10_000)
        if not held:
            return 0
        assert sorted(r.id for r in held) == sorted(ids)  # every record once, none half
        store = mem.store
        histories = store.histories(VICTIM.user_scope, ids)
        versions = sorted(len(h) for h in histories.values())
        assert versions == [1] * (N - EDITED) + [3] * EDITED  # each with its past versions
        assert len(store.stored_vectors(VICTIM.user_scope, ids)) == N  # each with its vector
        for i in random.Random(7).sample(range(N), 5):  # and its lexical postings
            hits = mem.search(VICTIM.user_scope, f"quokka{i:04d}y", mode="lexical", top_k=3)
            assert [h.record.text.split(" about ")[0] for h in hits] == [f"turn {i}"]
            assert len(mem.search(VICTIM.user_scope, f"quokka{i:04d}y", mode="dense")) > 0
    return N


def _import_again(url: str, export: Path, present: int) -> None:
    with Memory(url, embedder="hashing", background=False) as mem:
        with export.open(encoding="utf-8") as fp:
            report = mem.import_records(fp)
        assert (report.imported, report.skipped) == (N - present, present)
        assert report.versions == (2 * EDITED if not present else 0)
    assert _state(url, _ids(export)) == N


GATES = {
    "sqlite": [
        "embed@1",
        "insert into records@1",
        "insert into record_history@300",
        "insert into records@1200",
        "commit@1",
    ],
    "postgresql": [
        "embed@1",
        "insert into record_history@1",
        "insert into lex_df@3",
        "vacuum (analyze@1",
    ],
}


@pytest.mark.parametrize(("backend", "gate"), [(b, g) for b, gates in GATES.items() for g in gates])
def test_an_import_killed_is_all_or_nothing_and_completes_again(
    request: pytest.FixtureRequest, export: Path, tmp_path: Path, backend: str, gate: str
) -> None:
    url = (
        f"sqlite:///{tmp_path / 'm.db'}"
        if backend == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    assert run(url, gate, "import", str(export), tmp=tmp) == -signal.SIGKILL
    assert list(tmp.iterdir()) == []  # the spooled pages were never files by a name
    present = _state(url, _ids(export))
    if gate.startswith("vacuum"):
        assert present == N  # killed after its commit: all of it
    _import_again(url, export, present)


def test_an_import_killed_at_random_moments(url: str, export: Path) -> None:
    """Kills at random offsets (several seeds) between start and end of the import."""
    rng = random.Random(2311)
    for _ in range(3):
        proc = subprocess.Popen(
            [sys.executable, str(SCRIPT), url, "-", "import", str(export)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "go"
        time.sleep(rng.uniform(0.0, 2.0))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        present = _state(url, _ids(export))
        if present:  # the import ended before the kill; the next round starts empty again
            with Memory(url, embedder="hashing", background=False) as mem:
                mem.purge(VICTIM.user_scope)
    _import_again(url, export, _state(url, _ids(export)))
