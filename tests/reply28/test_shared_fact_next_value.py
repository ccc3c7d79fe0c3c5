"""A fact the owner shared, then replaced by its next value ("I moved to Berlin"): the new
record did not carry the old one's access, so a caller saw neither (the old one is
superseded, out of default lists; the new one private). The owner shared "my city", not
one string: the next value of a key inherits the access of the value it supersedes
(``layers/semantic.py``). A confirmation or a conflict is a version of the same record and
kept it already; a value said before the current one began (``EARLIER``) is not the next
value and stays private; a fact of a key that was never shared stays private."""

from __future__ import annotations

import asyncio

from memstrata import AsyncMemory, Memory, Scope
from memstrata.llm.models import ExtractedFact

from .conftest import live_server, served  # noqa: F401

BOB = Scope("acme", "bob")
CAROL = BOB.as_caller("carol")


def _city(value: str, confidence: float) -> ExtractedFact:
    return ExtractedFact(category="identity", key="city", value=value, confidence=confidence)


def test_the_next_value_of_a_shared_fact_is_shared_alike(mem: Memory) -> None:
    paris = mem.facts.upsert(BOB, _city("Paris", 0.8)).record
    mem.set_access(BOB, paris.id, visibility="shared", allowed_users=["carol"])
    outcome = mem.facts.upsert(BOB, _city("Berlin", 0.9))
    assert outcome.action.value == "replaced"
    berlin = outcome.record
    assert berlin.access.allowed_users == ("carol",)
    assert mem.facts.get(CAROL, "city") is not None
    assert mem.facts.get(CAROL, "city").id == berlin.id  # type: ignore[union-attr]
    assert [r.id for r in mem.facts.all(CAROL)] == [berlin.id]
    assert berlin.id in [r.id for r in mem.list(CAROL)]
    assert berlin.id in [h.id for h in mem.search(CAROL, "city berlin", mode="lexical")]
    seen = [r.id for r in mem.facts.history(CAROL, "city")]  # each shared version
    assert list(dict.fromkeys(seen)) == [paris.id, berlin.id]
    # and the one after it, again
    third = mem.facts.upsert(BOB, _city("Lyon", 0.95)).record
    assert mem.facts.get(CAROL, "city").id == third.id  # type: ignore[union-attr]


def test_the_inherited_rules_have_their_event_and_go_with_the_reader(mem: Memory) -> None:
    """The access a record has is one an audit event gave it (``set_access``): the next
    value's rules come with a ``set_access`` event of ``system:facts``, written in its
    transaction; and the reader's purge takes them out of the new record as of the old."""
    paris = mem.facts.upsert(BOB, _city("Paris", 0.8)).record
    mem.set_access(BOB, paris.id, visibility="shared", allowed_users=["carol"])
    berlin = mem.facts.upsert(BOB, _city("Berlin", 0.9)).record
    (event,) = mem.audit.query("acme", user="bob", action="set_access", record_id=berlin.id)
    assert event.actor == "system:facts" and event.details["allowed_users"] == ["carol"]
    assert paris.id in (event.reason or "")
    # a value that inherits nothing (private before and after) writes no event
    mem.facts.upsert(BOB, ExtractedFact(category="x", key="pet", value="cat", confidence=0.5))
    dog = mem.facts.upsert(
        BOB, ExtractedFact(category="x", key="pet", value="dog", confidence=0.9)
    ).record
    assert mem.audit.query("acme", user="bob", action="set_access", record_id=dog.id) == []
    mem.purge(Scope("acme", "carol"))
    assert mem.get(BOB, berlin.id).access.allowed_users == ()
    assert mem.facts.get(CAROL, "city") is None


def test_a_private_fact_stays_private_and_a_later_unshare_holds(mem: Memory) -> None:
    mem.facts.upsert(BOB, _city("Paris", 0.8))
    berlin = mem.facts.upsert(BOB, _city("Berlin", 0.9)).record
    assert berlin.access.allowed_users == ()
    assert mem.facts.get(CAROL, "city") is None
    # shared, then unshared by the owner: the next value follows the last rules
    mem.set_access(BOB, berlin.id, visibility="shared", allowed_users=["carol"])
    mem.set_access(BOB, berlin.id, visibility="private", allowed_users=[])
    lyon = mem.facts.upsert(BOB, _city("Lyon", 0.95)).record
    assert lyon.access.allowed_users == ()
    assert mem.facts.get(CAROL, "city") is None


def test_a_value_said_before_the_shared_one_began_stays_private(mem: Memory) -> None:
    from datetime import timedelta

    paris = mem.facts.upsert(BOB, _city("Paris", 0.8)).record
    mem.set_access(BOB, paris.id, visibility="shared", allowed_users=["carol"])
    earlier = paris.observed_at - timedelta(days=30)
    out = mem.facts.upsert(BOB, _city("Rome", 0.9), observed_at=earlier)
    assert out.action.value == "earlier"
    assert out.previous is not None and out.previous.access.allowed_users == ()
    assert mem.facts.get(CAROL, "city").id == paris.id  # type: ignore[union-attr]


def test_the_async_memory_shares_the_next_value(url: str) -> None:
    async def main() -> None:
        async with AsyncMemory(url, embedder="hashing", background=False) as amem:
            paris = (await amem.facts.upsert(BOB, _city("Paris", 0.8))).record
            await amem.set_access(BOB, paris.id, visibility="shared", allowed_users=["carol"])
            berlin = (await amem.facts.upsert(BOB, _city("Berlin", 0.9))).record
            seen = await amem.facts.get(CAROL, "city")
            assert seen is not None and seen.id == berlin.id

    asyncio.run(main())


def test_over_http_the_caller_reads_the_next_value(served) -> None:  # noqa: F811
    c = served.client
    bob = served.h(served.keys.create("acme", user="bob").secret)
    carol = served.h(served.keys.create("acme", user="carol").secret)
    body = {"category": "identity", "key": "city", "value": "Paris", "confidence": 0.8}
    got = c.post("/v1/users/bob/facts", json=body, headers=bob)
    assert got.status_code == 200, got.text
    rid = got.json()["fact"]["id"]
    access = {"visibility": "shared", "allowed_users": ["carol"]}
    got = c.put(f"/v1/users/bob/memories/{rid}/access", json=access, headers=bob)
    assert got.status_code == 200, got.text
    got = c.post(
        "/v1/users/bob/facts", json={**body, "value": "Berlin", "confidence": 0.9}, headers=bob
    )
    assert got.status_code == 200 and got.json()["action"] == "replaced", got.text
    berlin = got.json()["fact"]["id"]
    got = c.get("/v1/users/bob/facts/city", headers=carol)
    assert got.status_code == 200 and got.json()["id"] == berlin, got.text
    got = c.get("/v1/users/bob/facts", headers=carol)
    assert got.status_code == 200 and berlin in got.text, got.text
