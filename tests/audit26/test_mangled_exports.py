"""A mangled export either imports as the original or is refused with nothing written
(hypothesis): cut at any byte, a line dropped, doubled, moved or two lines swapped, a line
joined to the next, a key renamed, the end line's counts changed. Whatever the mangling,
the import's outcome is one of two: an ``ImportFormatError`` (a ``MemstrataError``, never
a bare ``KeyError`` or ``JSONDecodeError``) leaving the target as it was, or every
record with exactly its source's history (a swap of two whole records is harmless).
A guard: held on the tree audit26 started from, seeds 1-4."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import FixedClock, Memory, Scope
from memstrata.codec import record_to_dict
from memstrata.errors import ImportFormatError
from memstrata.filters import Filters
from memstrata.llm.models import ExtractedFact

USER = Scope("acme", "u1")
EVERY = Filters(include_deleted=True, include_superseded=True)
T0 = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


def _histories(mem: Memory) -> dict[str, list[dict[str, Any]]]:
    return {
        r.id: [record_to_dict(v) for v in mem.history(USER, r.id)]
        for r in mem.list(USER, filters=EVERY, limit=1000)
    }


@pytest.fixture(scope="module")
def source() -> Iterator[tuple[str, dict[str, list[dict[str, Any]]]]]:
    mem = Memory("memory://", embedder="hashing", background=False, clock=FixedClock(T0))
    a = mem.add(USER, "Zoë keeps bees near Łódź", tags=["bees"], metadata={"n": [1, {"x": None}]})
    mem.update(USER, a.id, expected_version=1, content="Zoë keeps bees near Lodz")
    b = mem.add(USER, "a note deleted and restored")
    mem.delete(USER, b.id)
    mem.restore(USER, b.id)
    c = mem.add(USER, "a note shared with bob")
    mem.set_access(USER, c.id, visibility="shared", allowed_users=["bob"])
    d = mem.add(USER, "a note deleted for good")
    mem.delete(USER, d.id)
    mem.add(USER, "a plain note")
    for value, confidence in (("Lyon", 0.6), ("Paris", 0.9)):
        mem.facts.upsert(
            USER, ExtractedFact(category="home", key="city", value=value, confidence=confidence)
        )
    buf = io.StringIO()
    mem.export_records(USER, buf)
    yield buf.getvalue(), _histories(mem)
    mem.close()


def _mangle(text: str, how: str, i: int, j: int, cut: int) -> str:
    lines = text.splitlines(keepends=True)
    i, j = i % len(lines), j % len(lines)
    if how == "cut":
        return text[: cut % len(text)]
    if how == "drop":
        del lines[i]
    elif how == "double":
        lines.insert(i, lines[i])
    elif how == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    elif how == "move":
        lines.insert(j, lines.pop(i))
    elif how == "join":
        if i + 1 < len(lines):
            lines[i : i + 2] = [lines[i].rstrip("\n") + lines[i + 1]]
    elif how == "rename_key":
        lines[i] = lines[i].replace('"version"', '"versoin"', 1).replace('"raw"', '"text"', 1)
    elif how == "end_counts":
        lines[-1] = lines[-1].replace('"count": ', '"count": 1', 1)
    return "".join(lines)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    how=st.sampled_from(
        ["cut", "drop", "double", "swap", "move", "join", "rename_key", "end_counts"]
    ),
    i=st.integers(0, 1000),
    j=st.integers(0, 1000),
    cut=st.integers(0, 100_000),
)
def test_a_mangled_export_imports_whole_or_not_at_all(
    source: tuple[str, dict[str, list[dict[str, Any]]]], how: str, i: int, j: int, cut: int
) -> None:
    text, before = source
    mangled = _mangle(text, how, i, j, cut)
    with Memory("memory://", embedder="hashing", background=False, clock=FixedClock(T0)) as dst:
        kept = dst.add(Scope("acme", "other"), "what the target held before")
        try:
            dst.import_records(io.StringIO(mangled))
        except ImportFormatError:
            assert _histories(dst) == {}
        else:
            assert _histories(dst) == before, (how, i, j, cut)
        assert [r.id for r in dst.list(Scope("acme", "other"))] == [kept.id]
