"""audit33's leftover: a store without quota counters was named by its URL, password and all."""

from __future__ import annotations

import pytest

from memstrata import quotas
from memstrata.errors import StoreError


class _NoCounters:
    url = "postgresql://alice:s3cret@db.example/mem?sslpassword=other"


def test_a_store_without_counters_is_named_without_its_passwords() -> None:
    with pytest.raises(StoreError) as caught:
        quotas.counters_of(_NoCounters())  # type: ignore[arg-type]
    message = str(caught.value)
    assert "s3cret" not in message and "other" not in message, message
    assert "db.example" in message and "keeps no quota counters" in message
