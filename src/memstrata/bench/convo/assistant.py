"""The user ↔ assistant style of the synthetic set (``bench convo --style assistant``).

A user asks an AI assistant for help over 24–32 dated sessions; the assistant answers at
length (100–300 tokens of generic advice on the request's topic, sharing the questions'
vocabulary but none of the values a question asks for). What the memory must keep is said by
the user in passing, inside requests ("Can you recommend how to find a good vet nearby? My
puppy Biscuit is 3 and keeps scratching his ears."), or by the assistant in one sentence of a
long reply. Planted, with questions (asked by the user, in the first person) whose gold
answer and evidence turns are known:

- personal facts (4): a pet's name, the number of guests of a party being planned;
- preferences (6): the music the user listens to, the user's diet, an allergy;
- updates (3): the employer (after a change; also "where before"), the city (after a move),
  the favourite restaurant — the old value stays in the history;
- temporal (2): when an event was ("today" → the session's date; "last Saturday" → the date it
  resolves to), which book was being read in a month (three books, three months);
- multi-session (1): the sports taken lessons in (two sessions), the job of the sibling who
  lives in a city (city and job in different sessions, two siblings);
- assistant said (7): the novel the assistant recommended, the name it suggested for the
  user's business, the area it suggested staying in — one sentence inside a long reply.

Distractor requests about other people carry the same kinds of values, and filler requests
share the topics. Turns are ``user`` / ``assistant`` (the speaker field; the bench ingests them
with those roles). As in ``generate``, one seed gives the same structure in both languages,
and nothing is stored.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from memstrata.tokens import count_tokens

from ..locomo.dataset import TURN_SPACING, Conversation, Question, Session, Turn
from .assistant_vocab import (
    ASKS,
    ASSISTANT_POOLS,
    CLOSERS,
    ECHOES,
    OPENERS,
    OTHERS,
    REPLIES,
    REQUESTS,
)
from .generate import _date, _month
from .vocab import LANGS

__all__ = ["ASSISTANT", "CATEGORY_NAMES", "USER", "generate_assistant"]

USER, ASSISTANT = "user", "assistant"
CATEGORY_NAMES: dict[int, str] = {
    1: "multi-session",
    2: "temporal",
    3: "update",
    4: "personal fact",
    6: "preference",
    7: "assistant said",
}
# An assistant's reply is this many tokens long (drawn per reply), as counted by the library.
REPLY_TOKENS = (100, 300)


@dataclass
class _Round:
    """One request and its reply; ``key`` marks a request holding a planted fact, ``said`` a
    sentence the reply must carry (marked ``said_key``); the reply repeats ``echo``'s values
    (the request's words that questions name, never one they ask for)."""

    topic: str
    request: str
    key: str | None = None
    said: str | None = None
    said_key: str | None = None
    echo: dict[str, str] = field(default_factory=dict)


@dataclass
class _Chat:
    lang: int
    rng: random.Random
    starts: list[datetime]
    rounds: dict[int, list[_Round]] = field(default_factory=dict)
    questions: list[tuple[str, str, int, tuple[str, ...]]] = field(default_factory=list)
    used: dict[str, set[str]] = field(default_factory=dict)
    keys: int = 0
    polite: bool = False  # ask some questions about the user as requests ("Can you remind me")

    def pick(self, pool: str) -> str:
        taken = self.used.setdefault(pool, set())
        values = [p[self.lang] for p in ASSISTANT_POOLS[pool]]
        value = self.rng.choice([v for v in values if v not in taken] or values)
        taken.add(value)
        return value

    def say(self, name: str, **fields: str) -> str:
        return REQUESTS[name][self.lang].format(**fields)

    def key(self) -> str:
        self.keys += 1
        return f"k{self.keys}"

    def plant(
        self, session: int, topic: str, name: str, echo: tuple[str, ...] = (), **fields: str
    ) -> str:
        """A request holding a fact, in ``session``; returns its evidence key."""
        k = self.key()
        words = {f: fields[f] for f in echo}
        self.rounds.setdefault(session, []).append(
            _Round(topic, self.say(name, **fields), k, echo=words)
        )
        return k

    def ask(self, name: str, answer: str, category: int, keys: tuple[str, ...], **f: str) -> None:
        if self.polite and f"{name}_polite" in REQUESTS:
            name = f"{name}_polite"
        self.questions.append((self.say(name, **f), answer, category, keys))

    def sessions(self, k: int, lo: int = 0, hi: int | None = None) -> list[int]:
        hi = len(self.starts) if hi is None else hi
        return sorted(self.rng.sample(range(lo, hi), k))


def _facts(c: _Chat) -> None:
    animal, pet = c.pick("animal"), c.pick("pet")
    k = c.plant(
        c.sessions(1)[0],
        "pet",
        "pet",
        ("animal",),
        animal=animal,
        pet=pet,
        age=str(c.rng.randint(2, 12)),
    )
    c.ask("pet_q", pet, 4, (k,), animal=animal)
    gathering, n = c.pick("gathering"), str(c.rng.randint(12, 60))
    k = c.plant(c.sessions(1)[0], "food", "count", ("gathering",), gathering=gathering, n=n)
    c.ask("count_q", n, 4, (k,), gathering=gathering)


def _preferences(c: _Chat) -> None:
    for name, pool, topic in (
        ("genre", "genre", "music"),
        ("diet", "diet", "health"),
        ("allergy", "allergen", "health"),
    ):
        value = c.pick(pool)
        k = c.plant(c.sessions(1)[0], topic, name, (), **{pool: value})
        c.ask(f"{name}_q", value, 6, (k,))


def _updates(c: _Chat) -> None:
    n = len(c.starts)
    co1, co2 = c.pick("company"), c.pick("company")
    s1, s2 = c.sessions(2, 0, n)
    k1 = c.plant(s1, "work", "job_start", job=c.pick("job"), company=co1)
    k2 = c.plant(s2, "work", "job_switch", job=c.pick("job"), company=co1, company2=co2)
    c.ask("job_q_now", co2, 3, (k2,))
    c.ask("job_q_before", co1, 3, (k1, k2), company2=co2)
    city1, city2 = c.pick("city"), c.pick("city")
    s1, s2 = c.sessions(2)
    c.plant(s1, "home", "home_first", city=city1)
    k2 = c.plant(s2, "home", "home_move", city2=city2)
    c.ask("home_q", city2, 3, (k2,))
    r1, r2, food = c.pick("restaurant"), c.pick("restaurant"), c.pick("food")
    s1, s2 = c.sessions(2)
    c.plant(s1, "food", "fav", food=food, restaurant=r1)
    k2 = c.plant(s2, "food", "fav_new", restaurant=r1, restaurant2=r2)
    c.ask("fav_q", r2, 3, (k2,))


def _temporal(c: _Chat) -> None:
    s_today, s_last = c.sessions(2)
    event = c.pick("event")
    k = c.plant(s_today, "fitness", "event_today", ("event",), event=event)
    c.ask("event_q", _date(c.starts[s_today], c.lang), 2, (k,), event=event)
    event, day = c.pick("event"), c.rng.randrange(7)
    start = c.starts[s_last]
    if c.lang == 1:  # "上周六": the Saturday of the previous calendar week
        when = start - timedelta(days=start.weekday() + 7 - day)
    else:  # "last Saturday": the latest one before the day it is said
        when = start - timedelta(days=(start.weekday() - day) % 7 or 7)
    weekday = ASSISTANT_POOLS["weekday"][day][c.lang]
    k = c.plant(s_last, "fitness", "event_last", ("event",), event=event, weekday=weekday)
    c.ask("event_q", _date(when, c.lang), 2, (k,), event=event)
    by_month: dict[tuple[int, int], int] = {}
    for i, st in enumerate(c.starts):
        by_month.setdefault((st.year, st.month), i)
    chosen = sorted(c.rng.sample(sorted(by_month.values()), min(3, len(by_month))))
    books = [(s, c.pick("book")) for s in chosen]
    keys = [c.plant(s, "reading", "reading", book=b) for s, b in books]
    for (s, book), k in c.rng.sample(list(zip(books, keys, strict=True)), min(2, len(books))):
        c.ask("reading_q", book, 2, (k,), month=_month(c.starts[s], c.lang))


def _multi_session(c: _Chat) -> None:
    sports = [c.pick("sport"), c.pick("sport")]
    keys = []
    for s, sport in zip(c.sessions(2), sports, strict=True):
        day = ASSISTANT_POOLS["weekday"][c.rng.randrange(7)][c.lang]
        keys.append(c.plant(s, "fitness", "sport", sport=sport, weekday=day))
    answer = "、".join(sports) if c.lang == 1 else f"{sports[0]} and {sports[1]}"
    c.ask("sport_q", answer, 1, tuple(keys))
    for rel in (("brother", "哥哥"), ("sister", "姐姐")):
        sib, city, job = c.pick("sibling"), c.pick("city"), c.pick("job")
        s1, s2 = c.sessions(2)
        k1 = c.plant(s1, "family", "sib_city", ("sib", "city"), rel=rel[c.lang], sib=sib, city=city)
        k2 = c.plant(s2, "family", "sib_job", ("sib",), sib=sib, job=job)
        c.ask("sib_q", job, 1, (k1, k2), city=city)


def _assistant_said(c: _Chat) -> None:
    book = c.pick("book")
    _said(c, "reading", c.say("ask_book"), c.say("said_book", book=book), "said_book_q", book, {})
    business, brand = c.pick("business"), c.pick("brand")
    _said(
        c,
        "business",
        c.say("ask_name", business=business),
        c.say("said_name", brand=brand),
        "said_name_q",
        brand,
        {"business": business},
    )
    city, area = c.pick("city"), c.pick("hotel_area")
    _said(
        c,
        "travel",
        c.say("ask_stay", city=city),
        c.say("said_stay", city=city, hotel_area=area),
        "said_stay_q",
        area,
        {"city": city},
    )


def _said(
    c: _Chat, topic: str, request: str, said: str, q: str, answer: str, named: dict[str, str]
) -> None:
    """A request whose reply carries ``said``; the question names ``named`` (echoed)."""
    k = c.key()
    c.rounds.setdefault(c.sessions(1)[0], []).append(
        _Round(topic, request, said=said, said_key=k, echo=named)
    )
    c.ask(q, answer, 7, (k,), **named)


def _filler(c: _Chat) -> _Round:
    if c.rng.random() < 0.3:
        tpl = c.rng.choice(OTHERS)[c.lang]
        fields = {name: c.rng.choice(ASSISTANT_POOLS[name])[c.lang] for name in _OTHER_FIELDS}
        fields["rel"] = c.rng.choice((("brother", "哥哥"), ("sister", "姐姐")))[c.lang]
        topic = c.rng.choice(("pet", "work", "home", "food", "reading", "fitness", "family"))
    else:
        topic, pair = c.rng.choice(ASKS)
        tpl = pair[c.lang]
        fields = {name: c.rng.choice(ASSISTANT_POOLS[name])[c.lang] for name in _ASK_FIELDS}
    used = {f: v for f, v in fields.items() if f in ECHOES and "{" + f + "}" in tpl}
    return _Round(topic, tpl.format(**fields), echo=used)


_ASK_FIELDS = (
    "animal",
    "gathering",
    "event",
    "sport",
    "city",
    "business",
    "book",
    "genre",
    "allergen",
    "job",
)
_OTHER_FIELDS = (
    "name",
    "animal",
    "pet",
    "job",
    "company",
    "city",
    "restaurant",
    "food",
    "book",
    "sport",
    "event",
    "genre",
    "allergen",
)


def _reply(c: _Chat, r: _Round) -> str:
    """An assistant's reply of 100–300 tokens: an opener, sentences of the round's topic (then
    of other topics), ``r.said`` somewhere among them, a closer. Draws the same random numbers
    in both languages (only the sentence count differs), so the languages stay aligned."""
    target = c.rng.randint(*REPLY_TOKENS)
    pool = list(REPLIES[r.topic])
    c.rng.shuffle(pool)
    others = [p for t, ps in sorted(REPLIES.items()) if t != r.topic for p in ps]
    c.rng.shuffle(others)
    opener, closer = c.rng.choice(OPENERS)[c.lang], c.rng.choice(CLOSERS)[c.lang]
    where = c.rng.random()
    sep = "" if c.lang == 1 else " "
    echoes = [c.rng.choice(ECHOES[f])[c.lang].format(**r.echo) for f in sorted(r.echo)]
    body = ([r.said] if r.said is not None else []) + echoes
    for pair in pool + others:
        if count_tokens(sep.join([opener, *body, closer])) >= target:
            break
        body.append(pair[c.lang])
    if r.said is not None:
        body.insert(int(where * len(body)), body.pop(0))
    return sep.join([opener, *body, closer])


def _chat(lang: str, index: int, seed: int) -> Conversation:
    li = LANGS.index(lang)
    rng = random.Random(seed * 1000 + index + 500)
    first = datetime(2023, 1, 2, tzinfo=UTC) + timedelta(days=rng.randint(0, 300))
    starts = [first.replace(hour=rng.randint(8, 21), minute=rng.choice((0, 15, 30, 45)))]
    for _ in range(rng.randint(24, 32) - 1):
        nxt = starts[-1] + timedelta(days=rng.randint(3, 20))
        starts.append(nxt.replace(hour=rng.randint(8, 21), minute=rng.choice((0, 15, 30, 45))))
    c = _Chat(li, rng, starts, polite=index % 2 == 1)
    for plant in (_facts, _preferences, _updates, _temporal, _multi_session, _assistant_said):
        plant(c)
    long_sessions = set(rng.sample(range(len(starts)), 3))
    sessions: list[Session] = []
    dia_of: dict[str, str] = {}
    for s, start in enumerate(starts):
        planted = c.rounds.get(s, [])
        size = rng.randint(8, 12) if s in long_sessions else rng.randint(2, 6)
        rounds = list(planted)
        for _ in range(max(size - len(planted), 1)):
            rounds.insert(rng.randint(0, len(rounds)), _filler(c))
        turns: list[Turn] = []
        for r in rounds:
            for speaker, text, key in (
                (USER, r.request, r.key),
                (ASSISTANT, _reply(c, r), r.said_key),
            ):
                dia = f"D{s + 1}:{len(turns) + 1}"
                if key:
                    dia_of[key] = dia
                turns.append(Turn(dia, speaker, text, s + 1, start + len(turns) * TURN_SPACING))
        sessions.append(Session(s + 1, _date(start, li), start, tuple(turns)))
    questions = tuple(
        Question(q, a, cat, tuple(dia_of[k] for k in keys)) for q, a, cat, keys in c.questions
    )
    return Conversation(f"assist-{lang}-{index}", USER, ASSISTANT, tuple(sessions), questions)


def generate_assistant(lang: str, conversations: int = 8, seed: int = 2024) -> list[Conversation]:
    """``conversations`` user ↔ assistant conversations in ``lang`` ("en" or "zh")."""
    if lang not in LANGS:
        raise ValueError(f"language must be one of {LANGS}, not {lang!r}")
    return [_chat(lang, i, seed) for i in range(conversations)]
