"""A restore committed between a first writer's read and its insert (``layers/races.py``):
both are held at their transaction until both have read. When the first writer commits
first, the key ends with two live facts (the restored one and the new first one); the next
write of the key ends the other: one live fact, every value in the history. Before, the
second stayed live for good. Since session 30 (ids30) a first writer's transaction reads
the key again first (``races.FirstVersion.check``): when the restore committed first, it
finds the restored fact and decides again on it (a conflict: 0.8 is not surer than 0.8).
Since session 30 (restore30) the restore takes the key's turn too: when the upsert
committed first, the restore finds Oslo and ends it; no order leaves two live facts
(tests/restore30)."""

from __future__ import annotations

from typing import Any

import pytest

from memstrata.records import RecordType
from test_concurrent_services import (
    ALICE,
    SHARING,
    Gate,
    Mem,
    Writer,
    _current_facts,
    _fact,
    _no_errors,
    _values_in_history,
    race,
)


@pytest.mark.parametrize("sharing", SHARING)
def test_a_restore_racing_a_first_fact_is_ended_by_the_next_write(url: str, sharing: str) -> None:
    made: dict[str, str] = {}

    async def setup(m: Mem) -> None:
        paris = (await m("facts.upsert", ALICE, _fact("Paris", 0.8))).record
        await m("delete", ALICE.user_scope, paris.id)
        made["paris"] = paris.id

    writers: list[Writer] = [
        lambda m: m("facts.upsert", ALICE, _fact("Oslo", 0.8)),
        lambda m: m("restore", ALICE.user_scope, made["paris"]),
    ]

    async def check(m: Mem) -> None:
        live = await _current_facts(m)
        values = sorted(str(r.content.structured["value"]) for r in live)
        # the race was forced: each read the other's write not there yet
        # Since session 30 (restore30) the restore takes the key's turn too: either order
        # leaves Paris alone, the restored value
        assert values == ["Paris"]
        said = [c["value"] for c in live[0].content.structured["conflicts"]]
        if not said:  # the upsert committed first: the restore found Oslo and ended it
            assert await _values_in_history(m) == {"Paris", "Oslo"}
        else:  # the restore committed first: the upsert saw it (0.8 is not surer)
            assert said == ["Oslo"]
        current = await m("facts.get", ALICE, "location")
        assert current.id == max(live, key=lambda r: (r.confidence, r.updated_at, r.id)).id
        await m("facts.upsert", ALICE, _fact("Rome", 0.95))
        live = await _current_facts(m)
        assert [r.content.structured["value"] for r in live] == ["Rome"]
        assert await _values_in_history(m) == {"Paris", "Oslo", "Rome"}

    # held at the store's transaction: every read of both is done, neither has written
    gate = Gate("transaction", lambda args: True)
    results: list[Any] = race("sync", url, sharing, gate, writers, setup, check)
    _no_errors(results)
    assert results[1].type is RecordType.FACT
