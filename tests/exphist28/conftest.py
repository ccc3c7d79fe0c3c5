"""Exports of one record with a long history: the files and fresh memories of imphist27
(``fresh``: SQLite, memory://, PostgreSQL and PostgreSQL with the Redis buffer), and a
history whose earlier half was private before the record was shared."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

from imphist27.conftest import (  # noqa: F401 - fixtures
    T0,
    USER,
    Fresh,
    base_record,
    fresh,
    version_of,
    write_long_history,
)
from memstrata import Memory
from memstrata.codec import record_to_dict
from memstrata.portability import end_line, header_line
from memstrata.records import AccessControl, MemoryRecord, Visibility
from memstrata.text import content_hash

PART = 50  # HISTORY_PAGE in these tests: several parts, and quick
SECRET = "zanzibarsecret"

__all__ = [
    "PART",
    "SECRET",
    "USER",
    "Fresh",
    "export_text",
    "fresh",
    "lines",
    "write_long_history",
    "write_shared_late",
]


def export_text(mem: Memory, scope: object = USER) -> str:
    buf = io.StringIO()
    mem.export_records(scope, buf)  # type: ignore[arg-type]
    return buf.getvalue()


def lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


def _shared(rec: MemoryRecord, v: int, private_until: int) -> MemoryRecord:
    """Version ``v``: private, naming the secret, up to ``private_until``; shared with
    carol and dave after (a caller is shown neither the secret nor the other reader)."""
    out = version_of(rec, v)
    if v > private_until:
        return replace(out, access=AccessControl(Visibility.SHARED, ("carol", "dave")))
    text = f"{out.text} {SECRET}"
    return replace(out, content=replace(out.content, raw=text), content_hash=content_hash(text))


def write_shared_late(path: Path, rec: MemoryRecord, versions: int, private_until: int) -> Path:
    """An export of ``rec`` with ``versions`` earlier versions, the first ``private_until``
    of them private (and naming :data:`SECRET`), the others and the record shared with
    carol and dave."""
    with path.open("w", encoding="utf-8") as fp:
        fp.write(header_line(model_id="hashing-256", dims=256, exported_at=T0))
        now = _shared(rec, versions + 1, private_until)
        fp.write(json.dumps({"record": record_to_dict(now), "embedding": None}) + "\n")
        for v in range(1, versions + 1):
            past = _shared(rec, v, private_until)
            fp.write(json.dumps({"past_version": record_to_dict(past)}) + "\n")
        fp.write(end_line(1, versions))
    return path


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> MemoryRecord:
    return base_record(tmp_path_factory.mktemp("base"))
