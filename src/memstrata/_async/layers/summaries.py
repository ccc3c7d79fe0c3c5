"""Long-term summaries (PMemo: every 10 rounds; seed 001: at session end) and the rolling
summary of what left the short-term window.

A *range summary* is a ``summary`` record of one session with ``structured = {step_start,
step_end, time_start, time_end, session, kind="range", final}`` (steps are 1-based round
numbers), ``observed_at`` = the time of its last turn and ``source_ids`` = the turns it
covers. Rounds 1–10 are summarised once round 10 is *complete*, i.e. once the user's next
turn opens round 11 (a round can still receive replies until then); session end summarises
every round not covered yet. A range is never summarised twice: its record id is derived
from ``(scope, range)`` and coverage counts deleted summaries too, so a summary the user
deleted is not silently written again.

The *rolling summary* is one ``summary`` record per session (``kind="rolling"``) that is
rewritten as a new version each time turns leave the window: it summarises the previous
rolling summary plus the new turns; its ``source_ids`` are every turn folded in so far.

Every summary goes through ``ctx.llm.summarize``; if that raises or returns garbage (empty,
no letters, JSON), the offline :class:`HeuristicLLM` writes it instead — nothing is lost.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from memstrata._async.layers.base import AsyncLayerContext
from memstrata._async.layers.short_term import AsyncShortTermService
from memstrata._async.store.base import RecordWrite
from memstrata.errors import NotFoundError
from memstrata.filters import Filters, MetadataCondition
from memstrata.layers.short_term_types import group_rounds
from memstrata.layers.summaries_types import (
    clean_summary,
    due_blocks,
    final_block,
    render_turns,
    summary_id,
)
from memstrata.llm._language import truncate_words
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.records import (
    AccessControl,
    Content,
    MemoryRecord,
    RecordType,
    Role,
    Source,
    Visibility,
)
from memstrata.scope import Scope
from memstrata.text import content_hash

__all__ = [
    "AsyncSummaryService",
    "clean_summary",
    "due_blocks",
    "final_block",
    "render_turns",
    "summary_id",
]

log = logging.getLogger("memstrata.layers.summaries")

_SUMMARY_TYPES = frozenset({RecordType.SUMMARY})
_ROLLING_IDS = 200  # newest turns named in a rolling summary's source_ids


# --- the service ---------------------------------------------------------------------------
class AsyncSummaryService:
    def __init__(
        self, ctx: AsyncLayerContext, short_term: AsyncShortTermService | None = None
    ) -> None:
        self._ctx = ctx
        self._short = short_term or AsyncShortTermService(ctx)

    async def summaries(self, scope: Scope, *, include_deleted: bool = False) -> list[MemoryRecord]:
        """The session's range summaries, in step order."""
        filters = Filters(
            types=_SUMMARY_TYPES,
            include_deleted=include_deleted,
            metadata=(MetadataCondition("summary_kind", "eq", "range"),),
        )
        records = await self._ctx.store.list(scope, filters, limit=10_000, newest_first=False)
        return sorted(records, key=lambda r: int(r.content.structured.get("step_start", 0)))

    async def covered_until(self, scope: Scope) -> int:
        summaries = await self.summaries(scope, include_deleted=True)
        return max(
            (int(r.content.structured.get("step_end", 0)) for r in summaries),
            default=0,
        )

    async def _last_range(self, scope: Scope) -> MemoryRecord | None:
        """The session's newest range summary (deleted ones count: a range is never
        summarised twice), read newest first a few records at a time."""
        filters = Filters(types=_SUMMARY_TYPES, include_deleted=True)
        offset = 0
        while batch := await self._ctx.store.list(
            scope, filters, limit=8, offset=offset, newest_first=True
        ):
            for r in batch:
                if r.content.structured.get("kind") == "range":
                    return r
            offset += len(batch)
        return None

    async def _open_rounds(self, scope: Scope) -> tuple[int, list[list[MemoryRecord]]]:
        """``(covered_until, the rounds after it)``: only the turns after the newest range
        summary are read (at most one block of rounds plus what arrived since), so the cost
        does not grow with the session."""
        last = await self._last_range(scope)
        filters = Filters(types=frozenset({RecordType.MESSAGE}))
        covered, skip = 0, frozenset[str]()
        if last is not None:
            covered = int(last.content.structured.get("step_end", 0))
            skip = frozenset(last.source_ids)
            filters = replace(filters, observed_after=last.observed_at)
        turns: list[MemoryRecord] = []
        async for batch in self._ctx.store.list_pages(scope, filters, batch_size=500):
            turns.extend(m for m in batch if m.id not in skip)
        rounds = group_rounds(turns)
        if covered and len(rounds) > 1 and rounds[0][0].role is not Role.USER:
            # replies that came after the last summary belong to the next round
            rounds[1] = [*rounds[0], *rounds[1]]
            rounds = rounds[1:]
        return covered, rounds

    async def summarize_due(self, scope: Scope) -> list[MemoryRecord]:
        """Summaries of every complete, uncovered block of ``summary_every_rounds`` rounds."""
        covered, rounds = await self._open_rounds(scope)
        blocks = due_blocks(
            covered + len(rounds) - 1, covered, self._ctx.config.summary_every_rounds
        )
        return [
            r for b in blocks if (r := await self._write_range(scope, rounds, b, False, covered))
        ]

    async def summarize_session_end(self, scope: Scope) -> list[MemoryRecord]:
        """Full blocks still due, then one summary of whatever rounds remain."""
        covered, rounds = await self._open_rounds(scope)
        total = covered + len(rounds)
        blocks = due_blocks(total, covered, self._ctx.config.summary_every_rounds)
        last = blocks[-1][1] if blocks else covered
        tail = final_block(total, last)
        out = [
            r for b in blocks if (r := await self._write_range(scope, rounds, b, False, covered))
        ]
        if tail is not None and (r := await self._write_range(scope, rounds, tail, True, covered)):
            out.append(r)
        return out

    async def summarize(self, texts: Sequence[str]) -> tuple[str, str]:
        """``(summary, provider name)`` — the configured LLM, else the offline fallback."""
        max_words = self._ctx.config.summary_max_words
        llm = self._ctx.llm
        # A provider that falls back inside itself says so (the label must name what
        # actually wrote the summary, issue 7 §9); any other is labelled with its name.
        attributed = getattr(llm, "summarize_attributed", None)
        writer = llm.name
        try:
            if callable(attributed):
                raw, writer = await attributed(texts, max_words=max_words)
            else:
                raw = await llm.summarize(texts, max_words=max_words)
            answer = clean_summary(raw, max_words)
        except Exception as exc:  # any provider failure: the offline summary instead
            log.warning(
                "summary by %s failed (%s: %s); using the offline summariser",
                llm.name,
                type(exc).__name__,
                exc,
            )
            answer = None
        if answer is not None and isinstance(writer, str) and writer:
            return answer, writer
        fallback = clean_summary(HeuristicLLM().summarize(texts, max_words=max_words), max_words)
        if fallback is None:  # nothing extractable: keep the words themselves
            fallback = truncate_words(" ".join(texts), max_words).strip() or "(no content)"
        return fallback, "heuristic-fallback"

    def _record(
        self,
        scope: Scope,
        rid: str,
        text: str,
        messages: Sequence[MemoryRecord],
        structured: dict[str, object],
        kind: str,
        provider: str,
    ) -> MemoryRecord:
        now = self._ctx.clock.now()
        vis = Visibility.PRIVATE if scope.agent else Visibility.SHARED
        return MemoryRecord(
            id=rid,
            tenant=scope.tenant,
            user=scope.user,
            agent=scope.agent,
            session=scope.session,
            type=RecordType.SUMMARY,
            content=Content(text, structured=structured),
            created_at=now,
            updated_at=now,
            observed_at=messages[-1].observed_at,
            embedding_model=self._ctx.embedder.model_id,
            embedding_dims=self._ctx.embedder.dims,
            importance=0.6,
            source=Source.SYSTEM_GENERATED,
            access=AccessControl(visibility=vis),
            source_ids=tuple(m.id for m in messages),
            metadata={"summary_kind": kind, "summarizer": provider},
            content_hash=content_hash(text),
        )

    async def _write(
        self, scope: Scope, record: MemoryRecord, turns: Sequence[MemoryRecord]
    ) -> tuple[RecordWrite, int]:
        """A summary's index entry, and how many embeddings it made of its own. Its vector
        is the normalised mean of its turns' vectors, which the embedding cache already
        holds (they were embedded when the turns were added): a summary says again what its
        turns said, and embedding its ~200 words would cost the model as much as ten turns.
        Its lexical terms are its own words. Its own text is embedded (1) when redaction
        changed it or when its turns' vectors cancel out."""
        vectors = np.asarray(
            await self._ctx.embedder_for(scope).embed_batch([m.text for m in turns]),
            dtype=np.float64,
        )
        mean = vectors.mean(axis=0)
        norm = float(np.linalg.norm(mean))
        if norm <= 0:  # turns that cancel out (or none): embed the summary text itself
            return (await self._ctx.writes([record]))[0], 1
        made = self._ctx.reembeds(record)
        return await self._ctx.write_with(record, (mean / norm).astype(np.float32)), made

    async def _store(
        self,
        scope: Scope,
        record: MemoryRecord,
        turns: Sequence[MemoryRecord],
        *,
        expected_version: int | None = None,
    ) -> None:
        """Write a summary (a new one, or the next version of ``expected_version``), with
        the embeddings it made of its own counted in the write (session 34; before, a
        summary re-embedded because redaction changed its text was counted nowhere)."""
        write, made = await self._write(scope, record, turns)
        async with self._ctx.admit(scope, made):  # a system context: never refused
            if expected_version is None:
                await self._ctx.store.insert([write])
            else:
                await self._ctx.store.replace(scope, write, expected_version=expected_version)

    async def _exists(self, scope: Scope, rid: str) -> MemoryRecord | None:
        try:
            return await self._ctx.store.get(scope, rid, include_deleted=True)
        except NotFoundError:
            return None

    async def _write_range(
        self,
        scope: Scope,
        rounds: Sequence[Sequence[MemoryRecord]],
        block: tuple[int, int],
        final: bool,
        first: int = 0,
    ) -> MemoryRecord | None:
        """``rounds[0]`` is round ``first + 1`` of the session."""
        start, end = block
        rid = summary_id(scope, "range", start, end)
        if await self._exists(scope, rid) is not None:
            return None
        messages = [m for r in rounds[start - 1 - first : end - first] for m in r]
        cfg = self._ctx.config
        text, provider = await self.summarize(
            render_turns(
                messages, tool_max_chars=cfg.tool_output_max_chars, ack_max_chars=cfg.ack_max_chars
            )
        )
        structured: dict[str, object] = {
            "kind": "range",
            "step_start": start,
            "step_end": end,
            "time_start": messages[0].observed_at.isoformat(),
            "time_end": messages[-1].observed_at.isoformat(),
            "session": scope.session,
            "final": final,
        }
        record = self._record(scope, rid, text, messages, structured, "range", provider)
        await self._store(scope, record, messages)
        return record

    # --- rolling summary -----------------------------------------------------------------
    async def rolling(self, scope: Scope) -> MemoryRecord | None:
        """The session's rolling summary (``None`` if nothing has left the window yet)."""
        found = await self._exists(scope, summary_id(scope, "rolling"))
        return found if found is not None and found.is_active else None

    async def update_rolling(
        self, scope: Scope, left: Sequence[MemoryRecord]
    ) -> MemoryRecord | None:
        """Fold turns that left the window into the rolling summary (a new version).

        Turns already folded in are skipped, so calling it twice changes nothing; a rolling
        summary the user deleted stays deleted.
        """
        rid = summary_id(scope, "rolling")
        current = await self._exists(scope, rid)
        if current is not None and not current.is_active:
            return None
        covered = set(current.source_ids) if current is not None else set()
        fresh = [m for m in left if m.id not in covered]
        if not fresh:
            return current
        cfg = self._ctx.config
        texts = render_turns(
            fresh, tool_max_chars=cfg.tool_output_max_chars, ack_max_chars=cfg.ack_max_chars
        )
        if current is not None:
            texts = [f"Earlier: {current.text}", *texts]
        text, provider = await self.summarize(texts)
        # Provenance keeps the newest turns folded in (a list of every turn would make each
        # version grow with the session); ``turns`` counts them all.
        ids = (*(current.source_ids if current else ()), *(m.id for m in fresh))[-_ROLLING_IDS:]
        folded = (
            int(current.content.structured.get("turns", len(current.source_ids)))
            if current is not None
            else 0
        )
        start = (
            current.content.structured.get("time_start")
            if current
            else fresh[0].observed_at.isoformat()
        )
        structured: dict[str, object] = {
            "kind": "rolling",
            "session": scope.session,
            "time_start": start,
            "time_end": fresh[-1].observed_at.isoformat(),
            "turns": folded + len(fresh),
        }
        record = self._record(scope, rid, text, fresh, structured, "rolling", provider)
        record = replace(record, source_ids=ids)
        if current is None:
            await self._store(scope, record, fresh)
        else:
            record = replace(record, created_at=current.created_at, version=current.version + 1)
            await self._store(scope, record, fresh, expected_version=current.version)
        return record
