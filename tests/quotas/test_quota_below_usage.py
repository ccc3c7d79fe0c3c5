"""A quota below current usage (issue 10, bad input), on every path that sets a quota.

``mem.set_quota`` (the aio client and the layers call the same) is the one path that sets
a quota in the store: below usage it is a ValidationError naming the fix, and the user's
earlier override stays exactly as it was. ``Memory(quotas=...)`` is each process's
store-wide default, not a setting stored anywhere: a default below some user's usage is
how an operator tightens limits, so it opens, and that user's next write is refused with a
QuotaExceededError naming the usage, with nothing written. (No CLI command or server route
sets a quota.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.errors import QuotaExceededError, ValidationError
from memstrata.quotas import Quota, Quotas, subject_hash

S = Scope("acme", "carol", session="s1")


def _override(m: Memory) -> str | None:
    return m.store.get_meta(f"quota:user:{subject_hash(S.tenant, S.user)}:override")


@pytest.mark.parametrize("backend", ["sqlite", "memory", "postgresql"])
def test_set_quota_below_usage_changes_nothing(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, clock: FixedClock
) -> None:
    url = {"sqlite": f"sqlite:///{tmp_path / 'q.db'}", "memory": "memory://"}.get(backend)
    m = Memory(
        url or request.getfixturevalue("pg_url"),
        embedder="hashing",
        clock=clock,
        background=False,
        quotas=Quotas(per_user=Quota(max_records=50, embeddings_per_day=50)),
    )
    try:
        m.add_messages(S, [{"role": "user", "content": f"turn {i}"} for i in range(4)])
        m.set_quota(S, Quota(max_records=10, embeddings_per_day=20, context_tokens=900))
        kept = _override(m)
        assert kept == "10,20,900"
        for quota, named in (
            (Quota(max_records=3, embeddings_per_day=20), "max_records 3 is below the 4"),
            (Quota(max_records=10, embeddings_per_day=2), "embeddings_per_day 2 is below the 4"),
        ):
            with pytest.raises(ValidationError, match=named) as err:
                m.set_quota(S, quota)
            assert "choose a limit >= current usage" in str(err.value)
            assert _override(m) == kept  # the earlier override is untouched
        m.set_quota(S, Quota(max_records=4, embeddings_per_day=4))  # at usage is fine
        with pytest.raises(QuotaExceededError, match="max_records"):
            m.add_message(S, "user", "one over")
    finally:
        m.close()


def test_a_store_wide_default_below_usage_refuses_writes_not_the_open(
    tmp_path: Path, clock: FixedClock
) -> None:
    url = f"sqlite:///{tmp_path / 'd.db'}"
    with Memory(url, embedder="hashing", clock=clock, background=False) as m:
        m.add_messages(S, [{"role": "user", "content": f"turn {i}"} for i in range(5)])
    tight = Quotas(per_user=Quota(max_records=3))
    with Memory(url, embedder="hashing", clock=clock, background=False, quotas=tight) as m:
        with pytest.raises(QuotaExceededError, match=r"limit 3, used 5") as err:
            m.add_message(S, "user", "over the new default")
        assert "purged" in str(err.value)
        assert len(m.list(S.user_scope, limit=100)) == 5
        other = Scope("acme", "dave", session="s")
        m.add_message(other, "user", "a user under the default still writes")
