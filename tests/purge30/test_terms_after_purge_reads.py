"""What a purge re-indexes, and what it reads to find it (``reply_terms.terms_after_purge``).

Until session 30 a purge of a turn that asked something walked the turn's whole session
(every turn written at or after it was re-termed): the cost of purging one question grew
with the session (10,000 turns: 10,003 records read, ~0.5-0.7 s; docs/measurements.md,
session 30). It now reads the purged turns and, from each one's place, the turn after it
and the turn before it: the same number of records in a session of 40 turns or of 400
(the cost test failed before: 43 and 403). The stored terms still equal
:func:`kept_terms` after purges (reply29's property, here on PostgreSQL too and with more
purged turns)."""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Memory, Scope
from memstrata.search.reply_terms import kept_terms, terms_after_purge
from reply29.test_one_definition import _check

BOB = Scope("acme", "bob")
S1 = BOB.with_session("s1")
_READS = ("list", "list_pages", "list_after", "get_many", "histories", "get")


class _Counting:
    """The store, counting the records each of its reads returns."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.rows: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.store, name)
        if name not in _READS:
            return real

        def call(*args: Any, **kw: Any) -> Any:
            got = real(*args, **kw)
            if name == "list_pages":
                return self._pages(got)
            self.rows[name] += len(got) if isinstance(got, (list, dict)) else 1
            return got

        return call

    def _pages(self, pages: Any) -> Any:
        for page in pages:
            self.rows["list_pages"] += len(page)
            yield page


def _session(mem: Memory, scope: Scope, n: int) -> list[str]:
    """``n`` turns of ``scope``: a question and its reply, n/2 times, in calls of 100."""
    ids: list[str] = []
    for start in range(0, n, 100):
        turns = [
            {"role": "user", "content": f"what is the code of locker {i}?"}
            if i % 2 == 0
            else {"role": "assistant", "content": f"It is {1000 + i}."}
            for i in range(start, min(n, start + 100))
        ]
        ids += [r.id for r in mem.add_messages(scope, turns)]
    return ids


def _records_read(url: str, scope: Scope, n: int, purged: list[int]) -> int:
    with Memory(url, embedder="hashing", background=False) as mem:
        ids = _session(mem, scope, n)
        mem.add_messages(BOB, [{"role": "user", "content": "and a turn of no session?"}])
        counting = _Counting(mem.store)
        out = terms_after_purge(counting, BOB, [ids[i] for i in purged])
        assert out  # the replies of the purged questions are re-termed
        return sum(counting.rows.values())


@pytest.mark.parametrize("store", ["memory", "sqlite"])
@pytest.mark.parametrize("scope", [S1, BOB], ids=["session", "no session"])
@pytest.mark.parametrize("purged", [[20], [20, 21, 30]], ids=["one", "three"])
def test_the_records_read_do_not_grow_with_the_session(
    store: str, scope: Scope, purged: list[int], tmp_path: Path
) -> None:
    reads = [
        _records_read(
            "memory://" if store == "memory" else f"sqlite:///{tmp_path / f'{n}.db'}",
            scope,
            n,
            purged,
        )
        for n in (40, 400)
    ]
    assert reads[0] == reads[1], reads
    assert reads[1] <= 4 * len(purged) + 2, reads


def test_what_a_purge_re_terms_is_what_a_version_would_keep(tmp_path: Path) -> None:
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", background=False) as mem:
        ids = _session(mem, S1, 400)
        mem.purge(BOB, [ids[200], ids[250], ids[251]])
        store: Any = mem.store
        stored = {d.record.id: tuple(d.terms) for b in store.dump_records() for d in b}
        for rid in (ids[201], ids[252], ids[199], ids[300]):
            assert stored[rid] == kept_terms(store, store.get(BOB, rid))
        assert stored[ids[201]] == kept_terms(store, store.get(BOB, ids[201]))
        hits = {h.id for h in mem.search(BOB, "code locker 200", mode="lexical", top_k=50)}
        assert ids[201] not in hits  # the reply lost the purged question's words


_MORE = given(
    asks=st.lists(st.booleans(), min_size=2, max_size=10),
    sessions=st.lists(st.sampled_from(["a", "b", None]), min_size=10, max_size=10),
    hours=st.lists(st.integers(0, 5), min_size=10, max_size=10),
    cuts=st.sets(st.integers(1, 9), max_size=5),
    purge=st.sets(st.integers(0, 9), max_size=6),
    dated=st.booleans(),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@_MORE
def test_every_turn_is_indexed_as_its_next_version_would_be(**case: Any) -> None:
    _check("memory://", **case)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@_MORE
def test_on_sqlite_too(**case: Any) -> None:
    with tempfile.TemporaryDirectory() as d:
        _check(f"sqlite:///{Path(d) / 'm.db'}", **case)


def test_on_postgresql_too(pg_server: Any) -> None:
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @_MORE
    def check(**case: Any) -> None:
        schema = pg_server.url()
        try:
            _check(schema, **case)
        finally:
            pg_server.drop(pg_server.schemas[-1])

    check()
