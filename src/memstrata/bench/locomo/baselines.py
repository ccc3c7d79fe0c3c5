"""The seed's context baselines, as pure functions of the turns, a budget and a token counter.

Every method renders a turn the same way (:func:`format_turn`: date, speaker, words) so that
answer recall compares what each method *selects*, not how it prints. A context never
exceeds its budget: lines are counted one by one (plus one token for the line break) and a
line that does not fit is left out.

- sliding window: the latest turns that fit, contiguous, in order;
- random: turns drawn in a seeded random order, each kept when it still fits, shown in order;
- full history: every turn, no budget (its token count is reported beside it);
- ranked packing (BM25 only, dense only, hybrid): the lines of the ranked hits in rank order,
  each kept when it still fits.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

from .dataset import Turn

__all__ = [
    "format_date",
    "format_line",
    "format_turn",
    "full_history",
    "pack_ranked",
    "random_sample",
    "sliding_window",
]

TokenCount = Callable[[str], int]


def format_date(when: datetime) -> str:
    """``8 May 2023, 1:56 pm`` (day, month name, year: how LoCoMo answers write dates)."""
    hour = when.hour % 12 or 12
    ampm = "am" if when.hour < 12 else "pm"
    return f"{when.day} {when.strftime('%B')} {when.year}, {hour}:{when.minute:02d} {ampm}"


_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def format_line(text: str, when: datetime | None, speaker: str | None = None) -> str:
    """``[8 May 2023, 1:56 pm] Speaker: text``; Chinese text gets ``[2023年5月8日 13:56]``."""
    if when is not None and _CJK.search(text):
        head = f"[{when.year}年{when.month}月{when.day}日 {when.strftime('%H:%M')}] "
    else:
        head = f"[{format_date(when)}] " if when is not None else ""
    who = f"{speaker}: " if speaker and not text.startswith(f"{speaker}:") else ""
    return f"{head}{who}{text}"


def format_turn(turn: Turn) -> str:
    return format_line(turn.content, turn.observed_at, turn.speaker)


def _line_cost(line: str, count: TokenCount) -> int:
    return count(line) + 1


def pack_ranked(lines: Iterable[str], budget: int, count: TokenCount) -> list[str]:
    """Lines in the given order, each kept when it still fits in ``budget`` tokens."""
    out: list[str] = []
    used = 0
    seen: set[str] = set()
    for line in lines:
        if line in seen:
            continue
        cost = _line_cost(line, count)
        if used + cost <= budget:
            out.append(line)
            seen.add(line)
            used += cost
    return out


def sliding_window(turns: Sequence[Turn], budget: int, count: TokenCount) -> list[str]:
    """The latest turns that fit, contiguous, oldest first."""
    out: list[str] = []
    used = 0
    for turn in reversed(turns):
        line = format_turn(turn)
        cost = _line_cost(line, count)
        if used + cost > budget:
            break
        out.append(line)
        used += cost
    out.reverse()
    return out


def random_sample(turns: Sequence[Turn], budget: int, count: TokenCount, seed: int) -> list[str]:
    """Turns drawn in a seeded random order while they fit, shown in conversation order."""
    order = list(range(len(turns)))
    random.Random(seed).shuffle(order)
    chosen: list[int] = []
    used = 0
    for i in order:
        cost = _line_cost(format_turn(turns[i]), count)
        if used + cost <= budget:
            chosen.append(i)
            used += cost
    return [format_turn(turns[i]) for i in sorted(chosen)]


def full_history(turns: Sequence[Turn]) -> list[str]:
    return [format_turn(t) for t in turns]
