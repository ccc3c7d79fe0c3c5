"""A record whose history is longer than ``HISTORY_PAGE`` is imported in parts
(``portability.Continued``) with every guarantee of an import of a short one: nothing
written when any line is refused (a bad line at the end of a long history included),
versions oldest first, each once, counted by the end line; remapped (``into=``), renamed
beside a record holding its id, skipped with its record, async too; and each part's newest
version kept against the next part's first (the SQL stores' reverse deltas).
``HISTORY_PAGE`` is 3 here, so a history of 10 has four parts."""

from __future__ import annotations

import asyncio
import io
import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from memstrata import AsyncMemory, Memory
from memstrata.codec import record_to_dict
from memstrata.errors import ImportFormatError, ValidationError
from memstrata.filters import Filters
from memstrata.portability import Continued, read_pages
from memstrata.records import MemoryRecord
from memstrata.store.base import RecordWrite

from .conftest import CAROL, USER, Fresh, base_record, version_of, write_long_history

EVERY = Filters(include_deleted=True, include_superseded=True)
PART = 3
N = 10  # past versions of the long record: parts of 3, 3, 3 and 1


@pytest.fixture(autouse=True)
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memstrata.portability.HISTORY_PAGE", PART)


@pytest.fixture
def rec(tmp_path: Path) -> MemoryRecord:
    return base_record(tmp_path)


def _texts(mem: Memory, scope: object, rid: str) -> list[tuple[int, str, tuple[str, ...]]]:
    return [(v.version, v.text, v.tags) for v in mem.history(scope, rid)]  # type: ignore[arg-type]


def _expected(rec: MemoryRecord, n: int = N) -> list[tuple[int, str, tuple[str, ...]]]:
    out = []
    for v in range(1, n + 2):
        made = version_of(rec, v)
        out.append((v, made.text, made.tags))
    return out


def _nothing(mem: Memory) -> bool:
    return mem.store.count(USER, EVERY) == 0


def test_the_reader_gives_a_long_history_in_parts_each_with_the_next_ones_first(
    tmp_path: Path, rec: MemoryRecord
) -> None:
    path = write_long_history(tmp_path / "e.jsonl", rec, N, others=2)
    with path.open(encoding="utf-8") as fp:
        pages = list(read_pages(fp, model_id="hashing-256", dims=256))
    entries = [e for page in pages for e in page]
    parts = [e for e in entries if isinstance(e, Continued)]
    assert [[v.version for v in p.past] for p in parts] == [[1, 2, 3], [4, 5, 6], [7, 8, 9], [10]]
    assert [p.newer.version if p.newer else None for p in parts] == [4, 7, 10, None]
    item = entries[0]
    assert not isinstance(item, Continued) and item[0].version == N + 1 and item[2] == ()
    assert max(sum(len(e.past) for e in p if isinstance(e, Continued)) for p in pages) == PART


def test_a_long_history_comes_back_as_exported(
    fresh: Fresh, tmp_path: Path, rec: MemoryRecord
) -> None:
    mem = fresh()
    path = write_long_history(tmp_path / "e.jsonl", rec, N, others=2)
    with path.open(encoding="utf-8") as fp:
        report = mem.import_records(fp)
    assert (report.imported, report.skipped, report.versions) == (3, 0, N)
    assert _texts(mem, USER, rec.id) == _expected(rec)
    # exported again, and imported elsewhere: the same history
    buf = io.StringIO()
    mem.export_records(USER, buf)
    other = fresh()
    again = other.import_records(io.StringIO(buf.getvalue()))
    assert (again.imported, again.versions) == (3, N)
    assert _texts(other, USER, rec.id) == _expected(rec)
    # imported once more: nothing added, the parts skipped with their record
    with path.open(encoding="utf-8") as fp:
        twice = mem.import_records(fp)
    assert (twice.imported, twice.skipped, twice.versions) == (0, 3, 0)
    assert len(mem.history(USER, rec.id)) == N + 1


@pytest.mark.parametrize(
    "tail",
    [
        "{not json\n",
        json.dumps({"end": "complete", "count": 3, "past_versions": N - 1}) + "\n",
        "",  # no end line: cut off
    ],
    ids=["mangled", "miscounted", "cut"],
)
def test_a_bad_end_after_a_long_history_writes_nothing(
    fresh: Fresh, tmp_path: Path, rec: MemoryRecord, tail: str
) -> None:
    mem = fresh()
    path = write_long_history(tmp_path / "e.jsonl", rec, N, others=2, tail=tail)
    with path.open(encoding="utf-8") as fp, pytest.raises(ImportFormatError):
        mem.import_records(fp)
    assert _nothing(mem)


def test_a_version_out_of_order_late_in_a_long_history_writes_nothing(
    fresh: Fresh, tmp_path: Path, rec: MemoryRecord
) -> None:
    mem = fresh()
    path = write_long_history(tmp_path / "e.jsonl", rec, N)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[-2] = json.dumps({"past_version": record_to_dict(version_of(rec, 9))}) + "\n"
    path.write_text("".join(lines), encoding="utf-8")  # versions ..., 8, 9, 9
    with path.open(encoding="utf-8") as fp, pytest.raises(ImportFormatError, match="line"):
        mem.import_records(fp)
    assert _nothing(mem)


