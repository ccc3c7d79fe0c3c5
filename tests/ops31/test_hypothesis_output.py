"""A failing hypothesis example is printed with its values (session 31).

schemathesis's pytest plugin swapped hypothesis's printer for one that prints no value,
so every failing example of the suite read ``x=,``; and the robustness fuzzers' calls,
drawn by ``st.builds`` / ``.map`` of lambdas, printed the lambda's source
(``call=(name, call)``). ``tests/conftest.py`` gives hypothesis its printer back; the
fuzzers draw their calls by composites, printed by their repr (``call=forget(...)``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robustness.test_fuzz_api import Bound, bound, named


def _failing_note(test: object) -> str:
    with pytest.raises(AssertionError) as caught:
        test()  # type: ignore[operator]
    return "\n".join(getattr(caught.value, "__notes__", []))


def test_a_failing_example_shows_its_value() -> None:
    @settings(database=None, max_examples=50)
    @given(n=st.integers(min_value=0, max_value=100))
    def below_seven(n: int) -> None:
        assert n < 7

    note = _failing_note(below_seven)
    assert "n=7," in note, note


def test_a_fuzzed_call_shows_its_name_and_arguments() -> None:
    calls = named(
        {
            "forget": bound(lambda m, who, why: (who, why), st.just("alice"), st.just("gone")),
            "stats": bound(lambda m: None),
        }
    )

    @settings(database=None, max_examples=50)
    @given(call=calls)
    def never_forget(call: Bound) -> None:
        assert call.name != "forget"

    note = _failing_note(never_forget)
    assert "call=forget('alice', 'gone')," in note, note
