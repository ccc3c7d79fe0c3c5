"""A batch of turns (``add_messages`` gives them one ``observed_at``) is in the context's
history in the order it was given, on every backend: it came out reversed (the window's
newest-first page was sorted by time alone)."""

from __future__ import annotations

from memstrata import Memory, Message, Role, Scope


def test_a_batch_is_shown_in_its_order(mem: Memory, alice: Scope) -> None:
    s = Scope(alice.tenant, alice.user, session="s1")
    turns = [
        Message(Role.USER, f"question {i}")
        if i % 2 == 0
        else Message(Role.ASSISTANT, f"answer {i}")
        for i in range(6)
    ]
    mem.add_messages(s, turns)
    ctx = mem.build_context(s, "hello", token_budget=2000)
    assert [h.content for h in ctx.history] == [f"{t.role.value}: {t.content}" for t in turns]
