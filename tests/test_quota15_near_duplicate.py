"""``mem.add`` of a near duplicate merges at a full records quota; a new text is refused.

A near duplicate (the same statement in other case, punctuation or number spelling) is
found by its embedding, so it cannot be told from a new text before it is embedded. The
records quota and the embeddings quota are checked apart under one lease: at a full
records quota the add is still embedded (counted in ``embeddings_per_day``, also when it
ends refused: it was computed), a near duplicate merges (a new version, no record) and a
new text is refused with nothing written. Before, every non-exact ``add`` at a full quota
was refused, near duplicates included. ``Memory`` and ``AsyncMemory`` alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import AsyncMemory, Filters, FixedClock, Memory
from memstrata.embedder.base import Matrix
from memstrata.embedder.hashing import HashingEmbedder
from memstrata.errors import QuotaExceededError
from memstrata.quota_types import day_key
from memstrata.quotas import Quota, Quotas
from memstrata.records import RecordType
from test_concurrent_services import ALICE, KINDS, SHARING, Gate, Mem, race
from test_quota_services import BOB, run

# Each statement in three forms with one statement key; with the hashing embedder every
# pair of forms is at cosine >= 0.80 (its merge threshold is 0.37), so any form merges
# into any other, and no two statements ever merge (their keys differ).
STATEMENTS = [
    (
        "The spare key is under the blue flowerpot",
        "the spare key is under the blue flowerpot!",
        "THE SPARE KEY IS UNDER THE BLUE FLOWERPOT.",
    ),
    ("Take 7 pills on Monday", "Take seven pills on Monday.", "take 7 pills on monday!"),
    (
        "Kemi's birthday is on the 14th of May",
        "kemi's birthday is on the 14th of may.",
        "KEMI'S BIRTHDAY IS ON THE 14TH OF MAY",
    ),
    (
        "The gym closes at 9 on Sundays",
        "The gym closes at nine on Sundays.",
        "the gym closes at 9 on sundays!",
    ),
    ("Ana does not eat shellfish", "Ana doesn't eat shellfish.", "ana does not eat shellfish!"),
    (
        "The car is parked on level 3",
        "The car is parked on level three.",
        "the car is parked on level 3!",
    ),
    (
        "My flight to Oslo leaves at 6 am",
        "my flight to Oslo leaves at 6 am.",
        "My flight to Oslo leaves at six am!",
    ),
    (
        "The wifi password is taped to the fridge",
        "the wifi password is taped to the fridge.",
        "THE WIFI PASSWORD IS TAPED TO THE FRIDGE!",
    ),
]
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)  # the clock of run() and race()


async def _texts(m: Mem) -> list[str]:
    every = Filters(include_deleted=True, include_superseded=True)
    return [r.text for r in await m("store.list", ALICE.user_scope, every)]


async def _embeddings_today(m: Mem) -> int:
    key = day_key("emb", ALICE.tenant, ALICE.user, NOW)
    return int((await m("store.counter_values", [key]))[key])


def _target(store: str, request: pytest.FixtureRequest) -> str:
    if store == "postgresql":
        return str(request.getfixturevalue("pg_url"))
    if store == "sqlite":
        return f"sqlite:///{request.getfixturevalue('tmp_path') / 'm.db'}"
    return store


@pytest.mark.parametrize("quotas", ["per_user", "per_tenant"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("store", ["memory://", "sqlite", "postgresql"])
def test_a_near_duplicate_merges_at_a_full_records_quota(
    kind: str, store: str, quotas: str, request: pytest.FixtureRequest
) -> None:
    limit = Quotas(**{quotas: Quota(max_records=3)})

    async def body(m: Mem) -> None:
        stored = [await m("add", ALICE, forms[0]) for forms in STATEMENTS[:3]]
        assert await m.count(ALICE) == 3
        for first, forms in zip(stored, STATEMENTS[:3], strict=True):
            for n, variant in enumerate(forms[1:], start=2):
                merged = await m("add", ALICE, variant)  # before: QuotaExceededError
                assert merged.id == first.id and merged.metadata["mentions"] == n
                assert variant in merged.metadata["merged_texts"]
        assert await m.count(ALICE) == 3  # new versions, no new record
        before = await _texts(m)
        for forms in STATEMENTS[3:5]:
            with pytest.raises(QuotaExceededError, match=r"max_records \(per (user|tenant)\)"):
                await m("add", ALICE, forms[0])
        assert await _texts(m) == before  # refused: nothing written, no version either
        if quotas == "per_tenant":  # the tenant's other users are full too
            with pytest.raises(QuotaExceededError, match="per tenant"):
                await m("add", BOB, STATEMENTS[5][0])

    run(kind, body, _target(store, request), quotas=limit)


@pytest.mark.parametrize("kind", KINDS)
def test_the_embedding_that_decides_is_counted_and_bounded(kind: str) -> None:
    """At a full records quota every add that is not an exact duplicate is embedded to
    look for a near duplicate, counted in ``embeddings_per_day`` whether it merges or is
    refused, so the embeddings quota bounds the compute a full quota can still use; an
    exact duplicate needs no embedding. With both full, the refusal names both."""

    async def body(m: Mem) -> None:
        await m("add", ALICE, STATEMENTS[0][0])
        await m("add", ALICE, STATEMENTS[1][0])
        assert await _embeddings_today(m) == 2
        await m("add", ALICE, STATEMENTS[0][1])  # near duplicate: merged, one embedding
        assert await _embeddings_today(m) == 3
        with pytest.raises(QuotaExceededError, match=r"max_records"):
            await m("add", ALICE, STATEMENTS[2][0])  # new: embedded to decide, refused
        assert await _embeddings_today(m) == 4
        exact = await m("add", ALICE, f"  {STATEMENTS[1][0]} ")  # exact: no embedding
        assert exact.metadata["mentions"] == 2 and await _embeddings_today(m) == 4
        await m("add", ALICE, STATEMENTS[1][1])
        assert await _embeddings_today(m) == 5  # the embeddings quota is used up
        with pytest.raises(QuotaExceededError) as refused:
            await m("add", ALICE, STATEMENTS[0][2])  # may be a near duplicate: cannot tell
        message = str(refused.value)
        assert "max_records (per user)" in message and "embeddings_per_day" in message
        assert refused.value.retry_after is not None  # the embeddings reset at midnight
        with pytest.raises(QuotaExceededError, match="max_records"):
            await m("add", ALICE, STATEMENTS[3][0])
        assert await _embeddings_today(m) == 5  # refused before embedding: nothing counted
        assert await m.count(ALICE) == 2
        merged = await m("add", ALICE, STATEMENTS[0][0])  # exact duplicates still merge
        assert merged.metadata["mentions"] == 3

    run(kind, body, quotas=Quotas(per_user=Quota(max_records=2, embeddings_per_day=5)))


class _FailingEmbedder(HashingEmbedder):
    """The hashing embedder, out of service while ``down`` is set."""

    down = False

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        if self.down:
            raise RuntimeError("the embedding service is down")
        return super().embed_batch(texts, query=query)


@pytest.mark.parametrize("kind", KINDS)
def test_an_embedder_failure_at_a_full_quota_gives_the_embedding_back(kind: str) -> None:
    """The embedding is counted for good only once computed: an embedder that fails
    leaves the counter where it was (and nothing written)."""
    embedder = _FailingEmbedder()
    quotas = Quotas(per_user=Quota(max_records=1, embeddings_per_day=5))
    options: dict[str, Any] = {"embedder": embedder, "background": False, "quotas": quotas}

    async def body(m: Mem) -> None:
        await m("add", ALICE, STATEMENTS[0][0])
        embedder.down = True
        with pytest.raises(Exception, match="down"):
            await m("add", ALICE, STATEMENTS[0][1])
        embedder.down = False
        assert await _embeddings_today(m) == 1 and await m.count(ALICE) == 1
        assert (await m("add", ALICE, STATEMENTS[0][1])).metadata["mentions"] == 2

    async def main() -> None:
        if kind == "sync":
            with Memory("memory://", clock=FixedClock(NOW), **options) as memory:
                await body(Mem(memory))
        else:
            async with AsyncMemory("memory://", clock=FixedClock(NOW), **options) as amemory:
                await body(Mem(amemory))

    asyncio.run(main())


LIMIT = 3
# (statement, form): form 0 is the base text, 1-2 near duplicates, 3 the base text with
# other spacing (an exact duplicate by content hash).
OPS = st.lists(
    st.tuples(st.integers(0, len(STATEMENTS) - 1), st.integers(0, 3)), min_size=1, max_size=14
)


def _form(statement: int, form: int) -> str:
    forms = STATEMENTS[statement]
    return f" {forms[0]}  " if form == 3 else forms[form]


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_any_sequence_never_exceeds_the_quota_and_near_duplicates_always_merge(
    kind: str, ops: list[tuple[int, int]]
) -> None:
    async def body(m: Mem) -> None:
        ids: dict[int, str] = {}  # statement -> its record
        mentions: dict[int, int] = {}
        for statement, form in ops:
            text = _form(statement, form)
            if statement in ids:
                merged = await m("add", ALICE, text)  # any form of a stored statement
                mentions[statement] += 1
                assert merged.id == ids[statement]
                assert merged.metadata["mentions"] == mentions[statement]
            elif len(ids) < LIMIT:
                ids[statement] = (await m("add", ALICE, text)).id
                mentions[statement] = 1
            else:
                with pytest.raises(QuotaExceededError, match="max_records"):
                    await m("add", ALICE, text)
            assert await m.count(ALICE) == len(ids) <= LIMIT

    run(kind, body, quotas=Quotas(per_user=Quota(max_records=LIMIT)))


@pytest.mark.parametrize("sharing", SHARING)
@pytest.mark.parametrize("kind", KINDS)
def test_near_duplicates_racing_new_texts_merge_and_new_ones_fill_the_quota_exactly(
    kind: str, url: str, sharing: str
) -> None:
    """Twelve writers at once under ``max_records=5`` with three statements stored: six
    add near duplicates of them, six add new statements. Every writer's exact-text look-up
    is made before any writes, so all compete for the lease together: the six near
    duplicates merge, exactly two new statements are stored, four are refused."""
    near = [forms[1 + i % 2] for i in range(2) for forms in STATEMENTS[:3]]
    new = [f"{forms[0]} (new statement {i})" for i, forms in enumerate(STATEMENTS[2:])]
    writers = [lambda m, t=t: m("add", ALICE, t) for t in near + new]

    async def setup(m: Mem) -> None:
        for forms in STATEMENTS[:3]:
            await m("add", ALICE, forms[0])

    async def check(m: Mem) -> None:
        assert await m.count(ALICE) == 5
        stored = {r.text: r for r in await m("store.list", ALICE.user_scope, Filters())}
        for forms in STATEMENTS[:3]:
            assert stored[forms[0]].metadata["mentions"] == 3  # set up + two near duplicates
        assert len(set(stored) & set(new)) == 2

    every = Gate("find_by_hash", lambda args: True)
    results = race(
        kind,
        url,
        sharing,
        every,
        writers,
        setup,
        check,
        quotas=Quotas(per_user=Quota(max_records=5)),
    )
    merged, added = results[: len(near)], results[len(near) :]
    assert not [r for r in merged if isinstance(r, BaseException)], merged
    refused = [r for r in added if isinstance(r, QuotaExceededError)]
    stored = [r for r in added if not isinstance(r, BaseException)]
    assert len(refused) == 4 and len(stored) == 2, added
    assert all(r.type is RecordType.NOTE and r.version == 1 for r in stored)


def test_statements_are_distinct_and_their_forms_near() -> None:
    """The premise of these tests: forms of one statement share a key, statements don't."""
    from memstrata.policies.dedup_types import statement_key

    keys = [{statement_key(f) for f in forms} for forms in STATEMENTS]
    assert all(len(k) == 1 for k in keys) and len(set().union(*keys)) == len(STATEMENTS)