def test_a_long_history_remapped_and_beside_a_record_holding_its_id(
    fresh: Fresh, tmp_path: Path, rec: MemoryRecord
) -> None:
    mem = fresh()
    path = write_long_history(tmp_path / "e.jsonl", rec, N)
    with path.open(encoding="utf-8") as fp:
        report = mem.import_records(fp, into=CAROL)
    assert (report.imported, report.versions) == (1, N)
    (moved,) = mem.list(CAROL, filters=EVERY, limit=10)
    assert moved.id != rec.id
    assert [(v.version, v.user, v.id) for v in mem.history(CAROL, moved.id)] == [
        (v, "carol", moved.id) for v in range(1, N + 2)
    ]
    assert _texts(mem, CAROL, moved.id) == _expected(rec)
    # a record of alice's own holds the id (created at another time): kept beside it
    mine = replace(rec, created_at=rec.created_at + timedelta(days=1))
    with mem.store.transaction() as tx:
        tx.insert([RecordWrite(mine, None, ())])
    with path.open(encoding="utf-8") as fp:
        report = mem.import_records(fp)
    assert (report.imported, report.renamed, report.versions) == (1, 1, N)
    (kept,) = [r for r in mem.list(USER, filters=EVERY, limit=10) if r.id != rec.id]
    assert _texts(mem, USER, kept.id) == _expected(rec)
    assert len(mem.history(USER, rec.id)) == 1  # the record that held the id: untouched


def test_an_async_import_of_a_long_history(tmp_path: Path, rec: MemoryRecord) -> None:
    path = write_long_history(tmp_path / "e.jsonl", rec, N, others=1)

    async def run() -> list[MemoryRecord]:
        url = f"sqlite:///{tmp_path / 'a.db'}"
        async with AsyncMemory(url, embedder="hashing", background=False) as mem:
            with path.open(encoding="utf-8") as fp:
                report = await mem.import_records(fp)
            assert (report.imported, report.versions) == (2, N)
            return await mem.history(USER, rec.id)

    got = asyncio.run(run())
    assert [(v.version, v.text) for v in got] == [(v, t) for v, t, _ in _expected(rec)]


def test_a_store_takes_a_part_only_where_the_part_before_left_off(
    fresh: Fresh, rec: MemoryRecord
) -> None:
    mem = fresh()
    current = version_of(rec, N + 1)
    past = [version_of(rec, v) for v in range(1, N + 1)]
    with mem.store.transaction() as tx:
        tx.insert([RecordWrite(current, None, ())])
        tx.insert_history([past[:3]], [past[3]])
        tx.insert_history([past[3:6], past[6:]], [past[6], None])  # two parts in one call
    assert [(v.version, v.text) for v in mem.history(USER, rec.id)] == [
        (v, t) for v, t, _ in _expected(rec)
    ]
    other = replace(current, id="p" * 32)
    cases = [
        ([past[:3]], [past[3]], past[4:]),  # the next part skips version 4
        ([past[:3]], [None], past[3:]),  # the first part was the whole history
        ([past[:3]], [past[4]], past[3:]),  # it begins below the version the first named
    ]
    for first, first_newer, second in cases:
        moved = [[replace(v, id=other.id) for v in h] for h in (*first, second)]
        newer = [None if n is None else replace(n, id=other.id) for n in first_newer]
        with (
            pytest.raises(ValidationError, match="earlier versions already"),
            mem.store.transaction() as tx,
        ):
            tx.insert([RecordWrite(other, None, ())])
            tx.insert_history(moved[:1], newer)
            tx.insert_history(moved[1:], [None])
        assert mem.store.count(USER, EVERY) == 1  # nothing of the transaction kept
    ours = [replace(v, id=other.id) for v in past[:3]]
    for newer, why in [(other, "above 3 and below the stored version"), (past[3], "names")]:
        with pytest.raises(ValidationError, match=why), mem.store.transaction() as tx:
            tx.insert([RecordWrite(other, None, ())])
            tx.insert_history([ours], [newer])
        assert mem.store.count(USER, EVERY) == 1


def test_a_unit_of_work_that_ends_with_a_part_waiting_writes_nothing(
    fresh: Fresh, rec: MemoryRecord
) -> None:
    """Its newest version was kept against a version never given: the history would read
    wrong, so the transaction is refused whole."""
    mem = fresh()
    current = version_of(rec, N + 1)
    past = [version_of(rec, v) for v in range(1, N + 1)]
    with (
        pytest.raises(ValidationError, match="beginning with version 4 .* never came"),
        mem.store.transaction() as tx,
    ):
        tx.insert([RecordWrite(current, None, ())])
        tx.insert_history([past[:3]], [past[3]])
    assert _nothing(mem)


def test_a_long_history_is_redacted_part_by_part(
    fresh: Fresh, tmp_path: Path, rec: MemoryRecord
) -> None:
    """Each part's versions and the version after it are redacted alike, so the version
    kept against the next part's first reads back as redacted (no address, no mismatch)."""
    mem = fresh(pii="redact")
    path = write_long_history(tmp_path / "e.jsonl", rec, N)
    text = path.read_text(encoding="utf-8").replace("note number", "mail alice@example.com,")
    path.write_text(text, encoding="utf-8")
    with path.open(encoding="utf-8") as fp:
        report = mem.import_records(fp)
    assert report.versions == N
    got = mem.history(USER, rec.id)
    assert [v.version for v in got] == list(range(1, N + 2))
    assert not any("alice@example.com" in v.text for v in got)
    for v in got:  # every version its own number: no version read against another's text
        assert f"keeps {v.version} hives" in v.text and "[EMAIL" in v.text.upper()
