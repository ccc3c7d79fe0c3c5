"""A fact record written by ``add(..., type="fact")`` holds no ``structured["value"]``.

Before session 21 the next ``facts.upsert`` of its key raised a bare ``KeyError: 'value'``
(found by imp21's property test). Its value is now its text (without a leading
``"<key>: "``), and the upsert decides as for any other fact; the added text stays in the
history either way."""

from __future__ import annotations

from memstrata import Memory, Scope

S = Scope("acme", "alice")


def _upsert(mem: Memory, value: str, confidence: float) -> str:
    fact = {"category": "home", "key": "city", "value": value, "confidence": confidence}
    return str(mem.facts.upsert(S, fact).action)


def test_a_surer_value_replaces_an_added_fact(mem: Memory) -> None:
    added = mem.add(S, "city: Lyon", type="fact", metadata={"key": "city"}, confidence=0.5)
    assert _upsert(mem, "Paris", 0.9) == "replaced"
    current = mem.facts.get(S, "city")
    assert current is not None and current.content.structured["value"] == "Paris"
    assert "city: Lyon" in [v.text for v in mem.facts.history(S, "city")]
    assert mem.get(S, added.id, include_deleted=True).superseded_by == current.id


def test_a_less_sure_value_is_a_conflict_on_an_added_fact(mem: Memory) -> None:
    mem.add(S, "city: Lyon", type="fact", metadata={"key": "city"})
    assert _upsert(mem, "Paris", 0.9) == "conflict"
    current = mem.facts.get(S, "city")
    assert current is not None and current.text == "city: Lyon (also said: Paris)"
    assert _upsert(mem, "Lyon", 0.9) == "confirmed"  # the same value as the added text
