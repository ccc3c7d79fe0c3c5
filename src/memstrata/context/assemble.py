"""Fitting memory into the budget and rendering it in PMemo's order, pure.

Order (seed 004 §4.2): system prompt → key memory → long-term summaries → profile facts →
relevant memories (episodes, clusters, knowledge, past turns) → working memory → short-term
turns → the current input. Every memory line carries its date.

Selection is by priority, not order: key memory first (user-set before auto), then working
memory, then every other item by relevance; an item that does not fit is skipped (a shorter
one may still fit), so when the budget is short the least relevant go first. History turns
are taken newest first. Counting includes block headers and a per-message overhead, so the
result never exceeds ``plan.usable``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from ..errors import BudgetError
from .budget import BudgetPlan
from .dates import format_date, format_datetime

__all__ = [
    "BLOCKS",
    "MESSAGE_OVERHEAD",
    "AssembledContext",
    "ContextItem",
    "HistoryTurn",
    "assemble",
]

MESSAGE_OVERHEAD = 4  # role and separators of one chat message, in tokens

BLOCKS: tuple[tuple[str, str], ...] = (
    ("key", "## Key memory (always applies)"),
    ("summaries", "## Summaries of earlier conversation"),
    ("facts", "## What is known about the user"),
    ("relevant", "## Relevant memories"),
    ("working", "## Current task state"),
)
_BLOCK_NAMES = tuple(name for name, _ in BLOCKS)


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One memory offered to (and, if chosen, placed in) the context."""

    block: str
    text: str
    layer: str
    score: float
    record_id: str | None = None
    source_ids: tuple[str, ...] = ()
    observed_at: datetime | None = None
    priority: int = 0  # higher is kept first regardless of score (key, working)
    tokens: int = 0
    group: str | None = None  # a date line shown once above the items that share it
    digest: bool = False  # a summary, cluster or episode (it retells turns)

    def line(self) -> str:
        if self.group is not None:
            return self.text
        if self.block == "working" or self.observed_at is None:
            return f"- {self.text}"
        return f"- [{format_date(self.observed_at, self.text)}] {self.text}"


def _with_tokens(it: ContextItem, tokens: int) -> ContextItem:
    """``replace(it, tokens=tokens)`` without ``dataclasses.replace``'s field walk (a few
    µs each, for every item a context keeps; tests/context/test_assemble_copy.py checks
    that every field is carried)."""
    return ContextItem(
        it.block,
        it.text,
        it.layer,
        it.score,
        it.record_id,
        it.source_ids,
        it.observed_at,
        it.priority,
        tokens,
        it.group,
        it.digest,
    )


def _group_line(group: str) -> str:
    return f"[{group}]"


@dataclass(frozen=True, slots=True)
class HistoryTurn:
    role: str
    content: str
    observed_at: datetime | None = None
    record_id: str | None = None

    def rendered(self) -> str:
        if self.observed_at is None:
            return self.content
        return f"[{format_datetime(self.observed_at, self.content)}] {self.content}"


@dataclass(frozen=True, slots=True)
class AssembledContext:
    messages: list[dict[str, str]]
    items: list[ContextItem]
    history: list[HistoryTurn]
    tokens: int
    plan: BudgetPlan
    dropped: list[ContextItem] = field(default_factory=list)
    # Tokens of the memory share that packing left unused (its own part-by-part count): no
    # item costing more would have fitted.
    memory_room: int = 0

    @property
    def text(self) -> str:
        return "\n\n".join(f"{m['role']}: {m['content']}" for m in self.messages)


_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_MORE_DATES = 3  # other dates named after a repeated line, at most


def _date_of(it: ContextItem) -> str | None:
    if it.group is not None:
        return it.group
    return None if it.observed_at is None else format_date(it.observed_at, it.text)


def _merge_repeats(items: Sequence[ContextItem]) -> list[ContextItem]:
    """Relevant memories with the same words (a turn said again on another day, the same
    knowledge chunk twice) shown once: the best-scored one, followed by the other dates it
    was said on ("(also 3 May 2023, 9 June 2023)", "（也在2023年5月3日、2023年6月9日）"),
    with every copy's sources. Two copies cost a line twice and told nothing new; the dates
    are what differed, and they stay."""
    copies: dict[str, list[ContextItem]] = {}
    for it in items:
        if it.block == "relevant" and not it.digest and not it.priority:
            copies.setdefault(" ".join(it.text.split()), []).append(it)
    merged: dict[int, ContextItem | None] = {}
    for group in copies.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda it: -it.score)
        best = group[0]
        names: list[str] = []
        for it in sorted(group[1:], key=lambda it: it.observed_at or datetime.min):
            date = _date_of(it)
            if date is not None and date != _date_of(best) and date not in names:
                names.append(date)
        text = best.text
        if names:
            shown = names[:_MORE_DATES] + (["…"] if len(names) > _MORE_DATES else [])
            if _CJK.search(best.text):
                text = f"{text}（也在{'、'.join(shown)}）"
            else:
                text = f"{text} (also {', '.join(shown)})"
        sources = tuple(dict.fromkeys(sid for it in group for sid in it.source_ids))
        merged[id(best)] = replace(best, text=text, source_ids=sources)
        for it in group[1:]:
            merged[id(it)] = None
    if not merged:
        return list(items)
    out: list[ContextItem] = []
    for it in items:
        new = merged.get(id(it), it)
        if new is not None:
            out.append(new)
    return out


