"""Long-term summaries' pure rules (no store), and what a refresh of a stale summary did;
re-exported by :mod:`memstrata.layers.summaries` and :mod:`memstrata.consolidation`."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from memstrata.errors import ValidationError
from memstrata.layers.short_term_types import compress_for_context
from memstrata.llm._language import truncate_words
from memstrata.records import MemoryRecord
from memstrata.scope import Scope

__all__ = [
    "Refresh",
    "clean_summary",
    "due_blocks",
    "final_block",
    "render_turns",
    "summary_id",
]

_HAS_WORD = re.compile(r"[^\W\d_]", re.UNICODE)  # at least one letter (any script)


# --- pure rules ----------------------------------------------------------------------------
def due_blocks(complete_rounds: int, covered_until: int, every: int) -> list[tuple[int, int]]:
    """Full blocks of ``every`` rounds (1-based, inclusive) that are complete and not yet
    covered: ``due_blocks(20, 10, 10) == [(11, 20)]``."""
    if every < 1:
        raise ValidationError("summary_every_rounds must be at least 1")
    blocks = []
    start = covered_until + 1
    while start + every - 1 <= complete_rounds:
        blocks.append((start, start + every - 1))
        start += every
    return blocks


def final_block(rounds: int, covered_until: int) -> tuple[int, int] | None:
    """The rounds a session-end summary covers: everything after the last summary."""
    return (covered_until + 1, rounds) if rounds > covered_until else None


def summary_id(scope: Scope, kind: str, start: int = 0, end: int = 0) -> str:
    """A stable id for one summary of one session, so a re-run cannot write a second copy."""
    key = "\x1f".join(
        [
            scope.tenant,
            scope.user,
            scope.agent or "",
            scope.session or "",
            kind,
            str(start),
            str(end),
        ]
    )
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def clean_summary(text: object, max_words: int) -> str | None:
    """The summary cut to ``max_words``, or ``None`` if it is garbage (not a string, empty,
    without a single letter, or a JSON object/array instead of prose)."""
    if not isinstance(text, str):
        return None
    body = text.strip()
    if len(body) < 2 or not _HAS_WORD.search(body):
        return None
    if body[0] in "{[":
        try:
            json.loads(body)
        except ValueError:
            pass
        else:
            return None
    return truncate_words(body, max_words).strip() or None


def render_turns(
    messages: Sequence[MemoryRecord], *, tool_max_chars: int = 500, ack_max_chars: int = 20
) -> list[str]:
    """``"role: text"`` lines after rule compression, for a summariser."""
    kept = compress_for_context(
        messages, tool_max_chars=tool_max_chars, ack_max_chars=ack_max_chars
    )
    return [f"{m.role.value if m.role else 'note'}: {m.text}" for m in kept]


# --- consolidation (memstrata.consolidation) -------------------------------------------------
@dataclass(frozen=True, slots=True)
class Refresh:
    """What happened to one stale summary."""

    summary_id: str
    action: str  # refresh | forget (no source left)
    dropped: tuple[str, ...]
    reason: str
