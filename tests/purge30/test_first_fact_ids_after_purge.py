"""Found and left (session 30, purge30): a purged fact's or document's id is given again.

A first fact of a key (a first document version's first chunk) is named by a hash of the
key and the id of its record stored last (``layers/races.first_version_id``, fv18), the
design task ids had until this session: a purge of the key's last record rewinds it, and
the next first fact gets the purged fact's id (``tests/layers/test_first_version_fv18.py``
asserts this today: "purged: the next version may take its id again"). A client or an
audit event holding the purged id then names another fact. The fix tasks got
(``layers/working.py``: a random id, and the transaction re-reading the name's newest
record through ``UnitOfWork.key_versions``, which serialises writers of one name on every
store) would fit ``races.first_version_id`` and the fact and document transactions that
insert its id (``semantic.py`` ``_insert``, ``knowledge.py`` ``_replace_document``), with
fv18's tests changed to match. Strict: passing means it was fixed; drop the marker."""

from __future__ import annotations

import pytest

from memstrata import Memory, Scope

ALICE = Scope("acme", "alice")


@pytest.mark.xfail(strict=True, reason="races.first_version_id rewinds after a purge")
def test_a_purged_first_facts_id_is_not_given_again() -> None:
    with Memory("memory://", embedder="hashing", background=False) as mem:
        fact = {"category": "location", "key": "city", "confidence": 0.9}
        a = mem.facts.upsert(ALICE, {**fact, "value": "Paris"}).record
        mem.purge(ALICE, [a.id])
        b = mem.facts.upsert(ALICE, {**fact, "value": "Rome"}).record
        assert b.id != a.id


@pytest.mark.xfail(strict=True, reason="races.first_version_id rewinds after a purge")
def test_a_purged_documents_first_chunk_id_is_not_given_again() -> None:
    with Memory("memory://", embedder="hashing", background=False) as mem:
        a = mem.knowledge.ingest(ALICE, "the ferries leave at nine", "ferries")
        mem.purge(ALICE, [c.id for c in a])
        b = mem.knowledge.ingest(ALICE, "the ferries leave at ten", "ferries")
        assert b[0].id != a[0].id
