"""End to end: a multi-session conversation (English, and one Chinese session) ingested
session by session with its dates on a SQLite file, then recalled in a later session by a
*new* Memory on the same file (hashing embedder, heuristic LLM, no network)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.context.assemble import BLOCKS
from memstrata.filters import Filters
from memstrata.records import MemoryRecord, Message, RecordType

USER = Scope("acme", "alice")
CLOCK_T0 = datetime(2026, 4, 1, 8, 0, tzinfo=UTC)  # "now" when the later session runs
DAY1 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
DAY2 = datetime(2026, 2, 10, 18, 30, tzinfo=UTC)
DAY3 = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)
DAY4 = datetime(2026, 4, 1, 8, 0, tzinfo=UTC)
DATE_LINE = re.compile(r"^- \[(\d{1,2} [A-Z][a-z]+ \d{4}|\d{4}年\d{1,2}月\d{1,2}日)\] \S")
GROUP_LINE = re.compile(r"^\[(\d{1,2} [A-Z][a-z]+ \d{4}|\d{4}年\d{1,2}月\d{1,2}日)\]$")


def sailing(n: int) -> list[tuple[str, str]]:
    out = []
    for i in range(n):
        out.append(
            (
                "user",
                f"Sailing lesson {i}: how do I trim the mainsail on the Tagus "
                f"estuary when the wind shifts to {['north', 'west'][i % 2]}?",
            )
        )
        out.append(
            (
                "assistant",
                f"For lesson {i}, ease the sheet until the luff stops "
                "flapping, then watch the telltales.",
            )
        )
    return out


SESSION1 = [  # 12 rounds: one summary at round 10 and one at session end
    ("user", "Hi, my name is Alice and I live in Lisbon."),
    ("assistant", "Nice to meet you, Alice! How can I help today?"),
    ("user", "I am allergic to peanuts, please keep that in mind for recipes."),
    ("assistant", "Understood: I will avoid peanuts in every recipe I suggest."),
    *sailing(10),
]
SESSION2 = [  # 3 rounds
    ("user", "I have a dog named Biscuit and he needs a walk every morning."),
    ("assistant", "Biscuit sounds lovely. A morning walk routine is great for dogs."),
    ("user", "I work as a marine biologist at the aquarium."),
    ("assistant", "That must be fascinating work with the sea life."),
    ("user", "Can you suggest a weekend plan that includes Biscuit?"),
    ("assistant", "A beach walk at Cascais with Biscuit, then a peanut-free picnic."),
]
SESSION3_ZH = [  # Chinese, 3 rounds
    ("user", "我养了一只猫，名叫咪咪。"),
    ("assistant", "咪咪这个名字真可爱！它多大了？"),
    ("user", "我最喜欢的水果是荔枝，每年夏天都吃很多。"),
    ("assistant", "荔枝很甜，夏天吃正合适。"),
    ("user", "周末我想学做广东菜，有什么推荐？"),
    ("assistant", "可以试试白切鸡和清蒸鱼，做法简单。"),
]


@dataclass
class Ingested:
    path: Path
    url: str
    scopes: dict[str, Scope]
    records: dict[str, list[MemoryRecord]]


def open_memory(url: str, now: datetime) -> Memory:
    return Memory(url, embedder="hashing", llm="heuristic", clock=FixedClock(now), background=False)


def ingest(
    mem: Memory, scope: Scope, start: datetime, turns: Sequence[tuple[str, str]]
) -> list[MemoryRecord]:
    """One session, in two add_messages calls (so two ingest jobs), then its end."""
    messages = [
        Message(role=r, content=c, observed_at=start + timedelta(minutes=2 * i))  # type: ignore[arg-type]
        for i, (r, c) in enumerate(turns)
    ]
    half = len(messages) // 2
    records = mem.add_messages(scope, messages[:half])
    records += mem.add_messages(scope, messages[half:])
    report = mem.end_session(scope)
    assert report.failed == 0 and report.retried == 0, report.errors
    assert report.done == 3  # two ingest jobs and the session end
    return records


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ingested]:
    path = tmp_path_factory.mktemp("multi") / "alice.db"
    url = f"sqlite:///{path}"
    scopes = {name: USER.with_session(name) for name in ("s1", "s2", "s3")}
    records: dict[str, list[MemoryRecord]] = {}
    # every session is ingested by its own Memory, as separate process runs would be
    for name, day, turns in (
        ("s1", DAY1, SESSION1),
        ("s2", DAY2, SESSION2),
        ("s3", DAY3, SESSION3_ZH),
    ):
        mem = open_memory(url, day + timedelta(hours=2))
        try:
            records[name] = ingest(mem, scopes[name], day, turns)
        finally:
            mem.close()
    yield Ingested(path, url, scopes, records)


@pytest.fixture
def later(ingested: Ingested) -> Iterator[Memory]:
    mem = open_memory(ingested.url, CLOCK_T0)
    yield mem
    mem.close()


def all_message_ids(ing: Ingested) -> set[str]:
    return {r.id for recs in ing.records.values() for r in recs}


def test_every_message_persists_with_its_date(ingested: Ingested, later: Memory) -> None:
    stored = later.list(
        USER, filters=Filters(types=frozenset({RecordType.MESSAGE})), limit=1000, newest_first=False
    )
    assert {r.id for r in stored} == all_message_ids(ingested)
    by_id = {r.id: r for r in stored}
    for name, recs in ingested.records.items():
        for rec in recs:
            assert by_id[rec.id].text == rec.text
            assert by_id[rec.id].observed_at == rec.observed_at
            assert by_id[rec.id].session == name
    assert later.stats(USER)["pending_jobs"] == 0
    assert later.stats(USER)["failed_jobs"] == 0


def test_search_recalls_facts_from_earlier_sessions(ingested: Ingested, later: Memory) -> None:
    msg = {r.text: r.id for recs in ingested.records.values() for r in recs}
    cases = [
        ("what is she allergic to? peanuts", SESSION1[2][1]),
        ("what is the name of the dog?", SESSION2[0][1]),
        ("which city does Alice live in", SESSION1[0][1]),
        ("猫叫什么名字", SESSION3_ZH[0][1]),
        ("最喜欢的水果", SESSION3_ZH[2][1]),
    ]
    for query, expected in cases:
        hits = later.search(USER, query, top_k=5, layers="messages")
        assert msg[expected] in [h.record.id for h in hits], (query, [h.record.text for h in hits])


def test_profile_facts_were_extracted_across_sessions_and_languages(
    ingested: Ingested, later: Memory
) -> None:
    expected = {
        "name": "Alice",
        "location": "Lisbon",
        "allergy": "peanuts",
        "pet_dog": "Biscuit",
        "occupation": "marine biologist at the aquarium",
        "pet_猫": "咪咪",
        "favorite_水果": "荔枝",
    }
    source_of = {"allergy": SESSION1[2][1], "pet_dog": SESSION2[0][1], "pet_猫": SESSION3_ZH[0][1]}
    msg = {r.text: r.id for recs in ingested.records.values() for r in recs}
    for key, value in expected.items():
        fact = later.facts.get(USER.with_session("s4"), key)
        assert fact is not None, key
        assert fact.content.structured["value"] == value
        assert fact.session is None  # a profile fact belongs to the user, not a session
        assert set(fact.source_ids) <= all_message_ids(ingested)
        if key in source_of:
            assert msg[source_of[key]] in fact.source_ids
    relevant = later.facts.relevant(USER, "allergic to peanuts")
    assert relevant and relevant[0].content.structured["key"] == "allergy"


def test_summaries_cover_long_sessions_with_step_and_time_ranges(
    ingested: Ingested, later: Memory
) -> None:
    s1 = ingested.scopes["s1"]
    recs = ingested.records["s1"]  # 12 rounds, two messages each
    summaries = later.layers.summaries.summaries(s1)
    ranges = [
        (
            s.content.structured["step_start"],
            s.content.structured["step_end"],
            s.content.structured["final"],
        )
        for s in summaries
    ]
    assert ranges == [(1, 10, False), (11, 12, True)]
    first, final = summaries
    assert first.content.structured["time_start"] == recs[0].observed_at.isoformat()
    assert first.content.structured["time_end"] == recs[19].observed_at.isoformat()
    assert final.content.structured["time_start"] == recs[20].observed_at.isoformat()
    assert final.content.structured["time_end"] == recs[23].observed_at.isoformat()
    assert first.source_ids == tuple(r.id for r in recs[:20])
    assert final.source_ids == tuple(r.id for r in recs[20:])
    assert first.observed_at == recs[19].observed_at
    for s in summaries:
        assert s.text.strip() and len(s.text.split()) <= 200
    # the short sessions still get their session-end summary
    for name in ("s2", "s3"):
        (only,) = later.layers.summaries.summaries(ingested.scopes[name])
        assert (only.content.structured["step_start"], only.content.structured["step_end"]) == (
            1,
            3,
        )


def test_each_session_has_its_conversation_episode(ingested: Ingested, later: Memory) -> None:
    for name, recs in ingested.records.items():
        episode = later.episodes.conversation_episode(ingested.scopes[name])
        assert episode is not None, name
        data = episode.content.structured
        assert data["kind"] == "conversation" and data["message_count"] == len(recs)
        assert data["started_at"] == recs[0].observed_at.isoformat()
        assert data["ended_at"] == recs[-1].observed_at.isoformat()
        assert set(episode.source_ids) == {r.id for r in recs}
        assert episode.observed_at == recs[-1].observed_at


def _memory_blocks(text: str) -> dict[str, list[str]]:
    """The memory system message split into its blocks: block name -> body lines."""
    headers = {header: name for name, header in BLOCKS}
    blocks: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.split("\n"):
        if line in headers:
            current = headers[line]
            blocks[current] = []
        elif line.strip():
            assert current is not None, f"text before the first block header: {line!r}"
            blocks[current].append(line)
    return blocks


def test_a_later_session_context_recalls_earlier_sessions_in_order(
    ingested: Ingested, later: Memory
) -> None:
    s4 = USER.with_session("s4")
    # the later session: a pinned key memory, an auto-promoted one, a task and some turns
    cluster = later.layers.mid_term.clusters(s4)[0]
    auto = later.key.promote(s4, cluster)
    pinned = later.key.set(s4, "Never suggest recipes containing peanuts.")
    later.tasks.start(s4, "Plan a weekend in Lisbon", ["pick a beach", "book a table"])
    turns = later.add_messages(
        s4,
        [
            Message(
                role="user",
                content="Good morning, I am planning a quiet weekend at home.",  # type: ignore[arg-type]
                observed_at=DAY4,
            ),
            Message(
                role="assistant",
                content="Happy to help with your weekend plan.",  # type: ignore[arg-type]
                observed_at=DAY4 + timedelta(minutes=1),
            ),
        ],
    )
    later.flush(s4)

    query = "What am I allergic to, what is my dog called and where do I live?"
    system = "You are Alice's assistant."
    ctx = later.build_context(s4, query, 4000, system_prompt=system)

    # order: system -> memory blocks -> history -> input
    assert ctx.messages[0] == {"role": "system", "content": system}
    assert ctx.messages[1]["role"] == "system"
    assert [m["content"] for m in ctx.messages[2:-1]] == [t.rendered() for t in ctx.history]
    assert [t.record_id for t in ctx.history] == [r.id for r in turns]
    assert ctx.messages[-1] == {"role": "user", "content": query}
    for turn in ctx.history:
        assert re.match(
            r"^\[(\d{1,2} [A-Z][a-z]+ \d{4}|\d{4}年\d{1,2}月\d{1,2}日) \d{2}:\d{2}\] ",
            turn.rendered(),
        )

    memory_text = ctx.messages[1]["content"]
    blocks = _memory_blocks(memory_text)
    names = list(blocks)
    order = ["key", "summaries", "facts", "relevant", "working"]
    assert names == [n for n in order if n in names]
    assert {"key", "facts", "relevant", "working"} <= set(names)
    # key memory comes first, and the user's own entry outranks the promoted one
    assert blocks["key"][0].endswith(pinned.text)
    assert any(line.endswith(auto.text) for line in blocks["key"][1:])
    # dates on every memory line (the task state is the current one: it is not dated); past
    # turns are grouped under one date line per day (ContextConfig.compact_dates)
    for name in ("key", "summaries", "facts", "relevant"):
        dated = False
        for line in blocks.get(name, []):
            if name == "relevant" and GROUP_LINE.match(line):
                dated = True
                continue
            assert DATE_LINE.match(line) or (dated and line.strip()), (name, line)
    assert blocks["working"][0] == "- Goal: Plan a weekend in Lisbon"
    assert any("pick a beach" in line for line in blocks["working"])
    for item in ctx.items:
        assert item.observed_at is not None and item.line() in memory_text

    # recall of earlier sessions' facts
    facts = "\n".join(blocks["facts"])
    for needle in ("allergy: peanuts", "pet_dog: Biscuit", "location: Lisbon"):
        assert needle in facts
    # summaries are shown unless every turn they cover is shown already (then they repeat)
    shown = {i for it in ctx.items if it.layer == "messages" for i in it.source_ids}
    for summary in later.layers.summaries.summaries(USER):
        in_context = any(it.record_id == summary.id for it in ctx.items)
        assert in_context or set(summary.source_ids) <= shown

    # provenance: every remembered item points at real stored messages
    message_ids = all_message_ids(ingested)
    layers = {it.layer for it in ctx.items}
    assert {"key", "semantic", "working"} <= layers
    assert layers & {"messages", "episodic", "mid_term"}
    for item in ctx.items:
        assert item.record_id is not None and item.source_ids
        if item.layer in ("key", "working") and item.record_id != auto.id:
            assert item.source_ids == (item.record_id,)
            continue
        assert set(item.source_ids) <= message_ids | {turn.id for turn in turns}, item
        for sid in item.source_ids:
            assert later.get(USER, sid).type is RecordType.MESSAGE
    assert ctx.tokens <= ctx.plan.usable


def test_a_chinese_query_recalls_the_chinese_session(ingested: Ingested, later: Memory) -> None:
    ctx = later.build_context(USER.with_session("s5"), "我的猫叫什么名字？", 1000)
    assert "pet_猫: 咪咪" in ctx.text
    cat_message = ingested.records["s3"][0].id
    assert any(cat_message in it.source_ids for it in ctx.items if it.layer == "semantic")
    assert ctx.tokens <= ctx.plan.usable
