"""``Filters(...)`` built directly (the class is public; ``Filters.parse`` builds it from the
mapping the HTTP API and the CLI pass) with a value of the wrong shape (session 28's audit).

Before: ``list`` and ``search`` took it unchecked and each store read it its own way: a tag
given as a string or a list was a raw AttributeError on ``memory://`` and matched by
character (nothing) or worked on the SQL stores; a metadata mapping was an AttributeError
everywhere; a naive or string time a TypeError / AttributeError on some stores and fine on
others; a string ``min_importance`` a numpy UFuncTypeError in search; a lone surrogate a
UnicodeEncodeError on SQLite and PostgreSQL; NaN a match on one store and none on the
others. Now a Filters is checked as the mapping is: the same answer on every store, or a
``ValidationError`` naming the field."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Filters, Memory, MemstrataError, Scope, ValidationError
from memstrata.filters import MetadataCondition

S = Scope("t", "u")

# (Filters keyword arguments, records found: 1, 0, or None for a ValidationError)
CASES: dict[str, tuple[dict[str, Any], int | None]] = {
    "metadata as a mapping": ({"metadata": {"a": "b"}}, 1),
    "metadata conditions in a list": ({"metadata": [MetadataCondition("a", "eq", "b")]}, 1),
    "one metadata condition": ({"metadata": MetadataCondition("a", "eq", "b")}, 1),
    "types as one string": ({"types": "note"}, 1),
    "types as a set of strings": ({"types": {"note"}}, 1),
    "tags as one string": ({"tags_any": "work"}, 1),
    "tags as a list": ({"tags_any": ["work"]}, 1),
    "tags_all as one string": ({"tags_all": "work"}, 1),
    "ids as a list": ({"ids": ["nope"]}, 0),
    "sources as a set of strings": ({"sources": {"explicit_user_input"}}, 1),
    "a time as a string": ({"observed_after": "2020-01-01"}, 1),
    "a naive time": ({"observed_after": datetime(2020, 1, 1)}, 1),
    "min_importance as an int": ({"min_importance": 0}, 1),
    "min_importance as a string": ({"min_importance": "0.5"}, None),
    "min_importance NaN": ({"min_importance": float("nan")}, None),
    "include_deleted as a string": ({"include_deleted": "no"}, None),
    "a metadata condition on NaN": (
        {"metadata": (MetadataCondition("a", "gt", float("nan")),)},
        None,
    ),
    "a metadata key that is an int": ({"metadata": (MetadataCondition(1, "eq", "b"),)}, None),  # type: ignore[arg-type]
    "a metadata key with a lone surrogate": ({"metadata": {"\udc00": "b"}}, None),
    "a metadata condition key with a lone surrogate": (
        {"metadata": (MetadataCondition("\udc00", "eq", "b"),)},
        None,
    ),
    "a metadata value with a lone surrogate": (
        {"metadata": (MetadataCondition("a", "eq", "\udc00"),)},
        None,
    ),
    "a tag with a lone surrogate": ({"tags_any": frozenset({"\udc00"})}, None),
    "an id with a lone surrogate": ({"ids": frozenset({"\udc00"})}, None),
    "metadata as a string": ({"metadata": "a=b"}, None),
}


def _found(mem: Memory, kwargs: dict[str, Any]) -> list[int | None]:
    out: list[int | None] = []
    for call in ("list", "search"):
        try:
            f = Filters(**kwargs)
            if call == "list":
                out.append(len(mem.list(S, filters=f)))
            else:
                out.append(len(mem.search(S, "work note", filters=f)))
        except ValidationError:
            out.append(None)
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_filters_built_directly_is_checked_on_every_store(mem: Memory, case: str) -> None:
    kwargs, expected = CASES[case]
    mem.add(S, "work note", tags=["work"], metadata={"a": "b"}, importance=0.9)
    assert _found(mem, kwargs) == [expected, expected]


VALUES = st.one_of(
    st.none(),
    st.text(max_size=4),
    st.lists(st.text(max_size=4), max_size=2),
    st.frozensets(st.sampled_from(["work", "note", "\udc00", "a\x00"]), max_size=2),
    st.floats(allow_nan=True),
    st.integers(-2, 2),
    st.booleans(),
    st.datetimes(),
    st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
)
FIELDS = st.sampled_from(
    [
        "types",
        "tags_any",
        "tags_all",
        "observed_after",
        "observed_before",
        "valid_at",
        "min_importance",
        "sources",
        "metadata",
        "include_deleted",
        "include_superseded",
        "ids",
    ]
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(kwargs=st.dictionaries(FIELDS, VALUES, max_size=3))
def test_any_filters_is_an_answer_or_a_memstrata_error(mem: Memory, kwargs: dict[str, Any]) -> None:
    if not mem.list(S):
        mem.add(S, "work note", tags=["work"], metadata={"a": "b"}, importance=0.9)
    for call in ("list", "search"):
        try:
            f = Filters(**kwargs)
            mem.list(S, filters=f) if call == "list" else mem.search(S, "work note", filters=f)
        except MemstrataError:
            pass
