"""Deterministic, chat-like synthetic text for the scale benchmark (English and some Chinese).

Everything derives from one seed through :class:`random.Random`, so the same seed gives the
same corpus on every machine; nothing is stored in the repository. Texts mix small talk,
plans, preferences, facts with names, places, dates and numbers, roughly as a long-running
assistant conversation does; about one in eight is Chinese.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ..context.dates import MONTH_NAMES as _MONTHS

__all__ = [
    "SynthMessage",
    "synth_messages",
    "synth_messages_zh",
    "synth_queries",
    "synth_queries_zh",
]

_NAMES = [
    "Alice",
    "Bob",
    "Carmen",
    "Dmitri",
    "Elena",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jonas",
    "Kemi",
    "Liam",
    "Maya",
    "Noor",
    "Oscar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sami",
    "Tara",
]
_PLACES = [
    "Lisbon",
    "Kyoto",
    "Nairobi",
    "Toronto",
    "Berlin",
    "Lima",
    "Oslo",
    "Seoul",
    "Austin",
    "Porto",
    "Hanoi",
    "Dublin",
    "Cape Town",
    "Melbourne",
    "Prague",
]
_THINGS = [
    "pottery class",
    "marathon training",
    "sourdough starter",
    "job interview",
    "guitar lessons",
    "garden project",
    "book club",
    "camping trip",
    "photography course",
    "team offsite",
    "tax return",
    "apartment move",
    "dentist appointment",
    "volunteer shift",
    "birthday party",
    "chess tournament",
    "yoga retreat",
    "coding bootcamp",
    "piano recital",
    "wedding planning",
]
_FOODS = [
    "ramen",
    "tacos",
    "green curry",
    "falafel",
    "paella",
    "dumplings",
    "lasagna",
    "pho",
    "sushi",
    "biryani",
]
_FEELINGS = [
    "excited",
    "nervous",
    "tired",
    "proud",
    "relieved",
    "curious",
    "overwhelmed",
    "happy",
    "frustrated",
    "calm",
]
_EN = [
    "I signed up for a {thing} in {place} starting {date}.",
    "My friend {name} recommended a great {food} place near the station in {place}.",
    "Honestly I feel {feeling} about the {thing} next week.",
    "Can you remind me that the {thing} moved to {date}? {name} changed it.",
    "We spent {n} hours on the {thing} yesterday and it finally worked out.",
    "I prefer {food} over {food2} these days, especially after the trip to {place}.",
    "{name} and I are planning to visit {place} in {month}, maybe for {n} days.",
    "The budget for the {thing} is about {n}00 dollars, which is more than I expected.",
    "Thanks! That really helps with the {thing}.",
    "Quick update: {name} got the offer in {place}, we celebrated with {food}.",
    "I keep forgetting my password for the {thing} portal, it's so annoying.",
    "Last {month} I ran {n} kilometres for the first time during {thing}.",
]
_ZH = [
    "我下周要去{place_zh}参加{thing_zh}，有点{feeling_zh}。",
    "{name}推荐了一家很好吃的{food_zh}店。",
    "提醒我一下，{thing_zh}改到{n}号了。",
    "最近我更喜欢吃{food_zh}，比以前健康多了。",
    "我们花了{n}个小时准备{thing_zh}，终于完成了。",
]
_PLACES_ZH = ["上海", "北京", "杭州", "成都", "深圳", "西安", "广州"]
_THINGS_ZH = ["陶艺课", "马拉松训练", "面试", "吉他课", "读书会", "露营", "搬家", "婚礼"]
_FOODS_ZH = ["火锅", "饺子", "拉面", "小笼包", "烤鸭", "麻辣烫"]
_FEELINGS_ZH = ["紧张", "兴奋", "累", "开心", "期待"]


@dataclass(frozen=True, slots=True)
class SynthMessage:
    user: int
    role: str
    content: str
    observed_at: datetime


def _fill(rng: random.Random, start: datetime) -> str:
    if rng.random() < 0.125:
        tpl = rng.choice(_ZH)
        return tpl.format(
            place_zh=rng.choice(_PLACES_ZH),
            thing_zh=rng.choice(_THINGS_ZH),
            food_zh=rng.choice(_FOODS_ZH),
            feeling_zh=rng.choice(_FEELINGS_ZH),
            name=rng.choice(_NAMES),
            n=rng.randint(2, 28),
        )
    tpl = rng.choice(_EN)
    day = start + timedelta(days=rng.randint(1, 400))
    return tpl.format(
        thing=rng.choice(_THINGS),
        place=rng.choice(_PLACES),
        name=rng.choice(_NAMES),
        food=rng.choice(_FOODS),
        food2=rng.choice(_FOODS),
        feeling=rng.choice(_FEELINGS),
        n=rng.randint(2, 12),
        month=rng.choice(_MONTHS),
        date=f"{day.day} {_MONTHS[day.month - 1]}",
    )


def synth_messages(total: int, users: int, seed: int = 7) -> Iterator[SynthMessage]:
    """``total`` messages split evenly over ``users`` users, user by user, in time order.

    A message is one or two template sentences, so lengths vary (about 10–45 words); roles
    alternate user/assistant.
    """
    rng = random.Random(seed)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    per_user, extra = divmod(total, users)
    for user in range(users):
        for j in range(per_user + (1 if user < extra else 0)):
            text = _fill(rng, start)
            if rng.random() < 0.4:
                text = f"{text} {_fill(rng, start)}"
            yield SynthMessage(
                user=user,
                role="user" if j % 2 == 0 else "assistant",
                content=text,
                observed_at=start + timedelta(seconds=30 * j),
            )


def synth_queries(count: int, seed: int = 11) -> list[str]:
    """Questions in the corpus's vocabulary, about one in eight in Chinese."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        if rng.random() < 0.125:
            out.append(f"{rng.choice(_THINGS_ZH)}是什么时候？")
        else:
            out.append(
                rng.choice(
                    [
                        f"When is the {rng.choice(_THINGS)}?",
                        f"What food does {rng.choice(_NAMES)} recommend in {rng.choice(_PLACES)}?",
                        f"How do I feel about the {rng.choice(_THINGS)}?",
                        f"Who is planning to visit {rng.choice(_PLACES)}?",
                    ]
                )
            )
    return out


def synth_messages_zh(total: int, users: int, seed: int = 7) -> Iterator[SynthMessage]:
    """Like :func:`synth_messages`, all in Chinese: the turns of the synthetic Chinese
    conversations (:mod:`memstrata.bench.convo`), repeated with a running number when more are
    needed, so the vocabulary is that of real chat rather than of a few templates."""
    from .convo.generate import generate

    texts = [t.text for c in generate("zh", 12, seed) for t in c.turns]
    start = datetime(2024, 1, 1, tzinfo=UTC)
    per_user, extra = divmod(total, users)
    i = 0
    for user in range(users):
        for j in range(per_user + (1 if user < extra else 0)):
            text = texts[i % len(texts)]
            if i >= len(texts):
                text = f"{text}（第{i // len(texts) + 1}次提到）"
            i += 1
            yield SynthMessage(
                user=user,
                role="user" if j % 2 == 0 else "assistant",
                content=text,
                observed_at=start + timedelta(seconds=30 * j),
            )


def synth_queries_zh(count: int, seed: int = 11) -> list[str]:
    """Chinese questions about the Chinese corpus (those of the synthetic conversations)."""
    from .convo.generate import generate

    questions = [q.question for c in generate("zh", 12, seed) for q in c.questions]
    return [questions[i % len(questions)] for i in range(count)]
