"""A synthetic multi-session conversational set, English and Chinese, generated from a seed.

Two speakers talk over 18–24 dated sessions (three of them long, 80–120 turns); small talk
that shares the facts' vocabulary, and distractor statements about other people with the same
kinds of values, fill every session. Questions are worded differently from the statements.
Planted in it, with questions whose gold answer and evidence turns are known:

- single-hop (4): a pet's name said in a short reply after the question that names the animal;
  the number of guests or a room's colour said in a reply that only makes sense after its
  question; the other speaker has the same kinds of facts (distractors);
- multi-hop (1): the job of "the sibling who lives in X" (city and job said in different
  sessions, two siblings); the sports someone took lessons in (two sessions, the other
  speaker took another);
- temporal (2): when an event happened ("today" → the session's date, "last Saturday" →
  the date it resolves to); which book was being read in a given month (three books in three
  months: the month in the question decides);
- update (3): the current job (after up to two changes), city and favourite restaurant (the
  old values are still in the history), and the employer before a change.

The same seed gives the same conversations in both languages (the Chinese set is the English
one's structure with Chinese words), so their numbers can be compared. Nothing is stored:
``generate`` builds the set in memory in well under a second. The category ids match
LoCoMo's first four (1 multi-hop, 2 temporal, 4 single-hop), with 3 meaning "update" here.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from ...context.dates import MONTH_NAMES as _MONTHS
from ..locomo.dataset import TURN_SPACING, Conversation, Question, Session, Turn
from .vocab import FILLER, LANGS, POOLS, SCRIPTS

__all__ = ["CATEGORY_NAMES", "generate"]

CATEGORY_NAMES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "update", 4: "single-hop"}


@dataclass
class _Planned:
    speaker: str
    text: str
    key: str | None = None


@dataclass
class _Conv:
    lang: int
    rng: random.Random
    a: str
    b: str
    starts: list[datetime]
    blocks: dict[int, list[list[_Planned]]] = field(default_factory=dict)
    questions: list[tuple[str, str, int, tuple[str, ...]]] = field(default_factory=list)
    used: dict[str, set[str]] = field(default_factory=dict)
    keys: int = 0

    def pick(self, pool: str) -> str:
        """A value of ``pool`` in this language not used yet in this conversation."""
        taken = self.used.setdefault(pool, set())
        choices = [p[self.lang] for p in POOLS[pool] if p[self.lang] not in taken]
        value = self.rng.choice(choices or [p[self.lang] for p in POOLS[pool]])
        taken.add(value)
        return value

    def say(self, name: str, **fields: str) -> str:
        return SCRIPTS[name][self.lang].format(**fields)

    def block(self, session: int, *turns: _Planned) -> None:
        self.blocks.setdefault(session, []).append(list(turns))

    def key(self) -> str:
        self.keys += 1
        return f"k{self.keys}"

    def ask(
        self, name: str, answer: str, category: int, keys: tuple[str, ...], **fields: str
    ) -> None:
        self.questions.append((self.say(name, **fields), answer, category, keys))


def _date(when: datetime, lang: int) -> str:
    if lang == 1:
        return f"{when.year}年{when.month}月{when.day}日"
    return f"{when.day} {_MONTHS[when.month - 1]} {when.year}"


def _month(when: datetime, lang: int) -> str:
    return f"{when.year}年{when.month}月" if lang == 1 else f"{_MONTHS[when.month - 1]} {when.year}"


def _sessions(c: _Conv, k: int, lo: int = 0, hi: int | None = None) -> list[int]:
    """``k`` distinct session indexes in [lo, hi), in time order."""
    hi = len(c.starts) if hi is None else hi
    return sorted(c.rng.sample(range(lo, hi), k))


def _pets(c: _Conv) -> None:
    animal = c.pick("animal")
    for who, other in ((c.a, c.b), (c.b, c.a)):
        if who == c.b and c.rng.random() < 0.5:
            animal = c.pick("animal")
        pet = c.pick("pet")
        s = _sessions(c, 1)[0]
        k1, k2 = c.key(), c.key()
        c.block(
            s,
            _Planned(who, c.say("pet_news", animal=animal), k1),
            _Planned(other, c.say("pet_ask")),
            _Planned(who, c.say("pet_name", pet=pet), k2),
        )
        c.ask("pet_q", pet, 4, (k1, k2), who=who, animal=animal)


def _job(c: _Conv) -> None:
    job1, job2, co1, co2 = c.pick("job"), c.pick("job"), c.pick("company"), c.pick("company")
    s1, s2 = _sessions(c, 2, 0, len(c.starts) - 1)
    s2 = max(s2, s1 + 2) if s1 + 2 < len(c.starts) else s2
    k1, k2 = c.key(), c.key()
    c.block(
        s1,
        _Planned(c.a, c.say("job_start", job=job1, company=co1), k1),
        _Planned(c.b, c.say("job_react", company=co1)),
    )
    c.block(s2, _Planned(c.a, c.say("job_switch", job=job2, company=co1, company2=co2), k2))
    c.ask("job_q_before", co1, 3, (k1, k2), who=c.a, company2=co2)
    if s2 + 2 < len(c.starts):
        job3, co3 = c.pick("job"), c.pick("company")
        k3 = c.key()
        s3 = c.rng.randrange(s2 + 2, len(c.starts))
        c.block(s3, _Planned(c.a, c.say("job_switch", job=job3, company=co2, company2=co3), k3))
        c.ask("job_q_now", job3, 3, (k3,), who=c.a)
    else:
        c.ask("job_q_now", job2, 3, (k2,), who=c.a)
    kb = c.key()
    c.block(
        _sessions(c, 1)[0],
        _Planned(c.b, c.say("job_start", job=c.pick("job"), company=c.pick("company")), kb),
    )


def _home(c: _Conv) -> None:
    city1, city2 = c.pick("city"), c.pick("city")
    s1, s2 = _sessions(c, 2)
    k1, k2 = c.key(), c.key()
    c.block(s1, _Planned(c.a, c.say("home_first", city=city1), k1))
    c.block(s2, _Planned(c.a, c.say("home_move", city2=city2), k2))
    c.ask("home_q", city2, 3, (k2,), who=c.a)
    c.block(_sessions(c, 1)[0], _Planned(c.b, c.say("home_first", city=c.pick("city"))))


def _events(c: _Conv) -> None:
    plan = [
        (c.a, "event_today"),
        (c.a, "event_today"),
        (c.a, "event_last"),
        (c.b, "event_today"),
        (c.b, "event_last"),
    ]
    for (who, tpl), s in zip(plan, _sessions(c, len(plan)), strict=True):
        event = c.pick("event")
        start = c.starts[s]
        k = c.key()
        if tpl == "event_today":
            text = c.say(tpl, event=event, feeling=c.pick("feeling"))
            when = start
        else:
            day = c.rng.randrange(7)
            if c.lang == 1:
                # "上周六" is the Saturday of the previous calendar week (Monday to Sunday),
                # not the latest Saturday: said on a Sunday it is eight days back.
                when = start - timedelta(days=start.weekday() + 7 - day)
            else:
                back = (start.weekday() - day) % 7 or 7  # "last Saturday": the latest one
                when = start - timedelta(days=back)
            text = c.say(tpl, event=event, weekday=POOLS["weekday"][day][c.lang])
        c.block(s, _Planned(who, text, k))
        c.ask("event_q", _date(when, c.lang), 2, (k,), who=who, event=event)


def _reading(c: _Conv) -> None:
    by_month: dict[tuple[int, int], int] = {}
    for i, start in enumerate(c.starts):
        by_month.setdefault((start.year, start.month), i)
    sessions = sorted(c.rng.sample(sorted(by_month.values()), min(3, len(by_month))))
    books = []
    for s in sessions:
        book, k = c.pick("book"), c.key()
        c.block(s, _Planned(c.a, c.say("reading", book=book), k))
        books.append((s, book, k))
    for s, book, k in c.rng.sample(books, min(2, len(books))):
        c.ask("reading_q", book, 2, (k,), who=c.a, month=_month(c.starts[s], c.lang))


def _siblings(c: _Conv) -> None:
    rels = (("brother", "哥哥"), ("sister", "姐姐"))
    for rel in rels:
        sib, city, job = c.pick("sibling"), c.pick("city"), c.pick("job")
        s1, s2 = _sessions(c, 2)
        k1, k2 = c.key(), c.key()
        c.block(s1, _Planned(c.a, c.say("sib_city", rel=rel[c.lang], sib=sib, city=city), k1))
        c.block(s2, _Planned(c.a, c.say("sib_job", sib=sib, job=job), k2))
        c.ask("sib_q", job, 1, (k1, k2), who=c.a, city=city)
        s3 = _sessions(c, 1)[0]
        c.block(
            s3,
            _Planned(
                c.b, c.say("sib_city", rel=rel[c.lang], sib=c.pick("sibling"), city=c.pick("city"))
            ),
        )


def _sports(c: _Conv) -> None:
    s1, s2, s3 = _sessions(c, 3)
    mine = [c.pick("sport"), c.pick("sport")]
    keys = []
    for s, sport in zip((s1, s2), mine, strict=True):
        k = c.key()
        day = POOLS["weekday"][c.rng.randrange(7)][c.lang]
        c.block(s, _Planned(c.a, c.say("sport", sport=sport, weekday=day), k))
        keys.append(k)
    day = POOLS["weekday"][c.rng.randrange(7)][c.lang]
    c.block(s3, _Planned(c.b, c.say("sport", sport=c.pick("sport"), weekday=day)))
    answer = "、".join(mine) if c.lang == 1 else f"{mine[0]} and {mine[1]}"
    c.ask("sport_q", answer, 1, tuple(keys), who=c.a)


def _favourite(c: _Conv) -> None:
    r1, r2, food = c.pick("restaurant"), c.pick("restaurant"), c.pick("food")
    s1, s2 = _sessions(c, 2)
    k1, k2 = c.key(), c.key()
    c.block(s1, _Planned(c.a, c.say("fav", food=food, restaurant=r1), k1))
    c.block(s2, _Planned(c.a, c.say("fav_new", restaurant=r1, restaurant2=r2), k2))
    c.ask("fav_q", r2, 3, (k2,), who=c.a)


def _short_replies(c: _Conv) -> None:
    gathering, n = c.pick("gathering"), str(c.rng.randint(12, 60))
    k1, k2 = c.key(), c.key()
    c.block(
        _sessions(c, 1)[0],
        _Planned(c.b, c.say("count_ask", gathering=gathering), k1),
        _Planned(c.a, c.say("count_say", n=n), k2),
    )
    c.ask("count_q", n, 4, (k1, k2), who=c.a, gathering=gathering)
    room, color = c.pick("room"), c.pick("color")
    k1, k2 = c.key(), c.key()
    c.block(
        _sessions(c, 1)[0],
        _Planned(c.b, c.say("paint_ask", room=room), k1),
        _Planned(c.a, c.say("paint_say", color=color), k2),
    )
    c.ask("paint_q", color, 4, (k1, k2), who=c.a, room=room)


def _filler(c: _Conv, speaker: str) -> str:
    rng = c.rng

    def one(avoid: str = "") -> tuple[str, str]:
        tpl = rng.choice([p[c.lang] for p in FILLER if p[c.lang] != avoid])
        fields = {
            name: rng.choice(POOLS[name])[c.lang]
            for name in (
                "name",
                "animal",
                "city",
                "job",
                "food",
                "sport",
                "event",
                "feeling",
                "weekday",
                "book",
                "pet",
                "company",
                "restaurant",
                "room",
                "color",
                "gathering",
            )
        }
        fields["n"] = str(rng.randint(12, 60))
        fields["rel"] = rng.choice((("brother", "哥哥"), ("sister", "姐姐")))[c.lang]
        return tpl.format(**fields), tpl

    text, tpl = one()
    if rng.random() < 0.35:
        text = f"{text}{'' if c.lang == 1 else ' '}{one(tpl)[0]}"
    return text


def _conversation(lang: str, index: int, seed: int) -> Conversation:
    li = LANGS.index(lang)
    rng = random.Random(seed * 1000 + index)
    names = rng.sample(POOLS["name"], 2)
    first = datetime(2023, 1, 2, tzinfo=UTC) + timedelta(days=rng.randint(0, 300))
    starts = [first.replace(hour=rng.randint(8, 21), minute=rng.choice((0, 15, 30, 45)))]
    for _ in range(rng.randint(18, 24) - 1):
        nxt = starts[-1] + timedelta(days=rng.randint(5, 24))
        starts.append(nxt.replace(hour=rng.randint(8, 21), minute=rng.choice((0, 15, 30, 45))))
    c = _Conv(li, rng, names[0][li], names[1][li], starts)
    c.used["name"] = {c.a, c.b}
    for plant in (
        _pets,
        _job,
        _home,
        _events,
        _reading,
        _siblings,
        _sports,
        _favourite,
        _short_replies,
    ):
        plant(c)
    long_sessions = set(rng.sample(range(len(starts)), 3))
    sessions: list[Session] = []
    dia_of: dict[str, str] = {}
    for s, start in enumerate(starts):
        blocks = c.blocks.get(s, [])
        planned = sum(len(b) for b in blocks)
        size = rng.randint(80, 120) if s in long_sessions else rng.randint(20, 40)
        n_fill = max(size - planned, 4)
        # Each block goes between two filler turns at a random place; order kept.
        slots = sorted(rng.randint(0, n_fill) for _ in blocks)
        flat: list[_Planned] = []
        bi = 0
        for i in range(n_fill + 1):
            while bi < len(blocks) and slots[bi] == i:
                flat.extend(blocks[bi])
                bi += 1
            if i < n_fill:
                speaker = c.a if (len(flat) % 2 == 0) else c.b
                flat.append(_Planned(speaker, _filler(c, speaker)))
        turns = []
        for t, p in enumerate(flat):
            dia = f"D{s + 1}:{t + 1}"
            if p.key:
                dia_of[p.key] = dia
            turns.append(Turn(dia, p.speaker, p.text, s + 1, start + t * TURN_SPACING))
        sessions.append(Session(s + 1, _date(start, li), start, tuple(turns)))
    questions = tuple(
        Question(q, a, cat, tuple(dia_of[k] for k in keys)) for q, a, cat, keys in c.questions
    )
    return Conversation(f"synth-{lang}-{index}", c.a, c.b, tuple(sessions), questions)


def generate(lang: str, conversations: int = 8, seed: int = 2024) -> list[Conversation]:
    """``conversations`` synthetic conversations in ``lang`` ("en" or "zh")."""
    if lang not in LANGS:
        raise ValueError(f"language must be one of {LANGS}, not {lang!r}")
    return [_conversation(lang, i, seed) for i in range(conversations)]
