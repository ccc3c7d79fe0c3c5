"""Importing the same export twice at once: the lines another import wrote a moment before
are skipped, as lines already present always were — not a ``ValidationError`` about an id
that "exists already" (before, every import but the first failed whole)."""

from __future__ import annotations

import io
import json
import threading
from typing import Any

import pytest

from memstrata import Memory, Scope
from memstrata.portability import ImportReport


def _export(n: int) -> str:
    src = Memory("memory://", embedder="hashing", background=False)
    scope = Scope("acme", "alice")
    for i in range(n):
        src.add(scope, f"imported memory number {i} about gardens")
    buf = io.StringIO()
    src.export_records(scope, buf)
    src.close()
    return buf.getvalue()


@pytest.mark.parametrize("share", [1.0, 0.5])
def test_lines_written_by_another_import_meanwhile_are_skipped(
    mem: Memory, monkeypatch: pytest.MonkeyPatch, share: float
) -> None:
    data = _export(40)
    head, *lines, _end = data.splitlines(keepends=True)
    taken = int(40 * share)
    other = "".join([head, *lines[:taken], json.dumps({"end": "complete", "count": taken})])
    store = mem.store
    original = store.transaction
    fired = False

    def other_import_first() -> Any:
        nonlocal fired
        if not fired:  # the other import commits (some of) the same lines first
            fired = True
            assert mem.import_records(io.StringIO(other)).imported == taken
        return original()

    monkeypatch.setattr(store, "transaction", other_import_first)
    report = mem.import_records(io.StringIO(data))
    assert report == ImportReport(imported=40 - taken, skipped=taken, reembedded=40)
    assert len(mem.list(Scope("acme", "alice"), limit=1000)) == 40


def test_three_imports_at_once_write_each_line_once(mem: Memory) -> None:
    data = _export(200)
    reports: list[ImportReport] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            reports.append(mem.import_records(io.StringIO(data)))
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sum(r.imported for r in reports) == 200
    assert all(r.imported + r.skipped == 200 for r in reports)
    assert len(mem.list(Scope("acme", "alice"), limit=1000)) == 200
