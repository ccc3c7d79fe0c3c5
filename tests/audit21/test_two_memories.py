"""Two memories on one store (two processes' worth of caches: the PostgreSQL vector cache,
the embedding cache, the Redis session buffer): after an update, a revoked access, a delete
and a purge made through one, the other (warmed first by searches and contexts) serves
neither the old words nor an access it no longer has."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import Memory, Scope

ALICE = Scope("acme", "alice", session="s1")
AS_BOB = Scope("acme", "alice", caller="bob")
QUESTION = "locker code bike secret word"


@pytest.fixture(params=["sqlite", "postgresql", "postgresql+redis"])
def pair(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Memory, Memory]]:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    if request.param.startswith("postgresql"):
        url = request.getfixturevalue("pg_url")
    buffer = request.getfixturevalue("redis_buffer_url") if "redis" in request.param else None
    a = Memory(url, embedder="hashing", background=False, buffer=buffer)
    b = Memory(url, embedder="hashing", background=False, buffer=buffer)
    yield a, b
    a.close()
    b.close()


def _seen(mem: Memory) -> str:
    """Everything ``mem`` shows of alice: search hits, a context, what bob may read."""
    hits = [h.text for h in mem.search(ALICE, QUESTION, 20)]
    context = mem.build_context(ALICE, "what is my secret word and my locker code?", 4000).text
    shared = [h.text for h in mem.search(AS_BOB, QUESTION, 20)] + [r.text for r in mem.list(AS_BOB)]
    return " ".join([*hits, context, "BOB:", *shared])


def test_the_other_memory_follows_every_change(pair: tuple[Memory, Memory]) -> None:
    a, b = pair
    note = a.add(ALICE, "Alice's locker code is 4417 and her bike is teal")
    a.set_access(ALICE, note.id, visibility="shared", allowed_users=["bob"])
    turns = a.add_messages(
        ALICE,
        [
            {"role": "user", "content": "My secret word is flamingo"},  # type: ignore[list-item]
            {"role": "assistant", "content": "Understood, I noted it down"},  # type: ignore[list-item]
        ],
    )
    seen = _seen(b)  # warms b's caches
    assert "4417" in seen and "flamingo" in seen and "BOB: Alice's locker" in seen

    a.update(ALICE, note.id, expected_version=2, content="Alice's locker code is 9902, bike teal")
    seen = _seen(b)
    assert "4417" not in seen and "9902" in seen.split("BOB:")[1]

    a.set_access(ALICE, note.id, visibility="private", allowed_users=[])
    assert "9902" not in _seen(b).split("BOB:")[1]

    a.delete(ALICE, turns[0].id)
    assert "flamingo" not in _seen(b)

    a.purge(ALICE)
    assert _seen(b).split("BOB:")[1].strip() == ""
    assert b.search(ALICE, QUESTION, 20) == []
    assert "9902" not in b.build_context(ALICE, "locker code?", 4000).text


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
def test_a_record_purged_through_one_takes_no_place_in_the_others_top_k(
    pair: tuple[Memory, Memory], mode: str
) -> None:
    """The other memory's caches (vectors, terms) held the purged record: its search for
    the purged words at ``top_k=1`` returns the next record, not the purged one or none."""
    a, b = pair
    gone = a.add(ALICE, "the purple giraffe eats lemons at noon")
    next_best = a.add(ALICE, "the purple giraffe sleeps at night")
    for i in range(20):
        a.add(ALICE, f"unrelated note number {i} on tax forms")
    assert [h.id for h in b.search(ALICE, "purple giraffe eats lemons", 1, mode=mode)] == [gone.id]
    a.purge(ALICE, [gone.id])
    hits = b.search(ALICE, "purple giraffe eats lemons", 1, mode=mode)
    assert [h.id for h in hits] == [next_best.id]
