"""SQLite's and PostgreSQL's purge find the embedding-cache keys of a record's every
version (its text hashes) by rewinding only the text and hash columns
(``history.rewind_hash``), not by decoding every version in full (a cluster's versions each
repeat its member list: a purge of a turn in a cluster of 1,253 versions spent seconds
there, docs/measurements.md, session 31). The hashes are those of the record's history, on
random edit histories."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Memory, Scope
from memstrata.records import Content
from memstrata.store.types import RecordWrite
from memstrata.text import content_hash

from .users import counted

edits = st.lists(
    st.tuples(
        st.sampled_from(["text", "members", "both", "same"]),
        st.text(alphabet="ab c", min_size=0, max_size=6),
    ),
    max_size=8,
)


@pytest.fixture(params=["sqlite", "postgresql"])
def sql_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'm.db'}"
    return str(request.getfixturevalue("pg_url"))


def test_the_hashes_are_the_historys(sql_url: str) -> None:
    with Memory(sql_url, embedder="hashing", background=False) as mem:
        store = mem.store
        n = [0]

        @settings(
            max_examples=60 if mem.store.url.startswith("sqlite") else 25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        )
        @given(edits)
        def check(steps: list[tuple[str, str]]) -> None:
            n[0] += 1
            owner = Scope("acme", f"u{n[0]}")
            r = mem.add(owner, f"cluster {n[0]}", type="cluster", dedup=False)
            for k, (what, word) in enumerate(steps):
                text = r.text + word if what in ("text", "both") else r.text
                members = [f"m{i}" for i in range(k + (what in ("members", "both")))]
                new = replace(
                    r,
                    version=r.version + 1,
                    content=Content(text, None, {"members": members}),
                    content_hash=content_hash(text),
                )
                store.replace(owner, RecordWrite(new, None, ()), expected_version=r.version)
                r = new
            want = {v.content_hash for v in store.history(owner, r.id)}
            assert store._content_hashes(owner, [r.id]) == want  # type: ignore[attr-defined]
            assert store._content_hashes(owner, [r.id, "nope"]) == want  # type: ignore[attr-defined]

        check()


def test_a_purge_reads_no_version_of_what_it_purges(sql_url: str) -> None:
    """The store's purge reads no record (``histories``) to find the keys."""
    with Memory(sql_url, embedder="hashing", background=False) as mem:
        owner = Scope("acme", "bob")
        r = mem.add(owner, "a cluster", type="cluster", dedup=False)
        for k in range(30):
            new = replace(
                r,
                version=r.version + 1,
                content=Content(r.text, None, {"members": [str(i) for i in range(k)]}),
            )
            mem.store.replace(owner, RecordWrite(new, None, ()), expected_version=r.version)
            r = new
        rows, undo = counted(mem)
        try:
            mem.store.purge(owner, [r.id])
        finally:
            undo()
        assert sum(rows.values()) == 0, rows
