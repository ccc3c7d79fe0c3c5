"""The library's refusal of a number for a time says why: an epoch number is ambiguous
(seconds? milliseconds?), and what to pass instead (an ISO 8601 string or a datetime).
Before session 25 it said only "must be a datetime or an ISO-8601 string, got int"."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np
import pytest

from memstrata import Memory, Scope, ValidationError
from memstrata.validation import check_time

ME = Scope("acme", "alice", session="s1")
NUMBERS = [0, 12, 1.5, 1_700_000_000, 1_700_000_000_000, Decimal("1.5"), np.int64(5), 10**5000]


def _says_why(exc: pytest.ExceptionInfo[ValidationError]) -> None:
    message = str(exc.value)
    assert "observed_at" in message, message
    assert "ambiguous" in message and "seconds" in message and "milliseconds" in message
    assert "ISO 8601" in message and "datetime" in message, message


@pytest.mark.parametrize(
    "when",
    NUMBERS,
    ids=lambda v: f"{type(v).__name__}{v.bit_length() if isinstance(v, int) else v}",
)
def test_a_number_for_a_time_is_refused_with_the_reason(when: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        check_time(when, "observed_at")
    _says_why(caught)
    with Memory("memory://", embedder="hashing", background=False) as mem:
        with pytest.raises(ValidationError) as caught:
            mem.add_message(ME, "user", "said at a number", observed_at=when)
        _says_why(caught)
        with pytest.raises(ValidationError) as caught:
            mem.add(ME, "said at a number", observed_at=when)
        _says_why(caught)
        assert mem.list(ME) == []


def test_other_kinds_keep_their_own_answer() -> None:
    with pytest.raises(ValidationError) as caught:
        check_time(True, "observed_at")
    assert "got bool" in str(caught.value) and "ambiguous" not in str(caught.value)
    with pytest.raises(ValidationError, match="not an ISO-8601 time"):
        check_time("yesterday-ish", "observed_at")
