"""An export is one snapshot of the user's records: a purge or a backfilled add that lands
while it reads can neither skip a record that existed throughout nor write one twice.

The concurrent write is made deterministic by running it right after the export's first
read of the store (before the fix the export read pages of 1,000 by offset, and the write
shifted the offsets under the second page; now it pages by ``(observed_at, seq)``)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from memstrata import Memory, Message, Scope
from midwalk import after_first_page

_N = 1_005  # more than one page of the old offset loop


def _fill(mem: Memory, scope: Scope) -> list[str]:
    msgs = [Message(role="user", content=f"note number {i} about topic {i * 7}") for i in range(_N)]
    mem.add_messages(scope, msgs)
    return [r.id for r in mem.list(scope, limit=10_000)]


def _exported_ids(mem: Memory, scope: Scope) -> list[str]:
    buf = io.StringIO()
    mem.export_records(scope, buf)
    lines = buf.getvalue().splitlines()[1:-1]  # between the header and the end line
    return [json.loads(line)["record"]["id"] for line in lines]


def _after_first_read(
    mem: Memory, monkeypatch: pytest.MonkeyPatch, write: Callable[[], None]
) -> None:
    """Run ``write`` right after the export's first read of the store."""
    after_first_page(mem.store, monkeypatch, write)


def test_a_purge_during_the_export_skips_no_other_record(
    mem: Memory, alice: Scope, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _fill(mem, alice)
    victim = before[-1]  # the oldest: in the first page of an oldest-first read
    _after_first_read(mem, monkeypatch, lambda: mem.purge(alice, [victim]))

    exported = _exported_ids(mem, alice)
    survivors = set(before) - {victim}
    assert survivors <= set(exported), f"{len(survivors - set(exported))} records missing"
    assert len(exported) == len(set(exported))


def test_a_backfilled_add_during_the_export_repeats_no_record(
    mem: Memory, alice: Scope, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _fill(mem, alice)
    early = datetime(2020, 1, 1, tzinfo=UTC)  # older than every record: sorts first
    _after_first_read(
        mem, monkeypatch, lambda: mem.add(alice, "a backfilled memory", observed_at=early)
    )

    exported = _exported_ids(mem, alice)
    assert len(exported) == len(set(exported)), "a record was exported twice"
    assert set(before) <= set(exported)


def test_the_export_end_line_counts_the_lines(mem: Memory, alice: Scope) -> None:
    _fill(mem, alice)
    buf = io.StringIO()
    assert mem.export_records(alice, buf) == _N
    lines = buf.getvalue().splitlines()
    end = {"end": "complete", "count": len(lines) - 2, "past_versions": 0}  # no updates
    assert json.loads(lines[-1]) == end
    assert len(lines) - 2 == _N
