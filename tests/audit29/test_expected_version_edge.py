"""``update`` / ``key.edit`` with an ``expected_version`` a record cannot be at. Before
session 29 the new record (``expected_version + 1``) was built before the version was
compared, so ``expected_version=2**63`` was refused as "got 9,223,372,036,854,775,809" (the
next version, not the one given) and ``2**63 - 1`` on a record at version 1 as "a record at
the last version takes no further change" (it was not at the last version: a stale read)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import AsyncMemory, ConflictError, Memory, Scope, ValidationError

MAX = 2**63 - 1
ALICE = Scope("acme", "alice")


@pytest.mark.parametrize("given", [2**63, 2**64, 2**70])
def test_an_expected_version_past_int64_is_named_as_given(mem: Memory, given: int) -> None:
    rec = mem.add(ALICE, "I keep bees")
    with pytest.raises(ValidationError) as err:
        mem.update(ALICE, rec.id, content="I keep wasps", expected_version=given)
    message = str(err.value)
    assert "expected_version" in message
    assert f"{given:,}" in message and f"{given + 1:,}" not in message
    assert mem.get(ALICE, rec.id).version == 1


def test_the_last_version_on_a_record_not_at_it_is_a_stale_read(mem: Memory) -> None:
    rec = mem.add(ALICE, "I keep bees")
    with pytest.raises(ConflictError, match=r"is at version 1, but this update was based on"):
        mem.update(ALICE, rec.id, content="I keep wasps", expected_version=MAX)
    key = mem.key.set(ALICE, "be kind", priority=1)
    with pytest.raises(ConflictError, match=r"is at version 1, but this update was based on"):
        mem.key.edit(ALICE, key.id, expected_version=MAX, text="be brief")
    assert mem.get(ALICE, rec.id).version == 1 and mem.key.get(ALICE, key.id).version == 1


def test_key_edit_names_the_version_given(mem: Memory) -> None:
    key = mem.key.set(ALICE, "be kind", priority=1)
    with pytest.raises(ValidationError, match="9,223,372,036,854,775,808"):
        mem.key.edit(ALICE, key.id, expected_version=2**63, text="be brief")


def test_async_update_names_the_version_given() -> None:
    async def run() -> None:
        async with AsyncMemory("memory://", embedder="hashing", background=False) as amem:
            rec = await amem.add(ALICE, "I keep bees")
            with pytest.raises(ValidationError, match="9,223,372,036,854,775,808"):
                await amem.update(ALICE, rec.id, content="x", expected_version=2**63)
            with pytest.raises(ConflictError):
                await amem.update(ALICE, rec.id, content="x", expected_version=MAX)

    asyncio.run(run())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    given_version=st.one_of(
        st.integers(min_value=-(2**70), max_value=2**70),
        st.sampled_from([0, 1, 2, MAX - 1, MAX, MAX + 1, 2**64]),
    ),
    edits=st.integers(min_value=0, max_value=3),
)
def test_an_update_is_written_exactly_when_the_version_is_the_records(
    given_version: int, edits: int
) -> None:
    with Memory("memory://", embedder="hashing", background=False) as mem:
        rec = mem.add(ALICE, "I keep bees")
        for _ in range(edits):
            rec = mem.update(
                ALICE, rec.id, content=f"v{rec.version + 1}", expected_version=rec.version
            )
        if given_version == rec.version:
            assert mem.update(
                ALICE, rec.id, content="x", expected_version=given_version
            ).version == (rec.version + 1)
            return
        error = ConflictError if 1 <= given_version <= MAX else ValidationError
        with pytest.raises(error) as err:
            mem.update(ALICE, rec.id, content="x", expected_version=given_version)
        if given_version.bit_length() < 128:
            assert f"{given_version:,}" in str(err.value)
        assert mem.get(ALICE, rec.id).version == rec.version
