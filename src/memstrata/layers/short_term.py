"""Short-term memory: the session buffer (PMemo's FIFO of rounds, seed 000's token cap).

The buffer is not a separate structure: it is a view over the session's ``message`` records
in the store, so it survives restarts and is purged with the user. A *round* starts at each
user turn and holds the replies that follow it (turns before the first user turn form a round
of their own). The window is the last ``short_term_rounds`` rounds, further cut to
``short_term_token_cap`` tokens by dropping the oldest turns first. Everything older than the
window has *left* it and is handed to mid-term memory and the rolling summary.

Rule compression (seed 000 §7) only changes how turns are *rendered* into a context, never
what is stored: tool output over ``tool_output_max_chars`` is truncated with a marker,
acknowledgements under ``ack_max_chars`` ("ok", "thanks", "好的") are dropped, and an error
message identical to an earlier one is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from ..errors import ValidationError
from ..filters import Filters
from ..records import Content, MemoryRecord, RecordType, Role
from ..scope import Scope
from ..tokens import TokenCounter, count_tokens, estimate_tokens
from .base import LayerContext

__all__ = [
    "ShortTermService",
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


class ShortTermService:
    """The session buffer over the store (needs ``scope.session``)."""

    def __init__(self, ctx: LayerContext, *, counter: TokenCounter | None = None) -> None:
        self._ctx = ctx
        self._counter = counter

    def messages(self, scope: Scope) -> list[MemoryRecord]:
        """Every active turn of the session, oldest first."""
        if scope.session is None:
            raise ValidationError("short-term memory is per session: pass a scope with session=")
        filters = Filters(types=frozenset({RecordType.MESSAGE}))
        out: list[MemoryRecord] = []
        page = 1000
        while True:
            batch = self._ctx.store.list(
                scope, filters, limit=page, offset=len(out), newest_first=False
            )
            out.extend(batch)
            if len(batch) < page:
                return _by_time(out)

    def rounds(self, scope: Scope) -> list[list[MemoryRecord]]:
        return group_rounds(self.messages(scope))

    def _split(self, scope: Scope) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
        messages = self.messages(scope)
        cfg = self._ctx.config
        window = window_of(
            group_rounds(messages),
            max_rounds=cfg.short_term_rounds,
            token_cap=cfg.short_term_token_cap,
            counter=self._counter,
        )
        return window, left_window(messages, window)

    def recent(self, scope: Scope) -> list[MemoryRecord]:
        """The newest turns of the session, enough to hold the window, oldest first.

        Reads newest-first a page at a time and stops once it has more round starts than
        the window keeps or more tokens than its cap, so the read path costs the same for a
        session of 30 turns and of 30,000."""
        if scope.session is None:
            raise ValidationError("short-term memory is per session: pass a scope with session=")
        cfg = self._ctx.config
        count = self._counter or estimate_tokens
        filters = Filters(types=frozenset({RecordType.MESSAGE}))
        out: list[MemoryRecord] = []
        starts = tokens = 0
        page = 100
        while True:
            batch = self._ctx.store.list(
                scope, filters, limit=page, offset=len(out), newest_first=True
            )
            out.extend(batch)
            starts += sum(1 for r in batch if r.role is Role.USER)
            tokens += sum(count(r.text) for r in batch)
            if (
                len(batch) < page
                or starts > cfg.short_term_rounds
                or tokens > cfg.short_term_token_cap
            ):
                return _by_time(out)

    def left_by(self, scope: Scope, ids: Sequence[str]) -> list[MemoryRecord]:
        """The turns that left the window *because* the turns ``ids`` arrived, oldest first.

        Within the session as of the newest of ``ids`` (later turns are ignored), these are
        the turns older than the window that were not older than the window before ``ids``.
        For turns added in order, the sets of successive jobs partition every turn that
        ever leaves the window, so each is handed on once — and a job reads only its own
        turns plus one window, however long the session (a job re-run gets the same set).
        """
        if scope.session is None:
            raise ValidationError("short-term memory is per session: pass a scope with session=")
        want = set(ids)
        cfg = self._ctx.config
        count = self._counter or estimate_tokens
        filters = Filters(types=frozenset({RecordType.MESSAGE}))
        read: list[MemoryRecord] = []  # newest first, from the newest of ``ids`` down
        found = starts = tokens = offset = 0
        page = 100
        while True:
            batch = self._ctx.store.list(
                scope, filters, limit=page, offset=offset, newest_first=True
            )
            offset += len(batch)
            for r in batch:
                if not read and r.id not in want:
                    continue  # newer than every turn of this job
                read.append(r)
                if r.id in want:
                    found += 1
                else:
                    starts += r.role is Role.USER
                    tokens += count(r.text)
            if len(batch) < page or (
                found == len(want)
                and (starts > cfg.short_term_rounds + 1 or tokens > cfg.short_term_token_cap)
            ):
                break
        if not read:
            return []
        ordered = list(reversed(read))
        before = [m for m in ordered if m.id not in want]
        after_left = left_window(
            ordered,
            window_of(
                group_rounds(ordered),
                max_rounds=cfg.short_term_rounds,
                token_cap=cfg.short_term_token_cap,
                counter=self._counter,
            ),
        )
        gone_before = (
            {
                m.id
                for m in left_window(
                    before,
                    window_of(
                        group_rounds(before),
                        max_rounds=cfg.short_term_rounds,
                        token_cap=cfg.short_term_token_cap,
                        counter=self._counter,
                    ),
                )
            }
            if before
            else set()
        )
        return [m for m in after_left if m.id not in gone_before]

    def window(self, scope: Scope) -> list[MemoryRecord]:
        """The turns in the window, oldest first (uncompressed)."""
        cfg = self._ctx.config
        return window_of(
            group_rounds(self.recent(scope)),
            max_rounds=cfg.short_term_rounds,
            token_cap=cfg.short_term_token_cap,
            counter=self._counter,
        )

    def overflowed(self, scope: Scope) -> list[MemoryRecord]:
        """The turns that have left the window, oldest first."""
        return self._split(scope)[1]

    def render(self, scope: Scope) -> list[MemoryRecord]:
        """The window after rule compression, for context assembly."""
        cfg = self._ctx.config
        return compress_for_context(
            self.window(scope),
            tool_max_chars=cfg.tool_output_max_chars,
            ack_max_chars=cfg.ack_max_chars,
        )
