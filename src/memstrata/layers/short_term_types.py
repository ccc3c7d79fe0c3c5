"""Short-term memory's pure rules: rounds, the window, rule compression (no store).

:mod:`memstrata.layers.short_term` (sync) and its async source re-export everything here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from memstrata.errors import ValidationError
from memstrata.records import Content, MemoryRecord, Role
from memstrata.tokens import TokenCounter, count_tokens

__all__ = [
    "TRUNCATION_MARKER",
    "compress_for_context",
    "group_rounds",
    "is_acknowledgement",
    "is_error_message",
    "left_window",
    "window_of",
]

TRUNCATION_MARKER = " …[truncated {n} chars]"

# Whole acknowledgements, lower-cased with punctuation and spaces removed. Bare assent
# ("yes", "对", "可以") is kept out on purpose: it may answer a question and decide something.
_ACK_TEXT = (
    "ok okay k kk thanks thank thankyou thx ty gotit sure cool nice great alright np "
    "noproblem soundsgood perfect understood roger lol haha "
    "好 好的 好吧 谢谢 多谢 感谢 嗯 嗯嗯 收到 知道了 明白 明白了 好滴 哈哈 没问题"
)
_ACK_PHRASES = frozenset(_ACK_TEXT.split())
_ACK_SPLIT = re.compile(r"[\s\W_]+", re.UNICODE)
_ERROR = re.compile(
    r"^\s*(?:error\b|exception\b|traceback\b|fatal\b|failed\b|failure\b|\w+(?:Error|Exception):)"
    r"|^\s*(?:错误|异常|失败|报错)",
    re.IGNORECASE,
)


def _by_time(messages: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    # sorted() is stable: the store's insertion order breaks ties of equal observed_at.
    return sorted(messages, key=lambda m: m.observed_at)


def group_rounds(messages: Sequence[MemoryRecord]) -> list[list[MemoryRecord]]:
    """Split a session's turns (any order) into rounds, oldest first.

    A round opens at every user turn; turns before the first user turn form their own round.
    """
    rounds: list[list[MemoryRecord]] = []
    for message in _by_time(messages):
        if message.role is Role.USER or not rounds:
            rounds.append([message])
        else:
            rounds[-1].append(message)
    return rounds


def window_of(
    rounds: Sequence[Sequence[MemoryRecord]],
    *,
    max_rounds: int,
    token_cap: int,
    counter: TokenCounter | None = None,
) -> list[MemoryRecord]:
    """The turns still in the window: the last ``max_rounds`` rounds, then as many of the
    newest turns as fit in ``token_cap`` tokens (the oldest go first; a turn is kept whole or
    not at all, so the window never exceeds the cap)."""
    if max_rounds < 1 or token_cap < 1:
        raise ValidationError("short-term max_rounds and token_cap must be at least 1")
    recent = [m for r in rounds[-max_rounds:] for m in r]
    kept: list[MemoryRecord] = []
    used = 0
    for message in reversed(recent):
        cost = count_tokens(message.text, counter)
        if used + cost > token_cap:
            break
        kept.append(message)
        used += cost
    kept.reverse()
    return kept


def left_window(
    messages: Sequence[MemoryRecord], window: Sequence[MemoryRecord]
) -> list[MemoryRecord]:
    """The turns that have left the window (every turn older than its first), oldest first."""
    ordered = _by_time(messages)
    if not window:
        return ordered
    inside = {m.id for m in window}
    first = next(i for i, m in enumerate(ordered) if m.id in inside)
    return ordered[:first]


def is_acknowledgement(text: str, *, max_chars: int = 20) -> bool:
    """A short message made only of acknowledgement words ("ok thanks!", "好的，谢谢")."""
    stripped = text.strip()
    if not stripped or len(stripped) >= max_chars:
        return False
    parts = [p for p in _ACK_SPLIT.split(stripped.lower()) if p]
    if not parts:
        return False
    return all(_is_ack_part(p) for p in parts)


def _is_ack_part(part: str) -> bool:
    """Whether ``part`` is a concatenation of acknowledgement phrases (Chinese has no
    spaces: "好的谢谢" is "好的" + "谢谢")."""
    if part in _ACK_PHRASES:
        return True
    return any(
        part.startswith(p) and _is_ack_part(part[len(p) :])
        for p in _ACK_PHRASES
        if len(p) < len(part)
    )


def is_error_message(text: str) -> bool:
    return bool(_ERROR.search(text))


def compress_for_context(
    messages: Sequence[MemoryRecord], *, tool_max_chars: int = 500, ack_max_chars: int = 20
) -> list[MemoryRecord]:
    """Rule compression for rendering (seed 000 §7); returns new record objects, never
    touches the store. Order is kept."""
    out: list[MemoryRecord] = []
    seen_errors: set[str] = set()
    for message in messages:
        text = message.text
        if is_acknowledgement(text, max_chars=ack_max_chars):
            continue
        if is_error_message(text):
            key = " ".join(text.split())
            if key in seen_errors:
                continue
            seen_errors.add(key)
        if message.role is Role.TOOL and len(text) > tool_max_chars:
            cut = text[:tool_max_chars] + TRUNCATION_MARKER.format(n=len(text) - tool_max_chars)
            message = replace(
                message, content=Content(cut, message.content.summary, message.content.structured)
            )
        out.append(message)
    return out
