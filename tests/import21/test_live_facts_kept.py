"""An import keeps a key's live facts as the file has them when they are all the file's:
several live facts of one key are a state memstrata writes (``add(type="fact",
metadata={"key": ...})`` twice), and restoring a backup must give it back. Before, the
import ended all but one, superseded by it (a new version with ``valid_to`` and
``superseded_by``), and said nothing; the export after the import differed from the file.
A key that also has a live fact of the store's own still settles to one
(``tests/layers/test_one_live_fact_facts20.py``)."""

from __future__ import annotations

import io

import pytest

from memstrata import Memory

from .conftest import ALICE, USER, Fresh, export_text, records_of


def _two_live(mem: Memory) -> str:
    mem.add(ALICE, "pet: a cat", type="fact", metadata={"key": "pet"}, dedup=False)
    mem.add(ALICE, "pet: a dog", type="fact", metadata={"key": "pet"}, dedup=False)
    return export_text(mem, USER, embeddings=True)


@pytest.mark.parametrize("page", [1000, 1])
def test_the_files_own_live_facts_of_a_key_stay_live(
    fresh: Fresh, page: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memstrata.portability.EXPORT_PAGE", page)  # 1: one fact a page
    text = _two_live(fresh())
    records = records_of(text)
    assert [r["superseded_by"] for r in records] == [None, None]
    other = fresh()
    assert other.import_records(io.StringIO(text)).imported == 2
    again = records_of(export_text(other, USER, embeddings=True))
    assert again == records  # both live, version 1, as the file has them


def test_a_key_with_a_live_fact_of_the_stores_still_keeps_one(fresh: Fresh) -> None:
    text = _two_live(fresh())
    other = fresh()
    mine = other.add(ALICE, "pet: a parrot", type="fact", metadata={"key": "pet"}, confidence=0.2)
    other.import_records(io.StringIO(text))
    records = records_of(export_text(other, USER))
    live = [r for r in records if r["superseded_by"] is None]
    assert len(live) == 1
    assert {r["id"] for r in records if r["superseded_by"]} >= {mine.id}
