"""Episodic memory: what happened, as episodes (seed 000 L3, seed 001).

Task episodes (task, approach, outcome, key decisions, user feedback, tools, lessons,
importance) are written when a task ends, with its reflection; conversation episodes
(summary, topics, actions, outcomes) at session end or buffer overflow; feedback episodes
when the user says how something went (importance 0.9).

Recall ranks by :func:`recall_score` and keeps only episodes with importance > 0.3.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from memstrata._async.layers._build import build_record, list_records, query_vector
from memstrata._async.layers.base import AsyncLayerContext
from memstrata.calls import checked_calls
from memstrata.filters import Filters
from memstrata.layers.episodic_types import EpisodeHit, age_days, recall_score
from memstrata.layers.episodic_types import _topics as _topics  # rederive uses it
from memstrata.llm.base import Reflection, TaskOutcome
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.records import MemoryRecord, RecordType, Role, Source
from memstrata.scope import Scope
from memstrata.text import validate_content
from memstrata.validation import check_int, check_model, check_records
from memstrata.writes import check_owner, check_scope

__all__ = [
    "AsyncConversationEpisodeStep",
    "AsyncEpisodeService",
    "EpisodeHit",
    "age_days",
    "recall_score",
]

log = logging.getLogger(__name__)
_HEURISTIC = HeuristicLLM()


@checked_calls
class AsyncEpisodeService:
    def __init__(self, ctx: AsyncLayerContext) -> None:
        self._ctx = ctx

    # --- writers ------------------------------------------------------------------------
    async def record_task(
        self,
        scope: Scope,
        task: TaskOutcome,
        reflection: Reflection,
        *,
        source_ids: Sequence[str] = (),
    ) -> MemoryRecord:
        """Archive a finished task with its reflection (one record, admitted)."""
        record = self.task_episode(scope, task, reflection, source_ids=source_ids)
        await self._insert(scope, record)
        return record

    def task_episode(
        self,
        scope: Scope,
        task: TaskOutcome,
        reflection: Reflection,
        *,
        source_ids: Sequence[str] = (),
    ) -> MemoryRecord:
        """The episode :meth:`record_task` stores, not stored yet."""
        check_owner(scope)
        task = check_model(task, TaskOutcome, "task")
        reflection = check_model(reflection, Reflection, "reflection")
        structured: dict[str, Any] = {
            "kind": "task",
            "task": task.goal,
            "approach": list(task.steps),
            "step_statuses": list(task.step_statuses),
            "outcome": task.outcome,
            "success": task.success,
            "key_decisions": list(reflection.key_decisions),
            "user_feedback": task.feedback,
            "tools": list(task.tools),
            "lessons": list(reflection.lessons),
            "importance": reflection.importance,
        }
        lines = [reflection.summary, *(f"Lesson: {lesson}" for lesson in reflection.lessons)]
        return build_record(
            self._ctx,
            scope,
            "\n".join(line for line in lines if line.strip()) or task.goal,
            type=RecordType.EPISODE,
            importance=reflection.importance,
            structured=structured,
            metadata={"kind": "task", "success": task.success},
            source_ids=source_ids,
            summary=reflection.summary,
        )

    async def record_conversation(
        self, scope: Scope, messages: Sequence[MemoryRecord], *, trigger: str = "session_end"
    ) -> MemoryRecord | None:
        """One episode summarising ``messages``; ``None`` if there is nothing to summarise."""
        check_owner(scope)
        messages = check_records(messages, "messages")
        trigger = validate_content(trigger, field="trigger")
        texts = [m.text for m in messages if m.text.strip()]
        if not texts:
            return None
        cfg = self._ctx.config
        lines = [f"{m.role.value if m.role else 'note'}: {m.text}" for m in messages]
        try:
            summary = await self._ctx.llm.summarize(lines, max_words=cfg.summary_max_words)
        except Exception as exc:  # degrade to the offline summary, never lose the episode
            log.warning("summarize failed (%s); using the extractive summary", exc)
            summary = _HEURISTIC.summarize(lines, max_words=cfg.summary_max_words)
        summary = summary.strip() or texts[-1][:500]
        try:
            importance = await self._ctx.llm.score_importance(summary)
        except Exception:  # importance is a ranking signal: the offline score will do
            importance = _HEURISTIC.score_importance(summary)
        actions = [
            m.text.split("\n")[0][:200] for m in messages if m.role in (Role.ASSISTANT, Role.TOOL)
        ][:5]
        user_last = [m.text[:200] for m in messages if m.role is Role.USER][-1:]
        structured = {
            "kind": "conversation",
            "summary": summary,
            "topics": _topics(texts),
            "actions": actions,
            "outcomes": actions[-1:] or user_last,
            "trigger": trigger,
            "message_count": len(messages),
            "started_at": min(m.observed_at for m in messages).isoformat(),
            "ended_at": max(m.observed_at for m in messages).isoformat(),
        }
        record = build_record(
            self._ctx,
            scope,
            summary,
            type=RecordType.EPISODE,
            importance=importance,
            structured=structured,
            metadata={
                "kind": "conversation",
                "trigger": trigger,
                "session_id": scope.session or "",
            },
            source_ids=[i for m in messages for i in (m.source_ids or (m.id,))],
            observed_at=max(m.observed_at for m in messages),
            summary=summary,
        )
        await self._insert(scope, record)
        return record

    async def record_feedback(
        self, scope: Scope, text: str, *, source_ids: Sequence[str] = ()
    ) -> MemoryRecord:
        """Explicit user feedback: an episode of importance 0.9 (seed 001)."""
        record = self.feedback_episode(scope, text, source_ids=source_ids)
        await self._insert(scope, record)
        return record

    def feedback_episode(
        self, scope: Scope, text: str, *, source_ids: Sequence[str] = ()
    ) -> MemoryRecord:
        """The episode :meth:`record_feedback` stores, not stored yet."""
        check_owner(scope)
        return build_record(
            self._ctx,
            scope,
            text,
            type=RecordType.EPISODE,
            importance=self._ctx.config.feedback_importance,
            structured={"kind": "feedback", "user_feedback": text},
            metadata={"kind": "feedback"},
            source=Source.EXPLICIT_USER_INPUT,
            source_ids=source_ids,
        )

    async def _insert(self, scope: Scope, record: MemoryRecord) -> None:
        async with self._ctx.admit(scope, 1):
            await self._ctx.insert([record])

    # --- reader -------------------------------------------------------------------------
    async def recall(self, scope: Scope, query: str, k: int | None = None) -> list[EpisodeHit]:
        """The ``k`` (3) best episodes by :func:`recall_score`, importance > 0.3 only."""
        check_scope(scope)
        query = validate_content(query, field="query", stored=False)
        if k is not None:
            check_int(k, "k", low=0, high=1000)
        cfg = self._ctx.config
        k = cfg.episodic_top_k if k is None else k
        if k <= 0:
            return []
        candidates = await self._ctx.store.vector_search(
            scope,
            await query_vector(self._ctx, query, scope),
            max(k * 10, 50),
            Filters(types=frozenset({RecordType.EPISODE})),
        )
        similarity = {c.id: c.score for c in candidates}
        now = self._ctx.clock.now()
        hits = [
            EpisodeHit(
                r,
                recall_score(
                    similarity[r.id],
                    age_days(r.observed_at, now),
                    r.importance,
                    decay=cfg.episodic_decay,
                ),
                similarity[r.id],
            )
            for r in await self._ctx.store.get_many(scope, list(similarity))
            if r.is_active and r.importance > cfg.episodic_min_importance
        ]
        hits.sort(key=lambda h: h.score, reverse=True)
        return hits[:k]

    async def conversation_episode(self, scope: Scope) -> MemoryRecord | None:
        """The session-end episode already written for ``scope.session``, if any."""
        check_scope(scope)
        found = await list_records(
            self._ctx,
            scope,
            RecordType.EPISODE,
            kind="conversation",
            trigger="session_end",
            session_id=scope.session or "",
        )
        return found[0] if found else None


class AsyncConversationEpisodeStep:
    """Ingest step: one conversation episode per session, written at session end.

    Idempotent: a session that already has its episode is left alone.
    """

    name = "episodes"

    def __init__(
        self,
        ctx: AsyncLayerContext,
        episodes: AsyncEpisodeService | None = None,
        max_messages: int = 1000,
    ) -> None:
        self._ctx = ctx
        self._episodes = episodes or AsyncEpisodeService(ctx)
        self._max_messages = max_messages

    async def on_messages(self, scope: Scope, messages: Sequence[MemoryRecord]) -> None:
        """Nothing per message: episodes summarise a whole session (or an overflow)."""

    async def on_session_end(self, scope: Scope) -> None:
        if scope.session is None or await self._episodes.conversation_episode(scope) is not None:
            return
        messages = await self._ctx.store.list(
            scope,
            Filters(types=frozenset({RecordType.MESSAGE})),
            limit=self._max_messages,
            newest_first=False,
        )
        await self._episodes.record_conversation(scope, messages, trigger="session_end")
