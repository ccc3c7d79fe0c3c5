"""A caller's ``version`` (caller28: numbered among the versions the caller may read) was
found by reading the whole history of every edited record of the page (``histories``:
every version decoded into a record), so a caller's ``list(limit=100)`` of edited records
took 15–23 ms on SQLite where it took 3.5. The stores now count the readable versions from
the three columns that decide it (``shown_versions``, :mod:`memstrata.store.version_numbers`),
and no past version is made into a record. Counted here with a store that tallies the records
its methods return (the real store underneath), not timed: fails before the fix (the page's
every past version was returned). The numbers themselves are checked against the caller's
history through every way of sharing (these pass before too: kept as checks)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata import AsyncMemory, Memory, Scope
from memstrata.errors import NotFoundError
from memstrata.records import MemoryRecord
from memstrata.store.url import open_store

BOB = Scope("acme", "bob")
CAROL = BOB.as_caller("carol")
EDITOR = BOB.as_caller("erin", roles={"editor"})


class Tally:
    """A real store that counts the records its methods return (a list, a dict of lists)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.records = 0

    def _count(self, value: Any) -> None:
        if isinstance(value, MemoryRecord):
            self.records += 1
        elif isinstance(value, dict):
            for v in value.values():
                self._count(v)
        elif isinstance(value, list | tuple):
            for v in value:
                self._count(v)

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.store, name)
        if not callable(found) or name.startswith("_"):
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            out = found(*args, **kwargs)
            self._count(out)
            return out

        return counted


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def tallied(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Memory, Tally]]:
    if request.param == "memory":
        url = "memory://"
    elif request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 't.db'}"
    else:
        url = str(request.getfixturevalue("pg_url"))
    tally = Tally(open_store(url))
    m = Memory(store=tally, embedder="hashing", background=False)  # type: ignore[arg-type]
    yield m, tally
    m.close()


def test_a_callers_page_reads_no_past_version(tallied: tuple[Memory, Tally]) -> None:
    mem, tally = tallied
    ids = []
    for i in range(12):
        rec = mem.add(BOB, f"harbour note {i}")
        rec = mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol"])
        for n in range(5):
            rec = mem.update(
                BOB, rec.id, content=f"harbour note {i} {n}", expected_version=rec.version
            )
        ids.append(rec.id)
    tally.records = 0
    page = mem.list(CAROL, limit=100)
    assert sorted(r.id for r in page) == sorted(ids)
    assert {r.version for r in page} == {6}  # version 1 was private: 2..7 numbered 1..6
    # the page itself (12), nothing of the 72 past versions the histories held
    assert tally.records == 12
    tally.records = 0
    assert mem.get(CAROL, ids[0]).version == 6
    assert tally.records == 1


def _history_numbers(mem: Memory, who: Scope, rid: str) -> list[int]:
    try:
        return [v.version for v in mem.history(who, rid)]
    except NotFoundError:  # not shared with ``who`` now
        return []


def test_every_way_of_sharing_is_numbered_as_the_history(mem: Memory) -> None:
    """A version counts when its access admitted the caller: by name, by role, public; not
    when private, shared with others, or deleted (restored: counted again)."""
    rec = mem.add(BOB, "ferry note one")  # v1 private
    rid = rec.id
    steps = [
        lambda r: mem.set_access(BOB, rid, visibility="shared", allowed_users=["carol"]),
        lambda r: mem.update(BOB, rid, content="ferry note two", expected_version=r.version),
        lambda r: mem.set_access(
            BOB, rid, visibility="shared", allowed_users=[], allowed_roles=["editor"]
        ),
        lambda r: mem.update(BOB, rid, content="ferry note three", expected_version=r.version),
        lambda r: mem.set_access(
            BOB, rid, visibility="private", allowed_users=[], allowed_roles=[]
        ),
        lambda r: mem.update(BOB, rid, content="ferry note four", expected_version=r.version),
        lambda r: mem.set_access(BOB, rid, visibility="public"),
        lambda r: mem.update(BOB, rid, content="ferry note five", expected_version=r.version),
    ]
    seen: list[tuple[int | None, int | None]] = []
    for step in steps:
        rec = step(rec)
        for who in (CAROL, EDITOR):
            history = _history_numbers(mem, who, rid)
            assert history == list(range(1, len(history) + 1))
            shown = [r.version for r in mem.list(who) if r.id == rid]
            assert shown == ([history[-1]] if history else [])
        seen.append(
            tuple(  # type: ignore[arg-type]
                next((r.version for r in mem.list(who) if r.id == rid), None)
                for who in (CAROL, EDITOR)
            )
        )
    # carol: v2, v3 by name; v8, v9 public. erin (editor): v4, v5 by role; v8, v9 public
    assert seen == [
        (1, None),
        (2, None),
        (None, 1),
        (None, 2),
        (None, None),
        (None, None),
        (3, 3),
        (4, 4),
    ]
    mem.delete(BOB, rid)
    assert [r.id for r in mem.list(CAROL)] == []
    mem.restore(BOB, rid)
    assert mem.get(CAROL, rid).version == len(_history_numbers(mem, CAROL, rid))


def test_async_a_callers_page_is_numbered(url: str) -> None:
    async def run() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as mem:
            rec = await mem.add(BOB, "harbour note")
            rec = await mem.update(BOB, rec.id, content="harbour, private", expected_version=1)
            rec = await mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol"])
            await mem.update(BOB, rec.id, content="harbour, shared", expected_version=rec.version)
            assert [r.version for r in await mem.list(CAROL)] == [2]
            assert [v.version for v in await mem.history(CAROL, rec.id)] == [1, 2]

    asyncio.run(run())