def _fit_memory(
    items: Sequence[ContextItem],
    cap: int,
    count: Callable[[str], int],
    digest_cap: int | None = None,
) -> tuple[list[ContextItem], list[ContextItem], int]:
    """Greedy by (priority, score); headers are paid for when a block first gets an item.
    Digests together take at most ``digest_cap`` tokens when it is given."""
    headers = dict(BLOCKS)
    ranked = sorted(items, key=lambda it: (-it.priority, -it.score))
    chosen: list[ContextItem] = []
    dropped: list[ContextItem] = []
    opened: set[str] = set()
    groups: set[tuple[str, str]] = set()
    used = MESSAGE_OVERHEAD if ranked else 0
    digests = 0
    for it in ranked:
        cost = count(it.line()) + 1
        if it.block not in opened:
            cost += count(headers[it.block]) + 2
        group = (it.block, it.group) if it.group is not None else None
        if group is not None and group not in groups:
            cost += count(_group_line(it.group or "")) + 1
        over_share = it.digest and digest_cap is not None and digests + cost > digest_cap
        if used + cost <= cap and not over_share:
            chosen.append(_with_tokens(it, cost))
            used += cost
            digests += cost if it.digest else 0
            opened.add(it.block)
            if group is not None:
                groups.add(group)
        else:
            dropped.append(it)
    return chosen, dropped, (used if chosen else 0)


def _render_memory(chosen: Sequence[ContextItem]) -> str:
    parts = []
    for name, header in BLOCKS:
        block = [it for it in chosen if it.block == name]
        if not block:
            continue
        if name != "key" and name != "working":
            # Dated groups first, in time order, so each date line is written once.
            block.sort(
                key=lambda it: (
                    it.group is None,
                    it.observed_at is None,
                    it.observed_at or datetime.min,
                )
            )
        lines = [header]
        current: str | None = None
        for it in block:
            if it.group is not None and it.group != current:
                lines.append(_group_line(it.group))
            current = it.group
            lines.append(it.line())
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _fit_history(
    turns: Sequence[HistoryTurn], cap: int, count: Callable[[str], int]
) -> tuple[list[HistoryTurn], int]:
    kept: list[HistoryTurn] = []
    used = 0
    for turn in reversed(turns):  # newest first
        cost = count(turn.rendered()) + MESSAGE_OVERHEAD
        if used + cost > cap:
            break
        kept.append(turn)
        used += cost
    kept.reverse()
    return kept, used


def assemble(
    *,
    plan: BudgetPlan,
    system_prompt: str | None,
    query: str | None,
    items: Sequence[ContextItem],
    history: Sequence[HistoryTurn],
    count: Callable[[str], int],
    digest_share: float | None = None,
) -> AssembledContext:
    """``digest_share``: the most of the memory share (what history leaves) that digests may
    take together; ``None`` = no limit."""
    for it in items:
        if it.block not in _BLOCK_NAMES:
            raise ValueError(f"unknown context block {it.block!r}")
    fixed = 0
    if system_prompt:
        fixed += count(system_prompt) + MESSAGE_OVERHEAD
    if query:
        fixed += count(query) + MESSAGE_OVERHEAD
    if fixed > plan.usable:
        raise BudgetError(
            f"the system prompt and input need {fixed} tokens but the budget leaves "
            f"{plan.usable} (of {plan.total}, {plan.reserve} reserved for the response): raise "
            "token_budget or shorten the system prompt"
        )
    remaining = plan.usable - fixed
    # Memory and history split what is left in the plan's proportion; each hands the other
    # what it does not use.
    share = plan.memory / max(1, plan.memory + plan.history)
    history_cap = remaining - int(remaining * share)
    kept_history, history_used = _fit_history(history, history_cap, count)
    memory_cap = remaining - history_used
    digest_cap = None if digest_share is None else int(memory_cap * digest_share)
    chosen, dropped, memory_used = _fit_memory(_merge_repeats(items), memory_cap, count, digest_cap)
    if memory_used < remaining - history_used and len(kept_history) < len(history):
        kept_history, history_used = _fit_history(history, remaining - memory_used, count)

    def render() -> list[dict[str, str]]:
        messages: list[dict[str, str]] = []
        if system_prompt:
            messages.append({"role": "system", "content": system_prompt})
        if chosen:
            messages.append({"role": "system", "content": _render_memory(chosen)})
        messages.extend({"role": t.role, "content": t.rendered()} for t in kept_history)
        if query:
            messages.append({"role": "user", "content": query})
        return messages

    messages = render()
    total = sum(count(m["content"]) + MESSAGE_OVERHEAD for m in messages)
    # Part-by-part counting is an upper bound for the built-in estimate; a real tokenizer
    # may merge across joins differently, so re-check and drop the least wanted until it fits.
    while total > plan.usable and (chosen or kept_history):
        if chosen:
            dropped.append(chosen.pop())
        else:
            kept_history.pop(0)
        messages = render()
        total = sum(count(m["content"]) + MESSAGE_OVERHEAD for m in messages)
    return AssembledContext(
        messages, chosen, kept_history, total, plan, dropped, memory_cap - memory_used
    )


def group_by_block(items: Sequence[ContextItem]) -> Mapping[str, list[ContextItem]]:
    out: dict[str, list[ContextItem]] = {name: [] for name in _BLOCK_NAMES}
    for it in items:
        out[it.block].append(it)
    return out
