"""Long-term summaries: every 10 rounds, at session end, fallbacks, idempotency, rolling."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from strata_kit import ALICE, add_turns, layer_ctx, minutes_after, rounds

from memstrata.errors import ProviderError
from memstrata.layers.summaries import (
    SummaryService,
    clean_summary,
    due_blocks,
    final_block,
    summary_id,
)
from memstrata.llm.chat import PromptedLLM
from memstrata.llm.fake import ScriptedChat
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.records import RecordStatus, RecordType


class BrokenSummaries(HeuristicLLM):
    """A real LLM whose summaries are broken in a chosen way."""

    def __init__(self, reply: str | None) -> None:
        self.reply = reply
        self.calls = 0

    @property
    def name(self) -> str:
        return "broken"

    def summarize(self, texts: Sequence[str], *, max_words: int = 200) -> str:
        self.calls += 1
        if self.reply is None:
            raise ProviderError("endpoint down")
        return self.reply


def test_due_blocks_and_final_block() -> None:
    assert due_blocks(9, 0, 10) == []
    assert due_blocks(10, 0, 10) == [(1, 10)]
    assert due_blocks(25, 0, 10) == [(1, 10), (11, 20)]
    assert due_blocks(25, 10, 10) == [(11, 20)]
    assert final_block(23, 20) == (21, 23) and final_block(20, 20) is None


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("", False),
        ("   ", False),
        ("!!! ???", False),
        ('{"summary": "x"}', False),
        ("[1, 2]", False),
        (None, False),
        ("They discussed sailing.", True),
        ("讨论了帆船。", True),
    ],
)
def test_clean_summary_rejects_garbage(text: object, ok: bool) -> None:
    assert (clean_summary(text, 200) is not None) is ok


def test_clean_summary_cuts_to_max_words() -> None:
    cut = clean_summary("one two three four", 2)
    assert cut is not None and cut.startswith("one two") and "three" not in cut


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_a_summary_every_10_rounds_with_step_and_time_ranges(tmp_path: Path, kind: str) -> None:
    with layer_ctx(tmp_path, kind) as ctx:
        svc = SummaryService(ctx)
        turns = add_turns(ctx, ALICE, rounds(1, 10))
        assert svc.summarize_due(ALICE) == []  # round 10 may still get replies
        turns += add_turns(ctx, ALICE, rounds(11, 11), start=minutes_after(20))
        (first,) = svc.summarize_due(ALICE)
        s = first.content.structured
        assert (s["step_start"], s["step_end"], s["session"]) == (1, 10, "s1")
        assert s["time_start"] == turns[0].observed_at.isoformat()
        assert s["time_end"] == turns[19].observed_at.isoformat()
        assert first.observed_at == turns[19].observed_at
        assert first.source_ids == tuple(t.id for t in turns[:20])
        assert first.type is RecordType.SUMMARY and first.session == "s1"
        assert len(first.text.split()) <= 200 and "Round" in first.text
        assert svc.summarize_due(ALICE) == []  # idempotent
        add_turns(ctx, ALICE, rounds(12, 21), start=minutes_after(22))
        (second,) = svc.summarize_due(ALICE)
        assert (second.content.structured["step_start"], second.content.structured["step_end"]) == (
            11,
            20,
        )
        (end,) = svc.summarize_session_end(ALICE)
        assert (end.content.structured["step_start"], end.content.structured["step_end"]) == (
            21,
            21,
        )
        assert end.content.structured["final"] is True
        assert svc.summarize_session_end(ALICE) == []
        assert [r.content.structured["step_start"] for r in svc.summaries(ALICE)] == [1, 11, 21]


def test_session_end_summarises_a_short_session(tmp_path: Path) -> None:
    with layer_ctx(tmp_path) as ctx:
        turns = add_turns(ctx, ALICE, rounds(1, 3))
        (only,) = SummaryService(ctx).summarize_session_end(ALICE)
        assert only.source_ids == tuple(t.id for t in turns)
        assert (only.content.structured["step_start"], only.content.structured["step_end"]) == (
            1,
            3,
        )


@pytest.mark.parametrize("reply", [None, "", "  ", "%%%", '{"summary": ""}'])
def test_a_broken_llm_falls_back_to_the_offline_summary(tmp_path: Path, reply: str | None) -> None:
    llm = BrokenSummaries(reply)
    with layer_ctx(tmp_path, llm=llm) as ctx:
        add_turns(ctx, ALICE, rounds(1, 2))
        (record,) = SummaryService(ctx).summarize_session_end(ALICE)
        assert llm.calls == 1
        assert record.metadata["summarizer"] == "heuristic-fallback"
        assert "Round" in record.text


def test_a_prompted_llm_summary_is_used_when_valid(tmp_path: Path) -> None:
    chat = ScriptedChat('{"summary": "Alice asked about sailing and pottery."}')
    with layer_ctx(tmp_path, llm=PromptedLLM(chat)) as ctx:
        add_turns(ctx, ALICE, rounds(1, 2))
        (record,) = SummaryService(ctx).summarize_session_end(ALICE)
        assert record.text == "Alice asked about sailing and pottery."
        assert chat.remaining == 0 and len(chat.calls) == 1


def test_a_deleted_summary_is_not_written_again(tmp_path: Path) -> None:
    with layer_ctx(tmp_path) as ctx:
        svc = SummaryService(ctx)
        add_turns(ctx, ALICE, rounds(1, 11))
        (first,) = svc.summarize_due(ALICE)
        ctx.store.set_status(ALICE, [first.id], RecordStatus.DELETED, ctx.clock.now())
        assert svc.summarize_due(ALICE) == []
        assert first.id == summary_id(ALICE, "range", 1, 10)


def test_the_rolling_summary_is_one_record_updated_as_versions(tmp_path: Path) -> None:
    with layer_ctx(tmp_path) as ctx:
        svc = SummaryService(ctx)
        turns = add_turns(ctx, ALICE, rounds(1, 4))
        assert svc.rolling(ALICE) is None
        first = svc.update_rolling(ALICE, turns[:2])
        assert first is not None and first.version == 1
        assert svc.update_rolling(ALICE, turns[:2]) == first  # nothing new: no new version
        second = svc.update_rolling(ALICE, turns[:4])
        assert second is not None and second.id == first.id and second.version == 2
        assert second.source_ids == tuple(t.id for t in turns[:4])
        assert second.content.structured["time_start"] == turns[0].observed_at.isoformat()
        assert len(ctx.store.history(ALICE, first.id)) == 2
        assert svc.summaries(ALICE) == []  # the rolling summary is not a range summary
