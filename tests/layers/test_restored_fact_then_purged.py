"""A restored fact ends the key's other live facts; purging its turn brings them back.

Before session 21: ``Paris`` (extracted from a turn) deleted, ``Oslo`` set by the user,
``Paris`` restored (it is current, Oslo ends superseded by it), then Paris's turn purged:
Paris went with its turn and the key had no current value at all — the value the user set
was left in the history only, superseded by a record that no longer exists. The purge
reinstated only the fact Paris's ``replaces`` named, and a restore does not rewrite it."""

from __future__ import annotations

from memstrata import Memory, Scope

S = Scope("acme", "alice", session="s1")
U = S.user_scope
OSLO = {"category": "profile", "key": "location", "value": "Oslo", "confidence": 0.9}


def _value(mem: Memory) -> str | None:
    fact = mem.facts.get(U, "location")
    return None if fact is None else str(fact.content.structured["value"])


def test_purging_a_restored_facts_turn_gives_back_what_it_ended(mem: Memory) -> None:
    turn = mem.add_message(S, "user", "I live in Paris.")
    mem.flush()
    paris = mem.facts.get(U, "location")
    assert paris is not None and paris.metadata.get("origin") == "extracted"
    mem.delete(U, paris.id)
    mem.facts.upsert(U, OSLO)
    mem.restore(U, paris.id)
    assert _value(mem) == "Paris"
    mem.purge(S, [turn.id])
    assert _value(mem) == "Oslo"  # None before
    live = [v for v in mem.facts.history(U, "location") if v.superseded_by is None]
    assert live and live[-1].metadata.get("reinstated")


def test_a_later_value_is_not_overridden(mem: Memory) -> None:
    """The key already has a live value when the restored fact goes: nothing comes back."""
    turn = mem.add_message(S, "user", "I live in Paris.")
    mem.flush()
    paris = mem.facts.get(U, "location")
    assert paris is not None
    mem.delete(U, paris.id)
    mem.facts.upsert(U, OSLO)
    mem.restore(U, paris.id)
    mem.facts.upsert(
        U, {"category": "profile", "key": "location", "value": "Rome", "confidence": 1.0}
    )
    assert _value(mem) == "Rome"
    mem.purge(S, [turn.id])
    assert _value(mem) == "Rome"
