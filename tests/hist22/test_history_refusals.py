"""The strict import checks of session 21 extend to history: a past version that
contradicts its record, is out of place or out of order, carries a field memstrata does
not know, or is missing from the count is refused with a message naming the line and the
field, and nothing is written."""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable
from typing import Any

import pytest

from memstrata import Memory
from memstrata.errors import ImportFormatError

from .conftest import ALICE, USER, Fresh, lines_of, stored, text_of

Lines = list[dict[str, Any]]


@pytest.fixture
def source(fresh: Fresh) -> Lines:
    """An export of two records: a note with two past versions (lines 2-4), a plain one
    (line 5), and the end line."""
    mem = fresh()
    note = mem.add(ALICE, "Alice keeps two hives of bees in her garden")
    note = mem.update(USER, note.id, expected_version=note.version, content="three hives")
    mem.delete(USER, note.id)
    mem.add(ALICE, "a plain note")
    buf = io.StringIO()
    mem.export_records(USER, buf)
    lines = lines_of(buf.getvalue())
    assert [next(iter(x)) for x in lines[1:]] == [
        "record", "past_version", "past_version", "record", "end"]  # fmt: skip
    return lines


def _moved_first_past(lines: Lines) -> Lines:
    return [lines[0], lines[2], lines[1], *lines[3:]]


def _set(where: int, name: str, value: Any) -> Callable[[Lines], Lines]:
    def change(lines: Lines) -> Lines:
        out = copy.deepcopy(lines)
        out[where]["past_version"][name] = value
        return out

    return change


def _swap_pasts(lines: Lines) -> Lines:
    return [lines[0], lines[1], lines[3], lines[2], *lines[4:]]


def _twice(lines: Lines) -> Lines:
    return [*lines[:3], lines[2], *lines[3:-1], lines[-1] | {"past_versions": 3}]


def _past_after_the_other_record(lines: Lines) -> Lines:
    return [lines[0], lines[1], lines[2], lines[4], lines[3], lines[5]]


def _dropped_past(lines: Lines) -> Lines:
    return [*lines[:2], *lines[3:]]


def _end_without_count(lines: Lines) -> Lines:
    end = dict(lines[-1])
    end.pop("past_versions")
    return [*lines[:-1], end]


def _extra_on_line(lines: Lines) -> Lines:
    out = copy.deepcopy(lines)
    out[2]["embedding"] = None
    return out


def _extra_in_version(lines: Lines) -> Lines:
    out = copy.deepcopy(lines)
    out[2]["past_version"]["lineage"] = ["x"]
    return out


def _in_version_2(lines: Lines) -> Lines:
    return [lines[0] | {"version": 2}, *lines[1:-1], {"end": "complete", "count": 2}]


def _contradicts_itself(lines: Lines) -> Lines:
    out = copy.deepcopy(lines)
    out[2]["past_version"]["deleted_at"] = out[2]["past_version"]["created_at"]
    return out


def _after_the_end(lines: Lines) -> Lines:
    return [*lines, lines[2]]


CASES: dict[str, tuple[Callable[[Lines], Lines], str]] = {
    "before its record": (_moved_first_past, r"line 2: a past_version line must follow"),
    "another id": (_set(2, "id", "f" * 32), r"line 3: past_version\.id is 'f{32}'.*line 2"),
    "another tenant": (_set(3, "tenant", "other"), r"line 4: past_version\.tenant"),
    "another user": (_set(2, "user", "bob"), r"line 3: past_version\.user is 'bob'"),
    "newer than the record": (
        _set(3, "version", 3),
        r"line 4: past_version\.version is 3, not below the version of its record \(line 2: 3\)",
    ),
    "out of order": (_swap_pasts, r"line 4: past_version\.version is 1 after version 2"),
    "twice": (_twice, r"line 4: past_version\.version is 1 after version 1"),
    "after another record": (_past_after_the_other_record, r"line 5: past_version\.id"),
    "a line dropped": (_dropped_past, r"counts 2 past versions but the export holds 1"),
    "an end line that does not count them": (_end_without_count, r"counts 0 past versions"),
    "a field beside it": (_extra_on_line, r"line 3: the line has the field 'embedding'"),
    "a field inside it": (_extra_in_version, r"line 3: record has the field 'lineage'"),
    "in a version-2 file": (_in_version_2, r"line 3: a past_version line in an export of "),
    "contradicting itself": (_contradicts_itself, r"line 3: .*deleted_at"),
    "after the end line": (_after_the_end, r"line 7: a past_version line must follow"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_history_is_refused_and_nothing_written(
    fresh: Fresh, source: Lines, case: str
) -> None:
    change, message = CASES[case]
    other: Memory = fresh()
    with pytest.raises(ImportFormatError, match=message):
        other.import_records(io.StringIO(text_of(change(source))))
    assert stored(other) == 0


def test_the_unchanged_file_imports(fresh: Fresh, source: Lines) -> None:
    """The cases above change one thing each of a file that imports."""
    other = fresh()
    report = other.import_records(io.StringIO(text_of(source)))
    assert (report.imported, report.versions) == (2, 2)
    assert json.loads(json.dumps(source[2]["past_version"]))["version"] == 1
