"""One hostile input through every way in (session 34's audit): the library (``Memory``,
``AsyncMemory``), the HTTP API and MCP (``/mcp`` of the same app, raw JSON-RPC bodies), on
SQLite and PostgreSQL. Each surface writes as a user of its own and gets the same sequence
of inputs, so each must answer alike: accepted everywhere, storing the same record (text,
tags, metadata, time, importance, version), or refused everywhere — a ``MemstrataError``,
a 4xx with a message, a tool error — with that user's records and export unchanged. Never
a 500, a traceback, or a partial write."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .surfaces import SURFACES, Answer, Surfaces

HOSTILE_CHARS = [
    "a", "b", " ", "\t", "\n", "\x00", "\ud800", "\udfff", "\u200b", "\u200f", "\u202e",
    "\u202c", "\ufeff", "\u2028", "\x7f", "\x1b", "\x85", "é", "\u0301", "中", "😀", "%", "/",
]  # fmt: skip
hostile_text = st.lists(
    st.sampled_from(HOSTILE_CHARS) | st.characters(codec="utf-8"), max_size=24
).map("".join)
contents = st.one_of(
    hostile_text,
    st.sampled_from(["", " ", " \t\n ", "\u200b", "\u202eevil\u202c", "x" * 100_001]),
    hostile_text.map(lambda t: "note about " + t),
)
tags = st.one_of(
    st.lists(hostile_text, max_size=4),
    st.just("one-tag-as-a-string"),
    st.just([f"t{i}" for i in range(300)]),
)
importances = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(0, 1),
    st.booleans(),
    st.integers(-2, 3),
    st.sampled_from(["0.5", None]),
)
offsets = st.timedeltas(timedelta(hours=-23, minutes=-59), timedelta(hours=23, minutes=59))
times = st.one_of(
    st.datetimes(datetime(1, 1, 1), datetime(9999, 12, 31, 23, 59)),  # naive: UTC
    st.builds(
        lambda d, o: d.replace(tzinfo=timezone(o)),
        st.datetimes(datetime(1, 1, 1), datetime(9999, 12, 31)),
        offsets,
    ),
    st.datetimes(datetime(1, 1, 1), datetime(9999, 12, 31)).map(lambda d: d.isoformat()),
    st.sampled_from(
        [
            "2024",
            "20240101",
            "0000-01-01",
            "10000-01-01",
            "1700000000",
            "nan",
            "NaN",
            "",
            " ",
            "2024-02-30",
            "2024-01-01T00:00:00+25:00",
            "9999-12-31T23:59:59-00:01",
            "0001-01-01T00:00:00+00:01",
            "2024-01-01 10:00",
            "2024-01-01T10:00:00\x00",
        ]
    ),  # fmt: skip
)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    hostile_text,
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile_text, inner, max_size=3),
    max_leaves=8,
)


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        value = {"a": value}
    return value


metadatas = st.one_of(
    st.dictionaries(hostile_text, json_values, max_size=4),
    st.sampled_from(
        [{"k" * 20_000: 1}, {"deep": _nested(31)}, {"deep": _nested(40)}, {"a\x00": "\x00"}]
    ),
)


def _fields(**kw: Any) -> dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not _ABSENT}


_ABSENT = object()


def absent_or(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """The field left out, or one of ``values``."""
    return st.just(_ABSENT) | values


@pytest.fixture
def surfaces(url: str, tmp_path: Path) -> Iterator[Surfaces]:
    s = Surfaces(url, tmp_path)
    yield s
    s.close()


def _same_answer(
    s: Surfaces, content: Any, fields: dict[str, Any], ways: tuple[str, ...] = SURFACES
) -> dict[str, Answer]:
    before = {w: s.snapshot(w) for w in ways}
    answers = {w: s.add(w, content, **fields) for w in ways}
    accepted = {w for w, a in answers.items() if a.accepted}
    why = {w: (a.kind, (a.error or "")[:300]) for w, a in answers.items()}
    assert accepted in (set(), set(ways)), (content[:80], fields, why)
    for w, a in answers.items():
        if a.accepted:
            continue
        # refused: a message that says something, no traceback, nothing written
        assert a.error and "Traceback" not in a.error and "Internal" not in a.error, why
        assert s.snapshot(w) == before[w], (w, why)
    if answers["lib"].kind is not None:  # the same kind of error from sync and async
        assert answers["aio"].kind == answers["lib"].kind, why
    if accepted:
        stored = [{k: v for k, v in a.record.items() if k != "id"} for a in answers.values()]  # type: ignore[union-attr]
        for r in stored:  # "now" differs by microseconds between the surfaces' calls
            r["metadata"].pop("last_mentioned_at", None)  # a merge's time
            if "observed_at" not in fields or r["version"] > 1:  # a merge keeps its time
                r.pop("observed_at")
        assert all(r == stored[0] for r in stored), stored
    return answers


EXAMPLES = {"sqlite": 45, "postgresql": 15}


def _examples(url: str) -> int:
    return EXAMPLES["postgresql" if url.startswith("postgresql") else "sqlite"]


def test_a_note_gets_the_same_answer_everywhere(surfaces: Surfaces, url: str) -> None:
    @settings(
        max_examples=_examples(url),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        content=contents,
        tag_list=absent_or(tags),
        importance=absent_or(importances),
        observed_at=absent_or(times),
    )
    def check(content: str, tag_list: Any, importance: Any, observed_at: Any) -> None:
        fields = _fields(tags=tag_list, importance=importance, observed_at=observed_at)
        _same_answer(surfaces, content, fields)

    check()


def test_metadata_gets_the_same_answer_everywhere(surfaces: Surfaces, url: str) -> None:
    """MCP's ``memory_add`` takes no metadata: the library and the HTTP API."""

    @settings(
        max_examples=_examples(url),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(metadata=metadatas, content=st.sampled_from(["a note", "another note"]))
    def check(metadata: dict[str, Any], content: str) -> None:
        _same_answer(surfaces, content, {"metadata": metadata}, ("lib", "aio", "http"))

    check()


def test_a_time_is_stored_as_the_same_instant_everywhere(surfaces: Surfaces) -> None:
    """A naive time is UTC on every surface; an offset is kept as the same instant."""
    for when in (
        datetime(2024, 1, 1, 10, 0),
        datetime(2024, 1, 1, 10, 0, tzinfo=timezone(timedelta(hours=14))),
        datetime(1, 1, 1, 0, 0, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
    ):
        answers = _same_answer(surfaces, f"said at {when.isoformat()}", {"observed_at": when})
        expect = (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone(UTC)
        assert all(
            datetime.fromisoformat(a.record["observed_at"]) == expect  # type: ignore[index]
            for a in answers.values()
        )


def _compare(answers: dict[str, Answer], before: dict[str, Any], s: Surfaces, what: Any) -> None:
    """Accepted everywhere with the same record, or refused everywhere with nothing written."""
    accepted = {w for w, a in answers.items() if a.accepted}
    why = {w: (a.kind, (a.error or "")[:300]) for w, a in answers.items()}
    assert accepted in (set(), set(answers)), (what, why)
    if not accepted:
        for w, a in answers.items():
            assert a.error and "Traceback" not in a.error, why
            assert s.snapshot(w) == before[w], (w, why)
        assert answers["aio"].kind == answers["lib"].kind, why
        return
    stored = [dict(a.record or {}) for a in answers.values()]
    for r in stored:  # what differs between the surfaces' own records: ids and times
        for k in ("id", "observed_at"):
            r.pop(k)
        r["metadata"].pop("last_mentioned_at", None)
    assert all(r == stored[0] for r in stored), stored


def test_a_key_memory_and_an_edit_get_the_same_answer_everywhere(
    surfaces: Surfaces, url: str
) -> None:
    s = surfaces
    notes = {w: s.add(w, "the record each surface edits").record["id"] for w in SURFACES}  # type: ignore[index]

    @settings(max_examples=_examples(url), deadline=None)
    @given(
        text=contents,
        # the HTTP API's and MCP's range (the library's own is ±2^31)
        priority=st.one_of(st.integers(-1000, 1000), st.booleans(), st.sampled_from(["5", 2.0])),
    )
    def check(text: str, priority: Any) -> None:
        before = {w: s.snapshot(w) for w in SURFACES}
        _compare({w: s.pin(w, text, priority) for w in SURFACES}, before, s, (text, priority))
        before = {w: s.snapshot(w) for w in SURFACES}
        _compare({w: s.edit(w, notes[w], text) for w in SURFACES}, before, s, text)

    check()


SESSIONS = st.one_of(
    st.sampled_from(["s1", "", " ", "a\x00b", "\ud800", "x" * 257, "a/b", "50%", "\u202es"]),
    hostile_text,
)
ROLES = st.sampled_from(["user", "assistant", "system", "tool", "USER", "", "admin", "user\x00"])


def test_a_turn_gets_the_same_answer_everywhere(surfaces: Surfaces, url: str) -> None:
    """MCP has no tool for turns: the library and the HTTP API."""
    s, ways = surfaces, ("lib", "aio", "http")

    @settings(max_examples=_examples(url), deadline=None)
    @given(
        session=SESSIONS,
        role=ROLES,
        content=contents,
        observed_at=absent_or(times),
        metadata=absent_or(metadatas),
    )
    def check(session: str, role: str, content: str, observed_at: Any, metadata: Any) -> None:
        fields = _fields(observed_at=observed_at, metadata=metadata)
        before = {w: s.snapshot(w) for w in ways}
        answers = {w: s.say(w, session, role, content, **fields) for w in ways}
        _compare(answers, before, s, (session, role, content[:80], fields))

    check()


def test_an_update_gets_the_same_answer_everywhere(surfaces: Surfaces, url: str) -> None:
    """Every field of ``update`` (MCP's ``memory_update`` edits the text only): the library
    and the HTTP API. Before session 34 an update with nothing to change was a new version
    in the library and a 422 over HTTP."""
    s, ways = surfaces, ("lib", "aio", "http")
    notes = {w: s.add(w, "the record each surface updates").record["id"] for w in ways}  # type: ignore[index]

    @settings(max_examples=_examples(url), deadline=None)
    @given(
        fields=st.fixed_dictionaries(
            {},
            optional={
                "metadata": metadatas,
                "tags": tags,
                "importance": importances,
                "confidence": importances,
                "source": st.sampled_from(["corrected_memory", "bogus", "", None]),
            },
        )
    )
    def check(fields: dict[str, Any]) -> None:
        before = {w: s.snapshot(w) for w in ways}
        _compare({w: s.patch(w, notes[w], **fields) for w in ways}, before, s, fields)

    check()
