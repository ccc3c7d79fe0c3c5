from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata.bench.locomo.dataset import (
    LocomoDataError,
    default_data_path,
    load_locomo,
    normalize_evidence,
    parse_session_date,
    select_conversations,
)


def test_parse_session_date() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_date("12:09 am on 1 January, 2024") == datetime(
        2024, 1, 1, 0, 9, tzinfo=UTC
    )
    assert parse_session_date("12:30 pm on 2 Feb 2022").hour == 12
    with pytest.raises(LocomoDataError):
        parse_session_date("yesterday")


def test_normalize_evidence_handles_malformed_ids() -> None:
    assert normalize_evidence(["D8:6; D9:17"]) == ("D8:6", "D9:17")
    assert normalize_evidence(["D9:1 D4:4 D4:6"]) == ("D9:1", "D4:4", "D4:6")
    assert normalize_evidence(["D:11:26"]) == ("D11:26",)
    assert normalize_evidence(["D10:", "D", ""]) == ()
    assert normalize_evidence(["D3:05", "D3:5"]) == ("D3:5",)


def test_load_tiny_file(locomo_file: Path) -> None:
    (conv,) = load_locomo(locomo_file)
    assert conv.sample_id == "conv-x"
    assert [s.number for s in conv.sessions] == [1, 2]
    turns = conv.turns
    assert len(turns) == 6
    assert turns[1].observed_at > turns[0].observed_at
    assert turns[3].observed_at == datetime(2023, 6, 27, 10, 37, tzinfo=UTC)
    assert turns[2].content == "Look at him! [shares a photo: a photo of a brown dog on a sofa]"
    qs = conv.questions
    assert qs[1].evidence == ("D2:1", "D2:2")
    assert qs[2].evidence == ("D2:1",)
    assert qs[3].answer == "1234" and qs[3].evidence == ()
    assert qs[4].category == 5 and not qs[4].has_answer and qs[0].has_answer


def test_missing_file_says_where_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(LocomoDataError, match="snap-research/locomo"):
        load_locomo(tmp_path / "nope.json")
    with pytest.raises(LocomoDataError, match="--data"):
        default_data_path(tmp_path)


def test_select_conversations(locomo_file: Path) -> None:
    convs = load_locomo(locomo_file)
    assert select_conversations(convs, None) == convs
    assert select_conversations(convs, "0") == convs
    assert select_conversations(convs, "conv-x,0") == convs
    with pytest.raises(LocomoDataError):
        select_conversations(convs, "3")
    with pytest.raises(LocomoDataError):
        select_conversations(convs, "conv-nope")
