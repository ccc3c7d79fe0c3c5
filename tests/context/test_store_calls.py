"""What one ``build_context`` asks of the store, call by call (issue 13 §3: every call is a
read transaction on SQLite, a round trip on PostgreSQL).

Before views (f8d535c), this build made 14 calls (``get_many`` 4 times, ``texts`` once) and
one on the 10,000-turn store 13.6 (3.5 ``get_many`` decoding 142 records): the first 80
candidates decoded, the texts of the rest, the ones that could still fit decoded, and a
``get_many`` of no id when no cluster was found. Now the candidates are read once, as
views, and none is decoded: 12 calls here, 10 there (7b92bcd). Since then key memory, the
task, the history window and the summaries are one ``list_many`` (were four ``list``), and
the facts' and the clusters' vector searches read their records in the same call
(``vector_records``, were ``vector_search`` + ``get_many`` each): 7 calls here."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from memstrata import Memory, Message, Role, Scope

_READS = (
    "list",
    "list_many",
    "vector_search",
    "vector_records",
    "lexical_search",
    "views",
    "get_many",
    "texts",
    "touch",
)


def _counting(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> tuple[Counter[str], set[str]]:
    """Calls per store method from now on, and the ids ``get_many`` decodes."""
    store: Any = mem.layers.ctx.store
    calls: Counter[str] = Counter()
    decoded: set[str] = set()
    for name in _READS:
        real = getattr(store, name, None)
        if real is None:
            continue

        def wrap(*args: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
            calls[_name] += 1
            if _name == "get_many":
                decoded.update(args[1])
            return _real(*args, **kw)

        monkeypatch.setattr(store, name, wrap)
    return calls, decoded


def test_the_reads_of_one_build(mem: Memory, alice: Scope, monkeypatch: pytest.MonkeyPatch) -> None:
    turns = []
    for i in range(60):
        turns.append(Message(Role.USER, f"I sail to the island {i} at dawn with my dog Rex."))
        turns.append(Message(Role.ASSISTANT, f"Reply {i}: check the tide chart and the wind."))
    mem.add_messages(alice, turns)
    mem.end_session(alice)  # summaries
    mem.key.set(alice, "Never suggest sailing at night")
    ask = Scope(alice.tenant, alice.user, session="s2")
    mem.tasks.start(ask, "plan a trip", ["pick a day"])
    mem.add_messages(ask, [Message(Role.USER, "What is my dog called?")])
    calls, decoded = _counting(mem, monkeypatch)
    ctx = mem.build_context(ask, "when do I sail to the island with my dog?", token_budget=2000)
    shown = {it.record_id for it in ctx.items if it.block == "relevant"}
    assert len(shown) >= 10 and "Never suggest sailing at night" in ctx.text
    assert not shown & decoded  # no candidate decoded
    # key memory, the task, the recent turns and the summaries in one read (list_many); facts
    # and clusters with their records (vector_records); the search's dense list; its
    # lexical list; the candidates' views; the accesses counted
    assert calls["list_many"] == 1 and calls["list"] == 0
    assert calls["vector_search"] == 1 and calls["vector_records"] == 2
    assert calls["lexical_search"] == 1 and calls["views"] == 1 and calls["texts"] == 0
    assert calls["touch"] == 1
    assert calls["get_many"] <= 1  # a cluster shown from its view (its hits)
    assert sum(calls.values()) == 7 + calls["get_many"], calls
