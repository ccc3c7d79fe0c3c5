"""An export carries every record's history (format version 3), and an import restores it:
``history`` after the import is ``history`` before, on every store; imported ``into``
another user the versions move with their record; a record skipped skips its versions;
a second import adds nothing; purged records export nothing."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from memstrata import AsyncMemory, FixedClock, Memory
from memstrata.policies.pii import PIIPolicy, PIIRedactor
from memstrata.portability import remapped_id

from .conftest import (
    ALICE,
    BOB,
    T0,
    USER,
    Fresh,
    edited,
    export_text,
    histories,
    lines_of,
)


def _past_lines(text: str) -> list[dict[str, object]]:
    return [x["past_version"] for x in lines_of(text) if "past_version" in x]


def test_history_comes_back_on_every_store(fresh: Fresh) -> None:
    src = fresh()
    ids = edited(src)
    before = histories(src)
    assert len(before[ids["note"]]) == 3 and len(before[ids["gone"]]) == 3
    text = export_text(src, include_embeddings=True)
    head, end = lines_of(text)[0], lines_of(text)[-1]
    past = _past_lines(text)
    assert head["version"] == 3
    assert end == {"end": "complete", "count": len(before), "past_versions": len(past)}
    assert len(past) == sum(len(v) - 1 for v in before.values()) > 4
    other = fresh(FixedClock(T0))
    report = other.import_records(io.StringIO(text))
    assert (report.imported, report.versions) == (len(before), len(past))
    assert histories(other) == before  # texts, times, statuses, access, counters: all
    assert export_text(other, include_embeddings=True).split("\n")[1:] == text.split("\n")[1:]


def test_a_second_import_adds_nothing(fresh: Fresh) -> None:
    src = fresh()
    edited(src)
    text = export_text(src)
    other = fresh()
    other.import_records(io.StringIO(text))
    after_first = histories(other)
    again = other.import_records(io.StringIO(text))
    assert (again.imported, again.versions) == (0, 0)
    assert histories(other) == after_first


def test_purged_records_export_nothing(fresh: Fresh) -> None:
    src = fresh()
    ids = edited(src)
    text = export_text(src)
    assert ids["doomed"] not in text  # neither its line nor its past versions


def test_into_another_user_moves_the_versions_with_their_record(fresh: Fresh) -> None:
    src = fresh()
    ids = edited(src)
    before = histories(src)
    other = fresh()
    report = other.import_records(io.StringIO(export_text(src)), into=BOB)
    assert report.versions == sum(len(v) - 1 for v in before.values())
    moved = histories(other, BOB)
    assert set(moved) == {remapped_id(rid, BOB) for rid in before}
    for rid, versions in before.items():
        new = moved[remapped_id(rid, BOB)]
        assert [v["version"] for v in new] == [v["version"] for v in versions]
        assert [v["content"] for v in new] == [v["content"] for v in versions]
        assert {(v["id"], v["tenant"], v["user"]) for v in new} == {
            (remapped_id(rid, BOB), BOB.tenant, BOB.user)
        }
    # a fact's provenance names the turn of the file, remapped, in each version
    fact = next(v for v in moved.values() if v[-1]["type"] == "fact" and len(v) > 1)
    assert all(s in moved for v in fact for s in v["source_ids"])
    assert ids["note"] not in moved


def test_a_record_already_present_keeps_its_own_history(fresh: Fresh) -> None:
    """A record skipped as present skips its versions: an import adds records, it does not
    rewrite one the store holds (its history included)."""
    src = fresh()
    ids = edited(src)
    other = fresh()
    other.import_records(io.StringIO(export_text(src, include_history=False)))
    assert len(other.history(USER, ids["note"])) == 1
    report = other.import_records(io.StringIO(export_text(src)))
    assert (report.imported, report.versions) == (0, 0)
    assert len(other.history(USER, ids["note"])) == 1


def test_without_history_the_file_is_version_2(fresh: Fresh) -> None:
    src = fresh()
    ids = edited(src)
    text = export_text(src, include_history=False)
    lines = lines_of(text)
    assert lines[0]["version"] == 2 and not _past_lines(text)
    assert set(lines[-1]) == {"end", "count"}
    other = fresh()
    assert other.import_records(io.StringIO(text)).versions == 0
    assert [v.version for v in other.history(USER, ids["note"])] == [3]


def test_the_history_of_an_import_is_redacted_like_its_records(tmp_path: Path) -> None:
    """A past version holds text as it was: the importing memory's PII policy applies to
    it as to the record (a clear secret must not come back through history)."""
    secret = "my email is zed.quux@example.org"
    with Memory("memory://", embedder="hashing", background=False) as src:
        note = src.add(ALICE, f"{secret} for the newsletter")
        src.update(USER, note.id, expected_version=note.version, content="no email any more")
        text = export_text(src)
    assert "zed.quux" in text
    red = PIIRedactor(PIIPolicy())
    url = f"sqlite:///{tmp_path / 'p.db'}"
    with Memory(url, embedder="hashing", background=False, pii=red) as other:
        assert other.import_records(io.StringIO(text)).versions == 1
        first, last = other.history(USER, note.id)
        assert "zed.quux" not in first.text and "[EMAIL_1]" in first.text
        assert last.text == "no email any more"


def test_async_memory_round_trips_history(tmp_path: Path) -> None:
    async def run() -> None:
        async with AsyncMemory(
            f"sqlite:///{tmp_path / 'a.db'}", embedder="hashing", background=False
        ) as src:
            note = await src.add(ALICE, "Alice keeps bees")
            await src.update(USER, note.id, expected_version=note.version, content="and honey")
            await src.delete(USER, note.id)
            buf = io.StringIO()
            await src.export_records(USER, buf)
            before = await src.history(USER, note.id)
        async with AsyncMemory(
            f"sqlite:///{tmp_path / 'b.db'}", embedder="hashing", background=False
        ) as other:
            report = await other.import_records(io.StringIO(buf.getvalue()))
            assert report.versions == 2
            assert await other.history(USER, note.id) == before

    asyncio.run(run())
