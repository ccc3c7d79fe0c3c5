"""``memstrata demo``: a four-session conversation, then questions answered from memory."""

from __future__ import annotations

import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from ..records import Message
from ..scope import Scope
from .options import Settings, console, emit, open_memory

__all__ = ["CONVERSATION", "QUESTIONS", "run_demo"]

# (session date, [(role, text), ...]) — a user across six months, in English and Chinese.
CONVERSATION: list[tuple[datetime, list[tuple[str, str]]]] = [
    (
        datetime(2026, 3, 2, 9, 30, tzinfo=UTC),
        [
            (
                "user",
                "Hi! I'm Mia. I just moved to Lisbon from Berlin for a job at a solar "
                "energy startup.",
            ),
            ("assistant", "Welcome to Lisbon, Mia! How are you settling in?"),
            (
                "user",
                "Pretty well. One thing to remember: I'm allergic to peanuts, so never "
                "suggest satay or peanut sauces.",
            ),
            ("assistant", "Noted: no peanuts, ever."),
            ("user", "My cat Pixel hates the new flat's stairs, poor thing."),
        ],
    ),
    (
        datetime(2026, 5, 14, 19, 5, tzinfo=UTC),
        [
            ("user", "We adopted a second cat, a tabby named Byte."),
            ("assistant", "Congratulations! How is Pixel taking it?"),
            (
                "user",
                "Better than expected. Also, I've started training for the Lisbon half "
                "marathon on October 18.",
            ),
            (
                "user",
                "My sister Lena visits in June; she is vegetarian, so plan dinners accordingly.",
            ),
        ],
    ),
    (
        datetime(2026, 8, 20, 8, 0, tzinfo=UTC),
        [
            ("user", "我最近在学葡萄牙语，每周二和周四晚上上课。"),
            ("assistant", "太好了！学得怎么样？"),
            ("user", "还不错。对了，我喜欢喝抹茶拿铁，不太喜欢咖啡。"),
        ],
    ),
    (
        datetime(2026, 9, 3, 12, 45, tzinfo=UTC),
        [
            (
                "user",
                "Big news: I left the solar startup and now work at a wind-turbine company "
                "in Porto.",
            ),
            ("assistant", "That's a big change! Are you moving to Porto?"),
            ("user", "Yes, I'm moving to Porto next month with Pixel and Byte."),
        ],
    ),
]

QUESTIONS = [
    "Where do I work now?",
    "What food must you never suggest to me?",
    "What are my cats called?",
    "When is my half marathon?",
    "我喜欢喝什么？",
    "我在学什么语言？",
]
CONTEXT_QUERY = "My sister is coming over, what should I cook for dinner?"
KEY_MEMORY = "Mia is allergic to peanuts: never suggest peanut dishes."


def run_demo(settings: Settings, as_json: bool, *, top_k: int = 3) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="memstrata-demo-"))
    settings = replace(settings, url=f"sqlite:///{workdir / 'demo.db'}")
    user = Scope(tenant="demo", user="mia", agent="assistant")
    out: dict[str, Any] = {"store": settings.url, "sessions": [], "answers": []}
    with open_memory(settings, create=True, announce=False) as mem:
        started = time.perf_counter()
        for n, (day, turns) in enumerate(CONVERSATION, start=1):
            scope = user.with_session(f"session-{n}")
            msgs = [
                Message(role=role, content=text, observed_at=day + timedelta(minutes=i))  # type: ignore[arg-type]
                for i, (role, text) in enumerate(turns)
            ]
            mem.add_messages(scope, msgs)
            mem.end_session(scope)  # summary, facts, clusters, episode: the background jobs
            out["sessions"].append(
                {"session": scope.session, "date": day.date().isoformat(), "turns": len(turns)}
            )
        out["ingest_seconds"] = round(time.perf_counter() - started, 3)
        for q in QUESTIONS:
            hits = mem.search(user, q, top_k)
            out["answers"].append(
                {
                    "question": q,
                    "hits": [
                        {
                            "score": round(h.score, 3),
                            "layer": h.layer,
                            "date": h.record.observed_at.date().isoformat(),
                            "text": h.text,
                        }
                        for h in hits
                    ],
                }
            )
        mem.key.set(user, KEY_MEMORY, priority=1)
        ctx = mem.build_context(
            user.with_session("session-5"), CONTEXT_QUERY, 700, "You are Mia's helpful assistant."
        )
        out["context"] = {
            "query": CONTEXT_QUERY,
            "budget": 700,
            "tokens": ctx.tokens,
            "messages": ctx.messages,
            "items": [
                {"block": i.block, "layer": i.layer, "source_ids": list(i.source_ids)}
                for i in ctx.items
            ],
        }
        out["facts"] = [f.text for f in mem.facts.all(user)]
        out["stats"] = mem.stats(user)
    if emit(out, as_json):
        return out
    console.print(Text.assemble(("memstrata demo", "bold"), f" — store: {settings.url}"))
    console.print(
        f"ingested {sum(s['turns'] for s in out['sessions'])} turns in "
        f"{len(out['sessions'])} sessions ({out['ingest_seconds']} s, embedder "
        f"{out['stats']['embedding_model']})\n"
    )
    for answer in out["answers"]:
        table = Table(title=Text(f"Q: {answer['question']}"), title_justify="left")
        for col in ("score", "layer", "date", "memory"):
            table.add_column(col, overflow="fold")
        for h in answer["hits"]:
            table.add_row(
                *(Text(str(v)) for v in (f"{h['score']:.3f}", h["layer"], h["date"], h["text"]))
            )
        console.print(table)
    console.print(
        Text.assemble(
            "\n",
            ("Layers", "bold"),
            ": " + ", ".join(f"{k} {v}" for k, v in sorted(out["stats"]["by_type"].items())),
        )
    )
    console.print(
        Text.assemble(("Profile facts extracted offline", "bold"), ": " + "; ".join(out["facts"]))
    )
    console.print(
        Text.assemble(
            "\n",
            ("build_context", "bold"),
            f" for a new session, {out['context']['budget']} tokens: "
            f'"{CONTEXT_QUERY}" → {out["context"]["tokens"]} tokens',
        )
    )
    for m in out["context"]["messages"]:
        console.rule(str(m["role"]))
        console.print(m["content"])
    return out
