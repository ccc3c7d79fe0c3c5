"""``mem.add`` admits a record only when it writes one: a dedup merge passes a full quota.

A duplicate of a stored text merges into it (a new version, ``mentions + 1``), so the
records quota has nothing to refuse; before, ``add`` admitted one record before it knew and
a user at their limit could not mention a stored memory again. Writers adding the same text
at once with one record left end as they would one after another: one record, every mention
counted, nobody refused. A new text at a full quota is still refused with nothing written.
"""

from __future__ import annotations

from typing import Any

import pytest

from memstrata import Filters
from memstrata.errors import QuotaExceededError
from memstrata.quotas import Quota, Quotas
from memstrata.records import RecordType
from test_concurrent_services import ALICE, KINDS, SHARING, WRITERS, Gate, Mem, race
from test_quota_services import run

FULL = Quotas(per_user=Quota(max_records=2))
TEXT = "The spare key is under the blue flowerpot"


async def _notes(m: Mem) -> list[Any]:
    return list(
        await m("store.list", ALICE.user_scope, Filters(types=frozenset({RecordType.NOTE})))
    )


async def _fill(m: Mem) -> None:
    await m("add", ALICE, "a note that fills half of the quota", dedup=False)
    await m("add", ALICE, TEXT)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("store", ["memory://", "sqlite", "postgresql"])
def test_a_duplicate_merges_at_a_full_quota(kind: str, store: str, request: Any) -> None:
    target = (
        store
        if store == "memory://"
        else request.getfixturevalue("pg_url")
        if store == "postgresql"
        else f"sqlite:///{request.getfixturevalue('tmp_path') / 'm.db'}"
    )

    async def body(m: Mem) -> None:
        await _fill(m)
        merged = await m("add", ALICE, TEXT)  # before: QuotaExceededError
        assert merged.text == TEXT and merged.metadata["mentions"] == 2
        spaced = await m("add", ALICE, "The spare key is   under the blue flowerpot")
        assert spaced.id == merged.id and spaced.metadata["mentions"] == 3
        assert await m.count(ALICE) == 2  # new versions, no new record
        with pytest.raises(QuotaExceededError):
            await m("add", ALICE, "The car is parked on level three")
        assert await m.count(ALICE) == 2

    run(kind, body, target, quotas=FULL)


@pytest.mark.parametrize("sharing", SHARING)
@pytest.mark.parametrize("kind", KINDS)
def test_writers_adding_one_text_with_one_record_left_are_never_refused(
    kind: str, url: str, sharing: str
) -> None:
    """Every writer looks for the text before any stores it: one stores it, the others
    were refused its record and merge into it instead."""
    text = "Kemi's birthday is on the 14th of May"
    writers = [lambda m: m("add", ALICE, text) for _ in range(WRITERS)]

    async def setup(m: Mem) -> None:
        await m("add", ALICE, "a note that leaves one record of the quota", dedup=False)

    async def check(m: Mem) -> None:
        found = [r for r in await _notes(m) if r.text == text]
        assert len(found) == 1
        assert found[0].metadata["mentions"] == WRITERS
        assert await m.count(ALICE) == 2

    first_lookup = Gate("find_by_hash", lambda args: True)
    results = race(kind, url, sharing, first_lookup, writers, setup, check, quotas=FULL)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, errors
