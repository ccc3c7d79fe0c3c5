"""Records whose fields contradict each other: an import refuses those no memstrata write
produces (which half is true only the file's author knows), and imports, exactly as they
are, those memstrata itself produces however odd they look (an export of anything the
public API makes must import).

Refused: active with a ``deleted_at``; deleted without one; superseded by itself.
Imported as they are: ``valid_to`` before ``valid_from`` (a fact replaced by one observed
earlier: a replay out of order), ``updated_at``, ``deleted_at`` or ``last_accessed_at``
before ``created_at`` (a clock set back: ``FixedClock.set`` for replays, or a wall clock
stepped back)."""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstrata import FixedClock, Memory
from memstrata.errors import ImportFormatError
from memstrata.llm.models import ExtractedFact

from .conftest import ALICE, USER, Fresh, export_text, lines_of, records_of, stored, text_of

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

Edit = Callable[[dict[str, Any]], None]


def _one_record() -> list[dict[str, Any]]:
    m = Memory("memory://", embedder="hashing", background=False)
    m.add(ALICE, "Alice keeps bees in her garden")
    lines = lines_of(export_text(m, USER))
    m.close()
    return lines


REFUSED: list[tuple[str, Edit, str]] = [
    (
        "active with deleted_at",
        lambda r: r.__setitem__("deleted_at", "2026-01-02T00:00:00+00:00"),
        "is active but has deleted_at 2026-01-02T00:00:00+00:00: every store clears deleted_at "
        'when a record is restored; set "status": "deleted" to import it deleted, or '
        '"deleted_at": null to import it active; nothing was imported',
    ),
    (
        "deleted without deleted_at",
        lambda r: r.__setitem__("status", "deleted"),
        "is deleted but has no deleted_at (every store records when a record is deleted): "
        'give "deleted_at" the time it was deleted, or set "status": "active"',
    ),
    (
        "superseded by itself",
        lambda r: r.__setitem__("superseded_by", r["id"]),
        "is superseded by itself: it would be hidden from search with no record replacing "
        'it; set "superseded_by" to the id of the record that replaced it, or null',
    ),
]


@pytest.mark.parametrize(("edit", "says"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_a_contradiction_no_write_makes_is_refused(fresh: Fresh, edit: Edit, says: str) -> None:
    lines = _one_record()
    rid = lines[1]["record"]["id"]
    edit(lines[1]["record"])
    mem = fresh()
    with pytest.raises(ImportFormatError) as caught:
        mem.import_records(io.StringIO(text_of(lines)))
    assert f"line 2: record {rid} {says}" in str(caught.value)
    assert stored(mem, USER) == 0


def test_either_half_of_the_contradiction_imports(fresh: Fresh) -> None:
    """What the refusal says to do works: deleted with its time, or active without it."""
    for status, deleted_at in (("deleted", "2026-01-02T00:00:00+00:00"), ("active", None)):
        lines = _one_record()
        lines[1]["record"] |= {"status": status, "deleted_at": deleted_at}
        mem = fresh()
        assert mem.import_records(io.StringIO(text_of(lines))).imported == 1
        back = lines_of(export_text(mem, USER))[1]["record"]
        assert (back["status"], back["deleted_at"]) == (status, deleted_at)


def _round_trip(fresh: Fresh, mem: Memory) -> dict[str, dict[str, Any]]:
    """The records of ``mem``'s export, after it was imported into a fresh store and
    exported again (which must give the same lines)."""
    text = export_text(mem, USER, embeddings=True)
    other = fresh()
    other.import_records(io.StringIO(text))
    again = export_text(other, USER, embeddings=True)
    assert again.split("\n")[1:] == text.split("\n")[1:]
    return {r["id"]: r for r in records_of(again)}


def _time(value: str | None) -> datetime:
    assert value is not None
    return datetime.fromisoformat(value)


def test_a_fact_replaced_by_one_observed_earlier_round_trips(fresh: Fresh) -> None:
    """``valid_to`` before ``valid_from``: before session 22 a replay that upserted a key's
    facts out of the order they were said in wrote such a fact (now the earlier value is
    kept for the time it held: ``tests/layers/test_fact_earlier_value.py``). Stores hold
    them, so an import takes one as it is."""
    mem = fresh()
    march = ExtractedFact(category="home", key="city", value="Lyon", confidence=0.6)
    mem.facts.upsert(ALICE, march, observed_at=T0 - timedelta(days=30))
    february = ExtractedFact(category="home", key="city", value="Paris", confidence=0.9)
    mem.facts.upsert(ALICE, february, observed_at=T0 - timedelta(days=60))
    lines = lines_of(export_text(mem, USER, embeddings=True))
    [ended] = [x["record"] for x in lines[1:-1] if x["record"]["superseded_by"]]
    assert _time(ended["valid_from"]) < _time(ended["valid_to"])  # as written now
    ended["valid_from"], ended["valid_to"] = ended["valid_to"], ended["valid_from"]
    other = fresh()
    other.import_records(io.StringIO(text_of(lines)))
    records = _round_trip(fresh, other)
    assert records[ended["id"]] == ended
    assert _time(ended["valid_to"]) < _time(ended["valid_from"])


def test_times_from_a_clock_set_back_round_trip(fresh: Fresh) -> None:
    """``updated_at`` and ``deleted_at`` before ``created_at``: written while the memory's
    clock was set back (``FixedClock.set``, as a replay of older turns does)."""
    clock = FixedClock(T0)
    mem = fresh(clock)
    kept = mem.add(ALICE, "Alice keeps bees in her garden")
    gone = mem.add(ALICE, "Alice sells honey at the market")
    clock.set(T0 - timedelta(days=400))
    mem.update(ALICE, kept.id, content="Alice keeps two hives", expected_version=1)
    mem.delete(ALICE, gone.id)
    records = _round_trip(fresh, mem)
    assert _time(records[kept.id]["updated_at"]) < _time(records[kept.id]["created_at"])
    assert _time(records[gone.id]["deleted_at"]) < _time(records[gone.id]["created_at"])
