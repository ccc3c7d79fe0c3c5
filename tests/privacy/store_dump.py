"""What a PII test reads back from a store: every version of every record of a user, and
the SQLite file's raw bytes (main file and WAL)."""

from __future__ import annotations

from pathlib import Path

from memstrata import Memory, Scope
from memstrata.records import MemoryRecord


def all_versions(mem: Memory, scope: Scope) -> list[MemoryRecord]:
    flt = {"include_deleted": True, "include_superseded": True}
    out: list[MemoryRecord] = []
    for r in mem.list(scope.user_scope, filters=flt, limit=10_000):
        out.extend(mem.history(scope.user_scope, r.id))
    return out


def file_bytes(path: Path) -> bytes:
    return b"".join(
        Path(f"{path}{s}").read_bytes() for s in ("", "-wal") if Path(f"{path}{s}").exists()
    )
