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

from collections.abc import Sequence

from memstrata._async.layers.base import AsyncLayerContext
from memstrata.errors import ValidationError
from memstrata.filters import Filters
from memstrata.layers.short_term_types import (
    TRUNCATION_MARKER,
    _by_time,
    compress_for_context,
    group_rounds,
    is_acknowledgement,
    is_error_message,
    left_window,
    window_of,
)
from memstrata.records import MemoryRecord, RecordType, Role
from memstrata.scope import Scope
from memstrata.store.types import ListQuery
from memstrata.tokens import TokenCounter, estimate_tokens

__all__ = [
    "TRUNCATION_MARKER",
    "AsyncShortTermService",
    "compress_for_context",
    "group_rounds",
    "is_acknowledgement",
    "is_error_message",
    "left_window",
    "window_of",
]


class AsyncShortTermService:
    """The session buffer over the store (needs ``scope.session``)."""

    def __init__(self, ctx: AsyncLayerContext, *, counter: TokenCounter | None = None) -> None:
        self._ctx = ctx
        self._counter = counter

    async def messages(self, scope: Scope) -> list[MemoryRecord]:
        """Every active turn of the session, oldest first."""
        if scope.session is None:
            raise ValidationError("short-term memory is per session: pass a scope with session=")
        filters = Filters(types=frozenset({RecordType.MESSAGE}))
        out: list[MemoryRecord] = []
        async for batch in self._ctx.store.list_pages(scope, filters, batch_size=1000):
            out.extend(batch)
        return _by_time(out)

    async def rounds(self, scope: Scope) -> list[list[MemoryRecord]]:
        return group_rounds(await self.messages(scope))

    async def _split(self, scope: Scope) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
        messages = await self.messages(scope)
        cfg = self._ctx.config
        window = window_of(
            group_rounds(messages),
            max_rounds=cfg.short_term_rounds,
            token_cap=cfg.short_term_token_cap,
            counter=self._counter,
        )
        return window, left_window(messages, window)

    async def recent(self, scope: Scope) -> list[MemoryRecord]:
        """The newest turns of the session, enough to hold the window, oldest first.

        Reads newest-first a page at a time and stops once it has more round starts than
        the window keeps or more tokens than its cap, so the read path costs the same for a
        session of 30 turns and of 30,000."""
        q = self.recent_query(scope)
        first = await self._ctx.store.list(q.scope, q.filters, limit=q.limit, newest_first=True)
        return await self.recent_from(q, first)

    def recent_query(self, scope: Scope) -> ListQuery:
        """The first page :meth:`recent` reads: a user turn and its reply per round of the
        window and the start of the round before, so a window whose rounds alternate is
        read in one page (for a caller that folds it with other reads, ``list_many``)."""
        if scope.session is None:
            raise ValidationError("short-term memory is per session: pass a scope with session=")
        turns = 2 * self._ctx.config.short_term_rounds + 2
        return ListQuery(scope, Filters(types=frozenset({RecordType.MESSAGE})), turns)

    async def recent_from(self, q: ListQuery, first: list[MemoryRecord]) -> list[MemoryRecord]:
        """:meth:`recent`, given the page ``q`` read: reads on in pages of 100 if needed."""
        cfg = self._ctx.config
        count = self._counter or estimate_tokens
        out: list[MemoryRecord] = []
        starts = tokens = 0
        page, batch = q.limit, first
        while True:
            out.extend(batch)
            starts += sum(1 for r in batch if r.role is Role.USER)
            tokens += sum(count(r.text) for r in batch)
            if (
                len(batch) < page
                or starts > cfg.short_term_rounds
                or tokens > cfg.short_term_token_cap
            ):
                # ``out`` is newest first: reversed, turns of one moment keep the order they
                # were added in (the sort is stable), as in ``messages``.
                return _by_time(out[::-1])
            page = 100
            batch = await self._ctx.store.list(
                q.scope, q.filters, limit=page, offset=len(out), newest_first=True
            )

    async def left_by(self, scope: Scope, ids: Sequence[str]) -> list[MemoryRecord]:
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
            batch = await self._ctx.store.list(
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

    async def window(self, scope: Scope) -> list[MemoryRecord]:
        """The turns in the window, oldest first (uncompressed)."""
        cfg = self._ctx.config
        return window_of(
            group_rounds(await self.recent(scope)),
            max_rounds=cfg.short_term_rounds,
            token_cap=cfg.short_term_token_cap,
            counter=self._counter,
        )

    async def overflowed(self, scope: Scope) -> list[MemoryRecord]:
        """The turns that have left the window, oldest first."""
        return (await self._split(scope))[1]

    async def render(self, scope: Scope) -> list[MemoryRecord]:
        """The window after rule compression, for context assembly."""
        q = self.recent_query(scope)
        first = await self._ctx.store.list(q.scope, q.filters, limit=q.limit, newest_first=True)
        return await self.render_from(q, first)

    async def render_from(self, q: ListQuery, first: list[MemoryRecord]) -> list[MemoryRecord]:
        """:meth:`render`, given the first page of :meth:`recent` (``recent_query``)."""
        cfg = self._ctx.config
        window = window_of(
            group_rounds(await self.recent_from(q, first)),
            max_rounds=cfg.short_term_rounds,
            token_cap=cfg.short_term_token_cap,
            counter=self._counter,
        )
        return compress_for_context(
            window,
            tool_max_chars=cfg.tool_output_max_chars,
            ack_max_chars=cfg.ack_max_chars,
        )
