"""One scripted multi-session conversation, run through any API that answers ``call``.

``call(name, *args, **kwargs)`` calls ``Memory.<name>`` or ``AsyncMemory.<name>``
(``"key.set"`` reaches a layer service) and returns its result; the script returns every
result in order, so two runs can be compared value by value.
"""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from memstrata import FixedClock, Message, Scope

Call = Callable[..., Awaitable[Any]]
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

SESSIONS = [
    [
        ("user", "Hi! I'm Alice, I live in Porto and I work as a nurse."),
        ("assistant", "Nice to meet you, Alice. How can I help?"),
        ("user", "I'm allergic to peanuts, so please keep that in mind for recipes."),
        ("assistant", "Noted: no peanuts."),
        ("user", "My sister Carla visits next weekend; she is vegetarian."),
    ],
    [
        ("user", "I moved to Lisbon last week, the new flat is near the river."),
        ("assistant", "Congratulations on the move!"),
        ("user", "I started learning the cello on Tuesdays."),
        ("user", "我喜欢喝绿茶，不喜欢咖啡。"),
    ],
    [
        ("user", "Carla's visit went well, we cooked a lentil curry."),
        ("assistant", "Lentil curry is a great vegetarian dish."),
        ("user", "Next month I have a night shift rotation at the hospital."),
    ],
]


async def conversation(call: Call, clock: FixedClock) -> list[Any]:
    out: list[Any] = []
    alice = Scope("acme", "alice")
    bob = Scope("acme", "bob", session="b1")
    for number, turns in enumerate(SESSIONS, start=1):
        scope = Scope("acme", "alice", session=f"s{number}")
        for role, text in turns[:-1]:
            out.append(await call("add_message", scope, role, text))
            clock.advance(minutes=2)
        role, text = turns[-1]
        out.append(
            await call("add_messages", scope, [Message(role, text, observed_at=clock.now())])
        )
        out.append(
            await call(
                "add",
                scope,
                f"session {number} topic noted",
                type="note",
                tags=["topic", f"s{number}"],
            )
        )
        out.append(await call("search", alice, "where does Alice live?", 5, explain=True))
        out.append(await call("end_session", scope))
        clock.advance(days=3)
    out.append(await call("add_message", bob, "user", "I'm Bob and I collect stamps."))
    fact = await call(
        "add", alice, "Alice is allergic to peanuts", type="fact", importance=0.9, tags=["health"]
    )
    out.append(fact)
    out.append(await call("add", alice, "Alice is allergic to peanuts", type="fact"))  # dedup
    current = await call("get", alice, fact.id)  # the dedup merge made a new version
    out.append(current)
    updated = await call(
        "update",
        alice,
        fact.id,
        expected_version=current.version,
        content="Alice is allergic to peanuts and cashews",
    )
    out.append(updated)
    out.append(await call("key.set", alice, "Never suggest recipes with nuts", 5))
    out.append(await call("key.list", alice))
    out.append(await call("facts.all", alice))
    out.append(await call("remember", alice, "Alice prefers short answers without emojis."))
    out.append(await call("delete", alice, updated.id))
    out.append(await call("restore", alice, updated.id))
    out.append(await call("history", alice, updated.id))
    out.append(await call("flush"))
    out.append(
        await call(
            "search",
            alice,
            "what is she allergic to",
            8,
            filters={"types": ["fact", "note", "message"]},
        )
    )
    out.append(await call("search", alice, "绿茶", 5, mode="lexical"))
    out.append(
        await call(
            "build_context",
            Scope("acme", "alice", session="s4"),
            "What should I cook for Carla and Alice?",
            1500,
            "You are a helpful cook.",
        )
    )
    out.append(
        await call(
            "list", alice, filters={"include_deleted": True, "include_superseded": True}, limit=1000
        )
    )
    out.append(await call("list", bob.user_scope))
    buffer = io.StringIO()
    out.append(await call("export_records", alice, buffer))
    out.append(buffer.getvalue())
    stats = dict(await call("stats", alice))
    stats.pop("store")  # the URL: the two runs use two stores
    out.append(stats)
    out.append(await call("purge", bob.user_scope))
    return out
