"""A purge by ids reads what cites what it purges, not every record of the user (purge31).

``rederive.stale_derived`` and ``consolidation.stale_summaries`` walked every record of the
user (``list_pages``) for those citing a purged id; they now ask the store's index of
citations (``Store.citing``, store/citations.py). Two users of one store, of 100 and
1,000 turns, each with three records citing the turn purged: the look-up, and the whole
``Memory.purge``, read as many records for both (before: 312 and 3,102 for the look-up)
and, on SQLite, make as many VM steps for the look-up."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from memstrata import Memory
from memstrata.consolidation import stale_summaries
from memstrata.rederive import stale_derived

from .users import counted, user_of_size

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sqlite_steps import sqlite_store, vm_steps  # noqa: E402


def _lookup(mem: Memory, user: str, n: int) -> tuple[int, int | None, list[str]]:
    scope, victim = user_of_size(mem, user, n)
    ctx = mem._ctx

    def look() -> list[str]:
        derived = stale_derived(ctx, scope, {victim}, everything=True)
        summaries = stale_summaries(ctx, scope, {victim})
        return sorted(r.id for r, _ in derived) + sorted(s.id for s, _ in summaries)

    rows, undo = counted(mem)
    try:
        found = look()
    finally:
        undo()
    steps = vm_steps(sqlite_store(mem), look) if mem.store.url.startswith("sqlite") else None
    return sum(rows.values()), steps, found


def test_the_lookup_reads_what_cites_the_ids(url: str) -> None:
    with Memory(url, embedder="hashing", background=False) as mem:
        small = _lookup(mem, "ann", 100)
        big = _lookup(mem, "bob", 1000)
    assert len(small[2]) == len(big[2]) == 3  # the note, the procedure; the summary
    assert small[0] == big[0] == 6, (small, big)  # the three, twice (get_many)
    # SQLite's VM steps (None elsewhere), give or take a few with the random ids' order in
    # an ``IN`` list (574-578 seen at both sizes; before the index: 5,028 and 50,785)
    if small[1] is not None and big[1] is not None:
        assert abs(small[1] - big[1]) <= 16, (small, big)
    else:
        assert small[1] == big[1], (small, big)


def test_a_purge_reads_as_much_for_a_bigger_user(url: str) -> None:
    with Memory(url, embedder="hashing", background=False) as mem:
        reads = []
        for user, n in (("ann", 100), ("bob", 1000)):
            scope, victim = user_of_size(mem, user, n)
            rows, undo = counted(mem)
            try:
                mem.purge(scope.user_scope, [victim])
            finally:
                undo()
            reads.append(dict(rows))
            left = [r for r in mem.list(scope.user_scope, limit=2000) if r.type.value != "message"]
            assert all(victim not in r.source_ids for r in left)
    assert sum(reads[0].values()) == sum(reads[1].values()), reads


def test_a_purge_makes_as_many_vm_steps_for_a_bigger_user(tmp_path: Path) -> None:
    """The store purge's look-up of the records naming a purged one (``_unlink_superseded``:
    once per ``store.purge``, and ``rederive`` purges each re-derived record with one)
    makes as many VM steps at 1,000 turns as at 100 (238, give or take a step or two
    with the random ids' order in an ``IN`` list): it reads the index of citations and
    links (schema 22, purge31b), not the user's rows (before: 11,396 and 111,263 of the
    whole purge's 19,083 and 119,169). The whole purge's steps differ by what the data
    makes (the victim's place among turns of one ``observed_at``, read by the reply
    terms' neighbour look-up; a note's similarity relations): bounded, not grown."""
    steps = []
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", background=False) as mem:
        for user, n in (("ann", 100), ("bob", 1000)):
            scope, victim = user_of_size(mem, user, n)
            store = sqlite_store(mem)
            conns = [store._conn, *getattr(store, "_readers", [])]
            count = [0, 0]  # outside, inside _unlink_superseded
            inside = [0]
            unlink = store._unlink_superseded

            def tick(count: list[int] = count, inside: list[int] = inside) -> int:
                count[inside[0]] += 1
                return 0

            def counted_unlink(*args: Any, inside: list[int] = inside, unlink: Any = unlink) -> Any:
                inside[0] = 1
                try:
                    return unlink(*args)
                finally:
                    inside[0] = 0

            store._unlink_superseded = counted_unlink  # type: ignore[method-assign,assignment]
            for c in conns:
                c.set_progress_handler(tick, 1)
            try:
                mem.purge(scope.user_scope, [victim])
            finally:
                for c in conns:
                    c.set_progress_handler(None, 1)
                del store._unlink_superseded
            steps.append(count)
    assert abs(steps[0][1] - steps[1][1]) <= 16, steps  # a step or so: the ids' order
    assert sum(steps[1]) < 1.25 * sum(steps[0]), steps


def test_every_store_finds_the_three(mem: Memory) -> None:
    """The look-up on every store the suite runs, Redis in front of PostgreSQL included
    (its store passes ``citing`` to the durable one, which holds the derived records)."""
    scope, victim = user_of_size(mem, "ann", 40)
    ctx = mem._ctx
    derived = stale_derived(ctx, scope, {victim}, everything=True)
    assert sorted(r.type.value for r, _ in derived) == ["note", "procedure"]
    assert [s.type.value for s, _ in stale_summaries(ctx, scope, {victim})] == ["summary"]
    mem.purge(scope.user_scope, [victim])
    assert stale_derived(ctx, scope, {victim}, everything=True) == []
    assert stale_summaries(ctx, scope, {victim}) == []
