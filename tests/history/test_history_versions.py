"""Every earlier version reconstructs exactly what was written (issue 7 item 7).

Random sequences of updates (provenance that grows, slides, shrinks or is shuffled; texts
edited word by word; centroids that move, with odd floats; metadata keys added, changed and
dropped; tags; summaries set and cleared), first as rows through the delta codec, then
through ``replace``/``history`` on every kind of store."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import servers
from memstrata.records import Content, MemoryRecord, RecordType
from memstrata.scope import Scope
from memstrata.store import RecordWrite, Store
from memstrata.store.sqlite.codec import COLUMNS, encode_record
from memstrata.store.sqlite.history import apply_delta, decode_delta, encode_delta, reverse_delta
from store.conftest import make_store

from .kit import T0, base

ME = Scope("t1", "u1")

words = st.sampled_from(
    [
        "the",
        "cat",
        "sat",
        "on",
        "mat",
        "猫",
        "坐",
        "  ",
        "\n",
        "50",
        "mg",
        "5",
        "Lisbon",
        "\t",
        "é",
        "🙂",
        "",
    ]
)
ids = st.sampled_from([f"m{i}" for i in range(40)])
floats = st.one_of(
    st.floats(-1, 1, allow_nan=False).map(lambda x: round(x, 7)),
    st.sampled_from([0.0, -0.0, 1e-05, 2.5e-08, 1e22, 0.1 + 0.2, 1.0, -1.0]),
    st.floats(allow_nan=False, allow_infinity=False),
)
# no NUL (PostgreSQL text refuses it) and no lone surrogate (not UTF-8): validation
# refuses both before a store sees them
texts = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=6
)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(10**20), 10**20), floats, texts)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=4)),
    max_leaves=10,
)


@st.composite
def _edit(draw: st.DrawFn, record: MemoryRecord) -> MemoryRecord:
    """One update of ``record``: a few of its fields changed the way layers change them."""
    data: dict[str, Any] = dict(record.content.structured)
    raw, summary = record.content.raw, record.content.summary
    sources = list(record.source_ids)
    meta = dict(record.metadata)
    tags = record.tags
    for kind in draw(
        st.lists(
            st.sampled_from(
                [
                    "grow",
                    "slide",
                    "shrink",
                    "shuffle",
                    "text",
                    "centroid",
                    "meta",
                    "tags",
                    "summary",
                    "structured",
                ]
            ),
            min_size=1,
            max_size=4,
        )
    ):
        if kind == "grow":
            sources += draw(st.lists(ids, max_size=6))
        elif kind == "slide":
            sources = (sources + draw(st.lists(ids, min_size=1, max_size=6)))[-12:]
        elif kind == "shrink" and sources:
            del sources[draw(st.integers(0, len(sources) - 1))]
        elif kind == "shuffle":
            sources = draw(st.permutations(sources))
        elif kind == "text":
            tokens = raw.split(" ")
            at = draw(st.integers(0, len(tokens)))
            tokens[at : at + draw(st.integers(0, 3))] = draw(st.lists(words, max_size=4))
            raw = " ".join(tokens) or "x"
        elif kind == "centroid":
            old = data.get("centroid") or [0.0] * 8
            data["centroid"] = [
                round(x + draw(st.floats(-0.01, 0.01)), 7) if draw(st.booleans()) else draw(floats)
                for x in old
            ]
        elif kind == "meta":
            key = draw(st.sampled_from(["a", "b", "retired", "speaker", "ключ"]))
            if key in meta and draw(st.booleans()):
                del meta[key]
            else:
                meta[key] = draw(json_values)
        elif kind == "tags":
            tags = tuple(draw(st.lists(st.sampled_from(["home", "work", "猫"]), max_size=3)))
        elif kind == "summary":
            summary = None if summary is not None else " ".join(draw(st.lists(words)))
        elif kind == "structured":
            data[draw(st.sampled_from(["members", "count", "turns", "conflicts"]))] = draw(
                json_values
            )
    data["members"] = sources[-12:]
    version = record.version + 1
    return replace(
        record,
        version=version,
        updated_at=T0 + timedelta(minutes=version),
        content=Content(raw, summary, data),
        source_ids=tuple(sources),
        metadata=meta,
        tags=tags,
        content_hash=hashlib.sha256(raw.encode()).hexdigest(),
    )


@st.composite
def version_sequences(draw: st.DrawFn, max_versions: int = 12) -> list[MemoryRecord]:
    first = replace(
        base(RecordType.CLUSTER, "the cat sat on the mat"), id=uuid.uuid4().hex, source_ids=("m0",)
    )
    versions = [first]
    for _ in range(draw(st.integers(1, max_versions))):
        versions.append(draw(_edit(versions[-1])))
    return versions


def _row(record: MemoryRecord) -> list[tuple[str, str, Any]]:
    """A row with each value's type: 1 and 1.0, -0.0 and 0.0 must stay apart."""
    return [
        (c, type(v).__name__, repr(v)) for c, v in zip(COLUMNS, encode_record(record), strict=True)
    ]


@settings(max_examples=250, deadline=None)
@given(version_sequences())
def test_every_version_rebuilds_from_the_newest_row(versions: list[MemoryRecord]) -> None:
    rows = [dict(zip(COLUMNS, encode_record(v), strict=True)) for v in versions]
    blobs = [
        encode_delta(reverse_delta(old, new)) for old, new in zip(rows[:-1], rows[1:], strict=True)
    ]
    row = rows[-1]
    for blob, want in zip(reversed(blobs), reversed(versions[:-1]), strict=True):
        row = apply_delta(row, decode_delta(blob))
        assert [(c, type(v).__name__, repr(v)) for c, v in row.items()] == _row(want)


@pytest.fixture(params=["sqlite-file", "memory", "postgresql"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    store = make_store(request.param, tmp_path)
    yield store
    store.close()
    if request.param == "postgresql":
        servers.postgres().drop(store.options.schema)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(versions=version_sequences(max_versions=8))
def test_history_returns_every_version_as_written(
    any_store: Store, versions: list[MemoryRecord]
) -> None:
    any_store.insert([RecordWrite(versions[0], None, ())])
    for old, new in zip(versions[:-1], versions[1:], strict=True):
        any_store.replace(ME, RecordWrite(new, None, ()), expected_version=old.version)
    history = any_store.history(ME, versions[-1].id)
    assert history == versions
    assert [_row(r) for r in history] == [_row(v) for v in versions]
