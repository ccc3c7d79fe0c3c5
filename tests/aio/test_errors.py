"""Bad input through AsyncMemory raises what Memory raises (same class, same message), and
writes nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memstrata import (
    AsyncMemory,
    BudgetError,
    ConflictError,
    Memory,
    NotFoundError,
    Scope,
    ValidationError,
)

ALICE = Scope("acme", "alice", session="s1")
STALE = "stale-version"  # replaced by the id of a record at version 2

BAD: list[tuple[str, tuple[Any, ...], dict[str, Any], type[Exception]]] = [
    ("add", (ALICE, ""), {}, ValidationError),
    ("add", (ALICE, "x" * 1_000_001), {}, ValidationError),
    ("add", (ALICE, "fine"), {"type": "poem"}, ValidationError),
    ("add", (ALICE, "fine"), {"importance": 7}, ValidationError),
    ("add", ("acme/alice", "fine"), {}, ValidationError),
    ("add_message", (ALICE, "robot", "hello"), {}, ValidationError),
    ("add_messages", (ALICE, "not a list"), {}, ValidationError),
    ("search", (ALICE, "q", 0), {}, ValidationError),
    ("search", (ALICE, "q"), {"filters": {"colour": "red"}}, ValidationError),
    ("build_context", (ALICE, "q", 0), {}, BudgetError),
    ("build_context", (ALICE, "q", 10**12), {}, ValidationError),
    ("list", (ALICE,), {"limit": 0}, ValidationError),
    ("get", (ALICE, "no-such-id"), {}, NotFoundError),
    ("update", (ALICE, STALE), {"expected_version": 1, "content": "new"}, ConflictError),
    ("key.set", (ALICE, "   "), {}, ValidationError),
    ("tasks.update_step", (ALICE, 0, "done"), {}, NotFoundError),  # no task started
    ("purge", (ALICE, ["../etc"]), {}, NotFoundError),
]


def _resolve(target: Any, name: str) -> Any:
    for part in name.split("."):
        target = getattr(target, part)
    return target


def _args(args: tuple[Any, ...], stale_id: str) -> tuple[Any, ...]:
    return tuple(stale_id if a == STALE else a for a in args)


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "error"), BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)]
)
def test_bad_input_raises_the_same_error_and_writes_nothing(
    tmp_path: Path,
    name: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    error: type[Exception],
    deterministic_ids: Callable[[], None],
) -> None:
    deterministic_ids()  # messages name ids: both runs get the same ones
    sync = Memory(f"sqlite:///{tmp_path / 's.db'}", embedder="hashing", background=False)
    try:
        rec = sync.add(ALICE, "Alice likes tea")
        rec = sync.update(ALICE, rec.id, expected_version=1, importance=0.8)
        with pytest.raises(error) as expected:
            _resolve(sync, name)(*_args(args, rec.id), **kwargs)
    finally:
        sync.close()

    deterministic_ids()

    async def main() -> tuple[BaseException, dict[str, Any], dict[str, Any]]:
        async with AsyncMemory(
            f"sqlite:///{tmp_path / 'a.db'}", embedder="hashing", background=False
        ) as mem:
            rec = await mem.add(ALICE, "Alice likes tea")
            rec = await mem.update(ALICE, rec.id, expected_version=1, importance=0.8)
            before = await mem.stats(ALICE)
            with pytest.raises(error) as got:
                await _resolve(mem, name)(*_args(args, rec.id), **kwargs)
            return got.value, before, await mem.stats(ALICE)

    got, before, after = asyncio.run(main())
    assert type(got) is type(expected.value)  # not wrapped
    assert str(got) == str(expected.value)
    assert after == before
    assert isinstance(got, error)
