"""Export → import keeps everything, whatever the records hold (hypothesis): odd unicode
(combining marks, bidi controls, astral characters, U+2028), text at the length limit,
metadata of every JSON kind (big integers, -0.0, the smallest subnormal, nested lists
and objects, NUL inside strings and keys), observation times at the ends of the calendar
in odd offsets; each record then edited, deleted, restored or shared. The import's
``history`` of every record equals the source's, and exporting the import gives the same
lines again; importing the file a second time adds nothing. SQLite source, imported into
``memory://`` and into SQLite (a guard: held on the tree audit26 started from)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import FixedClock, Memory, Scope
from memstrata.codec import record_to_dict
from memstrata.filters import Filters

USER = Scope("acme", "u1")
EVERY = Filters(include_deleted=True, include_superseded=True)
T0 = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)

_chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
_odd = st.sampled_from(
    ["e\u0301", "\u202e", "\u2028", "\U0001f600", "\ufeff", "Zoë", "İ", "ß", "\u0300", "\t"]
)
texts = (
    st.lists(st.one_of(st.text(_chars, min_size=1, max_size=20), _odd), min_size=1, max_size=12)
    .map("".join)
    .filter(lambda t: t.strip() != "")
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([-0.0, 5e-324, 1e308]),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.text(st.characters(blacklist_categories=("Cs",)), max_size=6), inner, max_size=3
        ),
    ),
    max_leaves=8,
)
metadata = st.dictionaries(
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8).filter(
        lambda k: k not in ("key",)
    ),
    json_values,
    max_size=4,
)
offsets = st.integers(min_value=-14 * 60, max_value=14 * 60).map(
    lambda m: timezone(timedelta(minutes=m))
)
times = st.one_of(
    st.none(),
    st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
    ),
    st.builds(
        lambda d, tz: d.replace(tzinfo=tz),
        st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2100, 1, 1)),
        offsets,
    ),
)
edits = st.sampled_from(["none", "update", "delete", "restore", "share", "retag"])
records = st.lists(
    st.tuples(
        texts,
        metadata,
        st.lists(st.sampled_from(["a", "café", "ΑΘΗΝΑ", "x y"]), max_size=3, unique=True),
        times,
        edits,
        texts,
    ),
    min_size=1,
    max_size=5,
)


def _build(mem: Memory, spec: list[tuple[Any, ...]]) -> None:
    for text, md, tags, observed, edit, other in spec:
        rec = mem.add(USER, text, metadata=md, tags=tags, observed_at=observed, dedup=False)
        if edit == "update":
            mem.update(USER, rec.id, expected_version=rec.version, content=other, metadata={"n": 1})
        elif edit in ("delete", "restore"):
            mem.delete(USER, rec.id)
            if edit == "restore":
                mem.restore(USER, rec.id)
        elif edit == "share":
            mem.set_access(USER, rec.id, visibility="shared", allowed_users=["bob"])
        elif edit == "retag":
            mem.update(USER, rec.id, expected_version=rec.version, tags=["later"])


def _histories(mem: Memory) -> dict[str, list[dict[str, Any]]]:
    return {
        r.id: [record_to_dict(v) for v in mem.history(USER, r.id)]
        for r in mem.list(USER, filters=EVERY, limit=1000)
    }


def _export(mem: Memory) -> str:
    buf = io.StringIO()
    mem.export_records(USER, buf)
    return buf.getvalue()


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(spec=records, target=st.sampled_from(["memory", "sqlite"]))
def test_export_import_keeps_everything(tmp_path: Path, spec: list[Any], target: str) -> None:
    n = len(list(tmp_path.iterdir()))
    src = Memory(
        f"sqlite:///{tmp_path / f's{n}.db'}",
        embedder="hashing",
        background=False,
        clock=FixedClock(T0),
    )
    url = "memory://" if target == "memory" else f"sqlite:///{tmp_path / f'd{n}.db'}"
    dst = Memory(url, embedder="hashing", background=False, clock=FixedClock(T0))
    try:
        _build(src, spec)
        before = _histories(src)
        text = _export(src)
        report = dst.import_records(io.StringIO(text))
        assert report.imported == len(before)
        assert report.versions == sum(len(v) - 1 for v in before.values())
        assert _histories(dst) == before
        assert _export(dst).split("\n")[1:] == text.split("\n")[1:]
        again = dst.import_records(io.StringIO(text))
        assert (again.imported, again.versions) == (0, 0)
    finally:
        src.close()
        dst.close()
