"""Exports of one record with a long history, made line by line (an update a version
would take minutes for 20,000 versions), and hist22's fresh memory on each store."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from hist22.conftest import ALICE, T0, USER, Fresh, fresh  # noqa: F401 - fixture
from memstrata import Memory, Scope
from memstrata.codec import record_to_dict
from memstrata.portability import end_line, header_line
from memstrata.records import MemoryRecord
from memstrata.text import content_hash

CAROL = Scope("acme", "carol")


def base_record(tmp_path: Path) -> MemoryRecord:
    """A record as ``add`` makes it (so the fields are what a store holds)."""
    with Memory(f"sqlite:///{tmp_path / 'base.db'}", embedder="hashing") as mem:
        rec = mem.add(ALICE, "Alice keeps bees by the river, version 0 of a long story")
    return rec


def version_of(rec: MemoryRecord, v: int) -> MemoryRecord:
    """Version ``v`` of ``rec``: its text and tags change with the number."""
    text = f"Alice keeps {v} hives by the river; note number {v} of a long story"
    return replace(
        rec,
        version=v,
        content=replace(rec.content, raw=text),
        content_hash=content_hash(text),
        tags=("bees", f"v{v % 7}"),
        updated_at=T0 + timedelta(seconds=v),
    )


def write_long_history(
    path: Path, rec: MemoryRecord, versions: int, *, tail: str | None = None, others: int = 0
) -> Path:
    """An export (version 3) of ``rec`` at version ``versions + 1`` with ``versions`` past
    versions, then ``others`` records of one version each; ``tail`` replaces the end line
    (a mangled line, say)."""
    with path.open("w", encoding="utf-8") as fp:
        fp.write(header_line(model_id="hashing-256", dims=256, exported_at=T0))
        now = version_of(rec, versions + 1)
        fp.write(json.dumps({"record": record_to_dict(now), "embedding": None}) + "\n")
        for v in range(1, versions + 1):
            fp.write(json.dumps({"past_version": record_to_dict(version_of(rec, v))}) + "\n")
        for i in range(others):
            text = f"another note, number {i}"
            other = replace(
                rec,
                id=f"other{i:06d}",
                content=replace(rec.content, raw=text),
                content_hash=content_hash(text),
            )
            fp.write(json.dumps({"record": record_to_dict(other), "embedding": None}) + "\n")
        fp.write(end_line(1 + others, versions) if tail is None else tail)
    return path
