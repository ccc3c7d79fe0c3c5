"""Procedural memory: what works and what fails (seed 002 §8.8).

Decomposition patterns (query pattern, subtasks, strategy, success rate, usage count) and
failure patterns (indicators, mitigation, severity 1–5) are ``PROCEDURE`` records updated
when a task ends. A pattern is reused only when its query is similar (> 0.8) *and* it
succeeds reliably (> 0.9) — :func:`should_reuse`; a failure pattern warns when one of its
indicators occurs in the new task — :func:`indicators_match`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from memstrata._async.layers._build import build_record, list_records, query_vector
from memstrata._async.layers.base import AsyncLayerContext
from memstrata.calls import checked_calls
from memstrata.errors import ValidationError
from memstrata.filters import Filters, MetadataCondition
from memstrata.layers.procedural_types import (
    FailureWarning,
    Suggestion,
    _indicators,
    indicators_match,
    should_reuse,
    success_rate,
)
from memstrata.llm.base import Reflection, TaskOutcome
from memstrata.records import MemoryRecord, RecordType
from memstrata.scope import Scope
from memstrata.text import validate_content
from memstrata.validation import check_int, check_model, check_names, check_sequence
from memstrata.writes import check_owner, check_scope

__all__ = [
    "AsyncProceduralService",
    "FailureWarning",
    "Lesson",
    "Suggestion",
    "indicators_match",
    "new_records",
    "should_reuse",
    "success_rate",
]

_SAME_PATTERN = 0.95  # a new task this similar to a stored pattern updates that pattern

# A pattern to write after a task: its next version with the version it replaces, or a new
# pattern with None.
Lesson = tuple[MemoryRecord, int | None]


def new_records(learned: Sequence[Lesson]) -> int:
    """How many of ``learned`` are new patterns (what a quota admits)."""
    return sum(replaces is None for _, replaces in learned)


@checked_calls
class AsyncProceduralService:
    def __init__(self, ctx: AsyncLayerContext) -> None:
        self._ctx = ctx

    async def _closest(
        self, scope: Scope, query: str, kind: str, k: int = 5
    ) -> list[tuple[MemoryRecord, float]]:
        filters = Filters(
            types=frozenset({RecordType.PROCEDURE}),
            metadata=(MetadataCondition("kind", "eq", kind),),
        )
        vector = await query_vector(self._ctx, query, scope)
        hits = await self._ctx.store.vector_search(scope, vector, k, filters)
        scores = {h.id: h.score for h in hits}
        return [(r, scores[r.id]) for r in await self._ctx.store.get_many(scope, list(scores))]

    async def learn(
        self,
        scope: Scope,
        task: TaskOutcome,
        reflection: Reflection,
        *,
        strategy: str = "sequential",
        source_ids: Sequence[str] = (),
    ) -> list[MemoryRecord]:
        """Update the patterns after a task: its decomposition, and a failure pattern if it
        failed. Returns the records written (the new ones admitted under the quotas)."""
        check_owner(scope)
        learned = await self.lessons(
            scope, task, reflection, strategy=strategy, source_ids=source_ids
        )
        async with self._ctx.admit(scope, new_records(learned)):
            written = await self.store_lessons(scope, learned)
        return written

    async def lessons(
        self,
        scope: Scope,
        task: TaskOutcome,
        reflection: Reflection,
        *,
        strategy: str = "sequential",
        source_ids: Sequence[str] = (),
    ) -> list[Lesson]:
        """What :meth:`learn` writes, read but not written: each pattern's next version, or
        a new pattern (``replaces`` None) — so a caller admits the new ones first."""
        check_scope(scope)
        task = check_model(task, TaskOutcome, "task")
        reflection = check_model(reflection, Reflection, "reflection")
        strategy = validate_content(strategy, field="strategy")
        scope = scope.with_session(None)  # strategies outlive the session they came from
        learned = []
        if task.steps:
            learned.append(await self._decomposition(scope, task, strategy, source_ids))
        if not task.success:
            learned.append(await self._failure(scope, task, reflection, source_ids))
        return learned

    async def store_lessons(self, scope: Scope, learned: Sequence[Lesson]) -> list[MemoryRecord]:
        """Write :meth:`lessons`' result; returns the records written."""
        check_owner(scope)
        for i, item in enumerate(check_sequence(learned, "learned")):
            record, replaces = item if isinstance(item, tuple) and len(item) == 2 else (None, 0)
            if not isinstance(record, MemoryRecord) or not (
                replaces is None or (isinstance(replaces, int) and not isinstance(replaces, bool))
            ):
                raise ValidationError(
                    f"learned[{i}] must be a (MemoryRecord, version or None) pair, as "
                    "lessons() returns"
                )
            if (record.tenant, record.user) != (scope.tenant, scope.user):
                raise ValidationError(
                    f"learned[{i}] belongs to another user than the scope's; write each "
                    "user's lessons through their own scope"
                )
        scope = scope.with_session(None)
        for record, replaces in learned:
            if replaces is None:
                await self._ctx.insert([record])
            else:
                await self._ctx.replace(scope, record, expected_version=replaces, reindex=False)
        return [record for record, _ in learned]

    async def _decomposition(
        self, scope: Scope, task: TaskOutcome, strategy: str, source_ids: Sequence[str]
    ) -> Lesson:
        now = self._ctx.clock.now()
        same = [
            (r, s)
            for r, s in await self._closest(scope, task.goal, "decomposition", 1)
            if s >= _SAME_PATTERN and r.content.structured.get("subtasks") == task.steps
        ]
        if same:
            record, _ = same[0]
            data = record.content.structured
            uses = int(data["usage_count"]) + 1
            wins = int(data["successes"]) + int(task.success)
            updated = replace(
                record,
                version=record.version + 1,
                updated_at=now,
                source_ids=tuple(dict.fromkeys((*record.source_ids, *source_ids))),
                content=replace(
                    record.content,
                    structured={
                        **data,
                        "usage_count": uses,
                        "successes": wins,
                        "success_rate": success_rate(wins, uses),
                    },
                ),
            )
            return updated, record.version
        structured: dict[str, Any] = {
            "kind": "decomposition",
            "query_pattern": task.goal,
            "subtasks": list(task.steps),
            "strategy": strategy,
            "usage_count": 1,
            "successes": int(task.success),
            "success_rate": success_rate(int(task.success), 1),
        }
        record = build_record(
            self._ctx,
            scope,
            task.goal,
            type=RecordType.PROCEDURE,
            importance=0.6,
            structured=structured,
            metadata={"kind": "decomposition"},
            source_ids=source_ids,
        )
        return record, None

    async def _failure(
        self, scope: Scope, task: TaskOutcome, reflection: Reflection, source_ids: Sequence[str]
    ) -> Lesson:
        indicators = _indicators(task.goal)
        mitigation = "; ".join(reflection.lessons) or "Plan differently next time"
        severity = max(1, min(5, round(reflection.importance * 5)))
        text = f"Failure: {task.goal}. {task.outcome}".strip()
        for record, _ in await self._closest(scope, task.goal, "failure", 1):
            data = record.content.structured
            if sorted(data.get("indicators", [])) == sorted(indicators):
                updated = replace(
                    record,
                    version=record.version + 1,
                    updated_at=self._ctx.clock.now(),
                    source_ids=tuple(dict.fromkeys((*record.source_ids, *source_ids))),
                    content=replace(
                        record.content,
                        structured={
                            **data,
                            "occurrences": int(data.get("occurrences", 1)) + 1,
                            "severity": max(int(data["severity"]), severity),
                            "mitigation": mitigation,
                        },
                    ),
                )
                return updated, record.version
        record = build_record(
            self._ctx,
            scope,
            text,
            type=RecordType.PROCEDURE,
            importance=0.7,
            structured={
                "kind": "failure",
                "pattern": task.goal,
                "indicators": indicators,
                "mitigation": mitigation,
                "severity": severity,
                "occurrences": 1,
            },
            metadata={"kind": "failure"},
            source_ids=source_ids,
        )
        return record, None

    async def add_failure_pattern(
        self,
        scope: Scope,
        pattern: str,
        indicators: Sequence[str],
        mitigation: str,
        severity: int = 3,
    ) -> MemoryRecord:
        """A failure pattern written directly (e.g. by an operator: "rate_limit")."""
        check_owner(scope)
        pattern = validate_content(pattern, field="pattern")
        mitigation = validate_content(mitigation, field="mitigation")
        indicators = check_names(indicators, "indicators")
        severity = check_int(severity, "severity", low=-(2**31), high=2**31)  # clamped to 1-5
        record = build_record(
            self._ctx,
            scope.with_session(None),
            f"Failure: {pattern}. {mitigation}",
            type=RecordType.PROCEDURE,
            importance=0.7,
            structured={
                "kind": "failure",
                "pattern": pattern,
                "indicators": list(indicators),
                "mitigation": mitigation,
                "severity": max(1, min(5, severity)),
                "occurrences": 0,
            },
            metadata={"kind": "failure"},
        )
        async with self._ctx.admit(scope, 1):
            await self._ctx.insert([record])
        return record

    async def suggest(self, scope: Scope, query: str) -> Suggestion | None:
        """A proven decomposition to reuse for ``query``, or ``None``."""
        check_scope(scope)
        query = validate_content(query, field="query", stored=False)
        cfg = self._ctx.config
        for record, similarity in await self._closest(
            scope.with_session(None), query, "decomposition"
        ):
            data = record.content.structured
            rate = float(data["success_rate"])
            if should_reuse(
                similarity,
                rate,
                min_similarity=cfg.procedure_reuse_similarity,
                min_success_rate=cfg.procedure_reuse_success_rate,
            ):
                return Suggestion(
                    list(data["subtasks"]), str(data["strategy"]), rate, similarity, record
                )
        return None

    async def warnings(self, scope: Scope, text: str, limit: int = 500) -> list[FailureWarning]:
        """Failure patterns whose indicators occur in ``text``, most severe first."""
        check_scope(scope)
        text = validate_content(text, field="text", stored=False, max_chars=10_000_000)
        check_int(limit, "limit", low=1, high=100_000)
        out = []
        for record in await list_records(
            self._ctx, scope.with_session(None), RecordType.PROCEDURE, limit=limit, kind="failure"
        ):
            data = record.content.structured
            matched = indicators_match(text, data.get("indicators", []))
            if matched:
                out.append(
                    FailureWarning(
                        str(data["pattern"]),
                        str(data["mitigation"]),
                        int(data["severity"]),
                        matched,
                        record,
                    )
                )
        out.sort(key=lambda w: w.severity, reverse=True)
        return out
