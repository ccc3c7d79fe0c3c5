"""Users whose ids differ only by Unicode normalisation, case, an invisible character, a
trailing space or a look-alike letter are different users on every store: none reads,
searches, lists, exports or purges another's memory, and each has its own quota counter.
(A guard: memstrata compares ids as given, never normalised; session 31's audit found
this held on memory://, SQLite, PostgreSQL and PostgreSQL with Redis's hot tier.)"""

from __future__ import annotations

import io
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import Filters, Memory, QuotaExceededError, Scope
from memstrata.llm.models import ExtractedFact
from memstrata.quotas import Quota, Quotas

NFC = unicodedata.normalize("NFC", "café")
LOOKALIKES = [
    NFC,
    unicodedata.normalize("NFD", "café"),  # e + combining acute
    "Café",
    "CAFÉ",
    "caf\u00e9\u200b",  # zero-width space
    "\u200fcafé",  # right-to-left mark
    "café ",  # trailing space
    "cafe\u0301\u0301",
    "сafé",  # Cyrillic es
    "ｃａｆé",  # fullwidth
]


@pytest.fixture(params=["memory", "sqlite", "postgresql", "postgresql+redis"])
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    buffer = None
    if request.param == "memory":
        url = "memory://"
    elif request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'm.db'}"
    else:
        url = request.getfixturevalue("pg_url")
        if "redis" in request.param:
            buffer = request.getfixturevalue("redis_buffer_url")
    quotas = Quotas(per_user=Quota(max_records=4))
    m = Memory(url, embedder="hashing", background=False, buffer=buffer, quotas=quotas)
    yield m
    m.close()


def test_lookalike_users_never_share(mem: Memory) -> None:
    assert len(set(LOOKALIKES)) == len(LOOKALIKES)
    for i, user in enumerate(LOOKALIKES):
        scope = Scope("acme", user, session="s")
        mem.add(scope, f"secret{i} espresso")
        mem.add_message(scope, "user", f"turn{i} of {user!r}")
        mem.facts.upsert(
            scope,
            ExtractedFact(key="city", value=f"city{i}", category="place", confidence=0.9),
        )
    for i, user in enumerate(LOOKALIKES):
        scope = Scope("acme", user)
        texts = " ".join(r.content.raw for r in mem.list(scope))
        assert f"secret{i} " in texts and f"turn{i} " in texts, (user, texts)
        others = [j for j in range(len(LOOKALIKES)) if j != i]
        assert not any(f"secret{j} " in texts or f"turn{j} " in texts for j in others), user
        hits = mem.search(scope, "espresso", top_k=20)
        assert hits[0].text == f"secret{i} espresso", (user, hits)
        assert all(h.record.user == user for h in hits), (user, hits)
        city = mem.facts.get(scope, "city")
        assert city is not None and city.content.structured["value"] == f"city{i}"
        context = mem.build_context(Scope("acme", user, session="s"), "espresso?")
        assert not any(f"secret{j} " in context.text for j in others), user
        out = io.StringIO()
        mem.export_records(scope, out)
        assert not any(f"secret{j} " in out.getvalue() for j in others), user
    # the quota of 4 records each: one more fills NFC's, the others still write
    nfc = Scope("acme", NFC, session="s")
    mem.add(nfc, "fourth record")
    with pytest.raises(QuotaExceededError):
        mem.add(nfc, "fifth record")
    mem.add(Scope("acme", LOOKALIKES[1], session="s"), "fourth record of NFD")
    # a purge of one leaves every other whole
    mem.purge(Scope("acme", NFC))
    assert mem.list(Scope("acme", NFC), filters=Filters(include_deleted=True)) == []
    for i, user in enumerate(LOOKALIKES[1:], start=1):
        texts = " ".join(r.content.raw for r in mem.list(Scope("acme", user)))
        assert f"secret{i} " in texts and f"turn{i} " in texts, user
