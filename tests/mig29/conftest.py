"""Stores holding records with long histories, for ``memstrata migrate`` in parts.

``HISTORY_PAGE`` is :data:`exphist28.conftest.PART` (50) in these tests, so that a history
of a few hundred versions is long (read in parts of 50) and quick to write. A source holds
short records (one version, and a few updated twice) before and after two long records,
so that the batched path and the parts' path share batches.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from exphist28.conftest import PART, base  # noqa: F401 - fixtures
from imphist27.conftest import T0, version_of
from memstrata import FixedClock, Memory, Scope
from memstrata.codec import record_to_dict
from memstrata.portability import end_line, header_line
from memstrata.records import MemoryRecord
from memstrata.store.base import Store
from servers import PgServer

__all__ = ["KINDS", "LONG", "PART", "USER", "Side", "fill", "long_file", "sides"]

USER = Scope("acme", "alice")
LONG = 16 * PART + 3  # earlier versions of the first long record: 17 parts
KINDS = ("sqlite", "memory", "postgresql")


class Side:
    """A store of a migration, open in a memory (to fill it and read it back): the
    migration is given its URL (SQLite, PostgreSQL) or, for ``memory://``, that open
    store (a URL would open a new, empty one)."""

    def __init__(self, kind: str, url: str) -> None:
        self.kind = kind
        self.url = url
        self.mem = Memory(url, embedder="hashing", clock=FixedClock(T0), background=False)

    @property
    def target(self) -> str | Store:
        """What ``copy_store`` is given: the URL, or the open ``memory://`` store."""
        return self.mem.store if self.kind == "memory" else self.url

    @property
    def store(self) -> Store:
        return self.mem.store

    def close(self) -> None:
        self.mem.close()


def long_file(path: Path, rec: MemoryRecord, versions: int, rid: str) -> Path:
    """An export (version 3) of ``rec`` as ``rid`` at version ``versions + 1``, with
    ``versions`` earlier versions."""
    rec = replace(rec, id=rid)
    with path.open("w", encoding="utf-8") as fp:
        fp.write(header_line(model_id="hashing-256", dims=256, exported_at=T0))
        now = version_of(rec, versions + 1)
        fp.write(json.dumps({"record": record_to_dict(now), "embedding": None}) + "\n")
        for v in range(1, versions + 1):
            fp.write(json.dumps({"past_version": record_to_dict(version_of(rec, v))}) + "\n")
        fp.write(end_line(1, versions))
    return path


def fill(side: Side, rec: MemoryRecord, tmp: Path, long: int = LONG) -> dict[str, int]:
    """Short records, a long record of ``long`` earlier versions (``rec`` as
    ``long0001``), another of ``2 * PART + 1`` (``long0002``), short records again;
    returns the numbers of records and earlier versions."""
    mem = side.mem
    past = 0
    for i in range(12):
        note = mem.add(USER, f"a short note before, number {i}", tags=["short"])
        if i % 4 == 0:
            note = mem.update(USER, note.id, content=f"note {i}, changed", expected_version=1)
            mem.update(USER, note.id, importance=0.9, expected_version=note.version)
            past += 2
    for n, rid in ((long, "long0001"), (2 * PART + 1, "long0002")):
        with long_file(tmp / f"{rid}.jsonl", rec, n, rid).open(encoding="utf-8") as fp:
            assert mem.import_records(fp).versions == n
        past += n
    for i in range(7):
        mem.add(USER, f"a short note after, number {i}")
    return {"records": 21, "versions": past}


@pytest.fixture
def part(monkeypatch: pytest.MonkeyPatch) -> int:
    """``HISTORY_PAGE`` set to :data:`PART` for the test."""
    monkeypatch.setattr("memstrata.portability.HISTORY_PAGE", PART)
    return PART


@pytest.fixture
def sides(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[str], Side]]:
    """Makes a store of a kind at each call (a new SQLite file, PostgreSQL schema or
    ``memory://``), closed (and its schema dropped) after the test."""
    made: list[Side] = []
    schemas: list[str] = []

    def make(kind: str) -> Side:
        if kind == "sqlite":
            url = f"sqlite:///{tmp_path / f's{len(made)}.db'}"
        elif kind == "memory":
            url = "memory://"
        else:
            server: PgServer = request.getfixturevalue("pg_server")
            url = server.url()
            schemas.append(url.rsplit("schema=", 1)[1])
        side = Side(kind, url)
        made.append(side)
        return side

    yield make
    for side in made:
        side.close()
    if schemas:
        server = request.getfixturevalue("pg_server")
        for schema in schemas:
            server.drop(schema)
