"""A fact given now, after the wall clock stepped back.

``facts.upsert`` without ``observed_at`` takes the clock's now as when the user said it;
a fact said before the current value began is taken as an older value replayed (``EARLIER``:
it goes into the history, the current value stays). After the clock stepped back an hour
(NTP, a VM resumed), a replacement the user gave just now ("I moved to London", surer than
the stored "Paris") was filed as earlier and "Paris" stayed current. Fixed by the
lead at merge (``layers/semantic.py`` ``_apply``): without ``observed_at`` the fact is the
newest said, ``when = max(now, _start(current))``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.llm.models import ExtractedFact


@pytest.mark.parametrize("url", ["memory://", "sqlite"])
def test_a_replacement_given_now_is_current_after_the_clock_stepped_back(
    url: str, tmp_path: object
) -> None:
    if url == "sqlite":
        url = f"sqlite:///{tmp_path}/f.db"
    clock = FixedClock(datetime(2026, 5, 1, 12, tzinfo=UTC))
    mem = Memory(url, embedder="hashing", background=False, clock=clock)
    try:
        alice = Scope("acme", "alice")
        city = ExtractedFact(key="city", category="location", value="Paris", confidence=0.6)
        mem.facts.upsert(alice, city)
        clock.set(datetime(2026, 5, 1, 11, tzinfo=UTC))  # the wall clock steps back 1 h
        out = mem.facts.upsert(
            alice,
            ExtractedFact(
                key="city", category="location", value="London", confidence=0.95, replaces="Paris"
            ),
        )
        assert out.action.value == "replaced"
        current = mem.facts.get(alice, "city")
        assert current is not None and current.content.structured["value"] == "London"
    finally:
        mem.close()
