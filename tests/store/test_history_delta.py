"""Issue 7 item 7: history stores what changed, and provenance is not copied per version."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.records import Content
from memstrata.scope import Scope
from memstrata.store import RecordWrite
from memstrata.store.sqlite import SQLiteStore
from memstrata.store.sqlite.codec import COLUMNS, encode_record
from memstrata.store.sqlite.history import (
    apply_delta,
    decode_delta,
    encode_delta,
    reverse_delta,
)

from .conftest import T0, Maker

ME = Scope("t1", "u1")
_J = {"ensure_ascii": False, "sort_keys": True, "separators": (",", ":")}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.text(max_size=5),
    st.floats(allow_nan=False, allow_infinity=False),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=12,
)
lists = st.lists(st.text(max_size=6), max_size=6)
dicts = st.dictionaries(st.text(max_size=4), json_values, max_size=5)


def _row(rng: st.DataObject) -> dict[str, Any]:
    row: dict[str, Any] = {
        c: rng.draw(st.one_of(st.none(), st.integers(0, 3), st.text(max_size=4))) for c in COLUMNS
    }
    for c in ("tags", "source_ids", "relations"):
        row[c] = json.dumps(rng.draw(lists), **_J)  # type: ignore[arg-type]
    for c in ("structured", "metadata"):
        row[c] = json.dumps(rng.draw(dicts), **_J)  # type: ignore[arg-type]
    return row


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_delta_turns_the_new_row_back_into_the_old(data: st.DataObject) -> None:
    old, new = _row(data), _row(data)
    new.update({c: old[c] for c in ("id", "tenant", "user")})
    if data.draw(st.booleans()):  # the common case: provenance grows at the end
        grown = json.loads(old["source_ids"]) + data.draw(lists)
        new["source_ids"] = json.dumps(grown, **_J)  # type: ignore[arg-type]
    delta = decode_delta(encode_delta(reverse_delta(old, new)))
    assert apply_delta(new, delta) == old


def test_non_canonical_json_is_kept_whole() -> None:
    row = {c: None for c in COLUMNS}
    old = {**row, "source_ids": '["a", "b"]', "metadata": '{"b":1, "a":2}'}
    new = {**row, "source_ids": '["a","b","c"]', "metadata": '{"a":2,"b":3}'}
    assert apply_delta(new, reverse_delta(old, new)) == old


def test_a_growing_provenance_adds_a_constant_per_version(tmp_path: Path, maker: Maker) -> None:
    """1,000 mentions of one fact: each version's delta stays small (was a full copy)."""
    store = SQLiteStore(str(tmp_path / "h.db"))
    record = maker.record("Alice is vegetarian", source_ids=("m0",))
    store.insert([maker.write(record)])
    sizes = []
    for n in range(1, 1001):
        new = replace(
            record,
            version=record.version + 1,
            source_ids=(*record.source_ids, f"message-{n:06d}"),
            metadata={"mentions": n + 1},
            updated_at=T0 + timedelta(seconds=n),
        )
        old_row = dict(zip(COLUMNS, encode_record(record), strict=True))
        new_row = dict(zip(COLUMNS, encode_record(new), strict=True))
        sizes.append(len(encode_delta(reverse_delta(old_row, new_row))))
        store.replace(ME, RecordWrite(new, None, ()), expected_version=record.version)
        record = new
    assert max(sizes) < 160, max(sizes)  # bytes per version, independent of the 1,000 ids
    assert max(sizes[-100:]) <= max(sizes[:100]) + 8  # (a full copy grew to ~21 kB)
    history = store.history(ME, record.id)
    assert len(history) == 1001 and history[-1] == record
    assert [len(r.source_ids) for r in history] == list(range(1, 1002))
    assert history[500].metadata == {"mentions": 501}
    store.close()


def test_a_cluster_hit_count_change_stores_only_the_count(maker: Maker) -> None:
    centroid = [round(i / 384, 7) for i in range(384)]
    members = [f"m{i}" for i in range(300)]
    base = maker.record("cluster digest")
    old = replace(
        base,
        content=Content("digest", structured={"centroid": centroid, "members": members, "hits": 3}),
    )
    new = replace(
        old,
        version=2,
        content=Content("digest", structured={"centroid": centroid, "members": members, "hits": 4}),
    )
    delta = reverse_delta(
        dict(zip(COLUMNS, encode_record(old), strict=True)),
        dict(zip(COLUMNS, encode_record(new), strict=True)),
    )
    assert set(delta) == {"structured", "version", "access_count", "last_accessed_at"}
    assert len(encode_delta(delta)) < 100
