"""Input one store refuses, every store refuses, with the same error; and the file objects
of export and import are checked before anything happens, so a wrong one is a
``ValidationError`` that says what to pass — not an ``AttributeError`` or ``TypeError``."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from memstrata import Memory, Scope
from memstrata.errors import ValidationError
from memstrata.validation import check_int


@pytest.mark.parametrize(
    "write",
    [
        lambda m, s: m.add(s, "before\x00after"),
        lambda m, s: m.add_message(s, "user", "tool output \x00 with a NUL"),
        lambda m, s: m.add_messages(
            s, [{"role": "user", "content": "fine"}, {"role": "user", "content": "\x00x"}]
        ),
        lambda m, s: m.key.set(s, "pinned \x00"),
    ],
)
def test_a_nul_character_is_refused_by_every_store(mem: Memory, alice: Scope, write) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError, match="NUL character"):
        write(mem, alice)
    assert mem.list(alice) == []  # nothing written, not even the fine message before it


def test_a_query_may_hold_a_nul(mem: Memory, alice: Scope) -> None:
    mem.add(alice, "the cat sleeps")
    assert mem.search(alice, "cat\x00") != []


def test_an_update_to_nul_content_keeps_the_record(mem: Memory, alice: Scope) -> None:
    rec = mem.add(alice, "the first text")
    with pytest.raises(ValidationError, match="NUL"):
        mem.update(alice, rec.id, content="x\x00", expected_version=rec.version)
    assert mem.get(alice, rec.id).content.raw == "the first text"


@pytest.mark.parametrize(
    ("fp", "says"),
    [
        (None, "text file open for writing"),
        (io.BytesIO(), "binary file"),
        (42, "text file open for writing"),
    ],
)
def test_export_checks_its_file_first(mem: Memory, alice: Scope, fp: object, says: str) -> None:
    mem.add(alice, "something")
    with pytest.raises(ValidationError, match=says):
        mem.export_records(alice, fp)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=says):
        mem.audit.export("acme", fp)  # type: ignore[arg-type]


def test_export_to_a_file_open_for_reading(mem: Memory, alice: Scope, tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text("")
    with (
        path.open(encoding="utf-8") as fp,
        pytest.raises(ValidationError, match="not open for writing"),
    ):
        mem.export_records(alice, fp)


@pytest.mark.parametrize("fp", [None, 42, "export.jsonl", b"{}"])
def test_import_checks_its_file_first(mem: Memory, fp: object) -> None:
    with pytest.raises(ValidationError, match="file open for reading"):
        mem.import_records(fp)  # type: ignore[arg-type]


def test_export_into_a_spooled_text_file_works(mem: Memory, alice: Scope) -> None:
    import tempfile

    mem.add(alice, "kept")
    with tempfile.SpooledTemporaryFile(mode="w+", encoding="utf-8") as spool:
        assert mem.export_records(alice, spool) == 1


@pytest.mark.parametrize(
    ("low", "high", "value", "says"),
    [
        (1, None, -5, "must be at least 1, got -5"),
        (None, 10, 11, "must be at most 10, got 11"),
        (0, 10, 11, "must be in [0, 10], got 11"),
    ],
)
def test_a_range_error_names_its_bounds(
    low: int | None, high: int | None, value: int, says: str
) -> None:
    with pytest.raises(ValidationError) as err:
        check_int(value, "n", low=low, high=high)
    assert says in str(err.value)
