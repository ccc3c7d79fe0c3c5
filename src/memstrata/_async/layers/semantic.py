"""Semantic memory, profile side: facts about the user with confidence and history (seed 001).

A fact is ``(category, key, value, confidence, mentions, first_observed, last_updated,
expires_at)``, stored as a user-level ``FACT`` record (no session) whose text reads
``"key: value"`` so search finds it. The conflict rules are the pure :func:`decide`:

- same key, same value → confirmed: ``mentions + 1``, ``confidence + 0.05`` (max 1.0);
- different value with a *higher* confidence (or the current one has expired) → replaced:
  the old record gets ``valid_to`` and ``superseded_by`` (a new version, never deleted) and
  the new one links both in ``source_ids`` and is read by whom the old one was (its
  ``access``: a key shared with another user stays shared at its next value);
- different value, confidence not higher → conflict recorded in the current fact's
  ``conflicts`` list; the value is kept.

Each outcome is a new version, so :meth:`FactService.history` shows every value a key held.

Writers of one key at once (threads, tasks, processes) end as some serial order would: one
current fact, every value in the history. The store decides: a confirmation or a conflict
names the version it read, a replacement ends the old fact in the transaction that stores
the new one, and the transaction of a first fact (a random id) reads the key's state again
first, one such transaction of the key at a time (``races.FirstVersion``), so of two
writers that saw no fact one inserts and the other finds the key changed. The loser reads
again and applies the rules to what the winner wrote.

One live (active, not superseded) fact per key: a restore of a fact whose key has another
makes the restored one current and ends the others, superseded by it, in its transaction
(:meth:`AsyncFactService.restore`), which takes the key's turn as a first fact's writer
does (``races.NameRead``): a fact stored or restored since its read is found and ended.
An import of a backup brings its facts as the file has them, then settles each key that
also has a live fact of the store's own (:meth:`AsyncFactService.settle`), after taking
the key's turn (``races.take_turn``). Meanwhile (and after a crash between the two) the
current one is the most confident, then the last updated (then the greatest id), and the
next write of the key ends the others, superseded by the record it writes or keeps, in its
own transaction: the key's one read finds them all, so converging costs no further read.
"""

from __future__ import annotations

import logging
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import ValidationError as PydanticValidationError

from memstrata._async.layers._build import build_record, list_records, query_vector
from memstrata._async.layers.base import AsyncLayerContext
from memstrata._async.layers.races import (
    FirstVersion,
    NameRead,
    Raced,
    first_version,
    read_name,
    settle_names,
    settled,
)
from memstrata._async.store.base import RecordWrite, Vector
from memstrata.calls import checked_calls
from memstrata.errors import ConflictError, NotFoundError, QuotaExceededError, ValidationError
from memstrata.filters import Filters
from memstrata.layers.semantic_types import (
    EXTRACTED,
    PLANS,
    FactAction,
    FactDecision,
    FactOutcome,
    _expires,
    _iso,
    _seen,
    carries_out,
    current_rank,
    decide,
    fact_text,
    fact_value,
    holds,
    is_expired,
    is_set_key,
    same_value,
)
from memstrata.llm.base import ExtractedFact
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.records import Content, MemoryRecord, RecordStatus, RecordType, Role, Source
from memstrata.scope import Scope
from memstrata.text import content_hash, validate_content
from memstrata.validation import (
    check_enum,
    check_id,
    check_ids,
    check_int,
    check_record,
    check_record_items,
    check_time,
    check_unit,
)
from memstrata.writes import check_owner, check_scope

if TYPE_CHECKING:
    from memstrata._async.audit import AsyncAuditLog
    from memstrata.audit_types import AuditEvent

__all__ = [
    "AsyncFactExtractionStep",
    "AsyncFactService",
    "FactAction",
    "FactDecision",
    "FactOutcome",
    "decide",
    "is_expired",
    "same_value",
]

log = logging.getLogger(__name__)


def _fact(fact: object) -> ExtractedFact:
    """``fact`` as an :class:`ExtractedFact` (one, or a mapping of its fields), checked."""
    if isinstance(fact, Mapping):
        try:
            fact = ExtractedFact.model_validate(dict(fact))
        except PydanticValidationError as exc:
            raise ValidationError(
                f"fact is not valid: {exc.errors()[0]['msg']} "
                f"(field {'.'.join(map(str, exc.errors()[0]['loc']))})"
            ) from None
    if not isinstance(fact, ExtractedFact):
        raise ValidationError(
            "fact must be a memstrata.llm.models.ExtractedFact (category, key, value, "
            f"confidence, evidence) or a mapping of those fields, got {type(fact).__name__}"
        )
    for field in ("category", "key", "value"):
        validate_content(getattr(fact, field), field=f"fact.{field}")
    return fact


@checked_calls
class AsyncFactService:
    def __init__(self, ctx: AsyncLayerContext) -> None:
        self._ctx = ctx

    @staticmethod
    def _scope(scope: Scope) -> Scope:
        return check_scope(scope).with_session(None)  # facts are about the user, not a session

    async def _current(self, scope: Scope, key: str) -> MemoryRecord | None:
        return (await self._live(scope, key))[0]

    async def _live(self, scope: Scope, key: str) -> tuple[MemoryRecord | None, list[MemoryRecord]]:
        """The key's current fact and the other live ones (none, but for an import or a race
        that made two: the next write ends them), in one read by index."""
        check_id(key, "key")
        found = await list_records(self._ctx, self._scope(scope), RecordType.FACT, key=key)
        if not found:
            return None, []
        current = max(found, key=current_rank)
        return current, [r for r in found if r.id != current.id]

    async def get(self, scope: Scope, key: str) -> MemoryRecord | None:
        """The current, unexpired fact for ``key``, or ``None``."""
        record = await self._current(scope, key)
        if record is None or is_expired(_expires(record), self._ctx.clock.now()):
            return None
        return record

    async def all(self, scope: Scope, *, min_confidence: float = 0.0) -> list[MemoryRecord]:
        check_unit(min_confidence, "min_confidence")
        now = self._ctx.clock.now()
        return [
            r
            for r in await list_records(self._ctx, self._scope(scope), RecordType.FACT)
            if r.confidence >= min_confidence and not is_expired(_expires(r), now)
        ]

    async def relevant(
        self,
        scope: Scope,
        query: str | Vector | None = None,
        limit: int | None = None,
        min_confidence: float | None = None,
    ) -> list[MemoryRecord]:
        """Unexpired facts with confidence >= 0.6, most similar to ``query`` first (or most
        confident first without a query), at most 20."""
        check_scope(scope)  # before the query reaches the embedder (and its cache's reader)
        cfg = self._ctx.config
        limit = (
            cfg.fact_max_in_context
            if limit is None
            else check_int(limit, "limit", low=0, high=1000)
        )
        floor = (
            cfg.fact_min_confidence
            if min_confidence is None
            else check_unit(min_confidence, "min_confidence")
        )
        if isinstance(query, str | bytes):
            query = validate_content(query, field="query", stored=False)
        elif query is not None and not isinstance(query, np.ndarray):
            raise ValidationError(
                f"query must be text or a vector (numpy array), got {type(query).__name__}"
            )
        if query is None:
            facts = await self.all(scope, min_confidence=floor)
            facts.sort(key=lambda r: (r.confidence, r.updated_at), reverse=True)
            return facts[:limit]
        vector = await query_vector(self._ctx, query, scope) if isinstance(query, str) else query
        now = self._ctx.clock.now()
        # The 3 × limit nearest, decoded best first only until ``limit`` of them pass.
        found = await self._ctx.store.vector_records(
            self._scope(scope),
            vector,
            limit * 3,
            Filters(types=frozenset({RecordType.FACT})),
            keep=lambda r: (
                r.is_active and r.confidence >= floor and not is_expired(_expires(r), now)
            ),
            want=limit,
        )
        return [r for r, _ in found]

    async def history(self, scope: Scope, key: str) -> list[MemoryRecord]:
        """Every version of every record that held ``key``, oldest first."""
        check_id(key, "key")
        records = await list_records(
            self._ctx, self._scope(scope), RecordType.FACT, include_superseded=True, key=key
        )
        found = await self._ctx.store.histories(self._scope(scope), [r.id for r in records])
        versions = [v for history in found.values() for v in history]
        return sorted(versions, key=lambda v: (v.updated_at, v.created_at, v.version))

    async def restore(
        self,
        scope: Scope,
        record: MemoryRecord,
        *,
        audit: AsyncAuditLog | None = None,
        events: Sequence[AuditEvent] = (),
    ) -> MemoryRecord:
        """Restore the deleted fact ``record`` (as read, deleted included); returns it as
        stored. When it is then live (not superseded) and its key has other live facts,
        it is the current value again and they end, superseded by it (``valid_to`` now,
        kept in the history as by an update), in the transaction of the restore: the
        value the user brings back is the one they see. A superseded fact comes back as an
        earlier version, in the history only. ``events`` (of ``audit``, as its
        ``ahead`` returned them) are appended in that transaction."""
        check_owner(scope)
        check_record(record, "record")
        key = record.metadata.get("key")
        if record.type is not RecordType.FACT or not isinstance(key, str):
            raise ValidationError(f"record {record.id!r} is no fact with a key: nothing to restore")
        return await settled(
            lambda: self._restore(scope, record.id, key, audit, events),
            f"fact {key!r} was changed",
            "restore",
        )

    async def _restore(
        self,
        scope: Scope,
        record_id: str,
        key: str,
        audit: AsyncAuditLog | None,
        events: Sequence[AuditEvent],
    ) -> MemoryRecord:
        """One read and one transaction of :meth:`restore`; ``Raced`` when another writer
        changed the record or one of the key's live facts since the read."""
        store = self._ctx.store
        record = await store.get(scope, record_id, include_deleted=True)
        others: list[MemoryRecord] = []
        name = None  # a superseded fact comes back in the history only: no live one made
        if record.superseded_by is None:
            name = await read_name(self._ctx, self._scope(scope), RecordType.FACT, "key", key)
            current, found = await self._live(scope, key)
            others = [r for r in (current, *found) if r is not None and r.id != record_id]
        now = self._ctx.clock.now()
        ends = [
            (
                await self._ctx.version_write(_superseded(o, record_id, now, now), reindex=False),
                o.version,
            )
            for o in others
        ]
        try:
            async with store.transaction() as tx:
                if name is not None:  # the key's turn: a fact stored or restored since?
                    await name.check(tx, live=bool(others) or record.is_active)
                if (await tx.get(scope, record_id, include_deleted=True)).version != (
                    record.version
                ):
                    raise Raced  # changed since the read: read again
                await tx.set_status(scope, [record_id], RecordStatus.ACTIVE, now)
                for write, version in ends:
                    await tx.replace(self._scope(scope), write, expected_version=version)
                if audit is not None:
                    await audit.append_in(tx, events)
        except (ConflictError, NotFoundError):
            raise Raced from None
        return await store.get(scope, record_id, include_deleted=True)

    async def settle(
        self, records: Iterable[MemoryRecord], *, brought: Container[str] | None = None
    ) -> None:
        """After ``records`` were stored as they are (an import): each key of a live fact
        among them that has more than one live fact keeps its current one (the most
        confident, then the one updated last; as :meth:`get` picks it), the others end
        superseded by it, in one transaction per key (the rules keep a more confident
        value against a different one too). One read per key, by index, after taking the
        key's turn (``races.take_turn``: a first writer or a restore of the key that
        checked it before the import committed has committed by then); the transaction
        that ends the others checks the key again (``NameRead.check``).

        With ``brought`` (the ids of every record of the import), a key whose live facts
        are all the import's keeps them as the file has them: several live facts of a key
        are a state memstrata writes (``add(type="fact", metadata={"key": ...})`` twice),
        and a restore of a backup gives it back; only a key that also has a live fact of
        the store's own settles."""
        checked = check_record_items(records, "records")  # whole, before any write
        keys = (
            (self._scope(r.scope), r.metadata["key"])
            for r in checked
            if r.type is RecordType.FACT
            and isinstance(r.metadata.get("key"), str)
            and r.is_active
            and r.superseded_by is None
        )

        async def decide(scope: Scope, key: str, turn: NameRead) -> None:
            current, extras = await self._live(scope, key)
            if current is None:
                return
            if brought is not None and all(r.id in brought for r in (current, *extras)):
                return  # the file's own live facts, as it has them
            await self._end(scope, current, extras, turn)

        await settle_names(self._ctx, keys, RecordType.FACT, "key", decide, "fact {!r} was changed")

    async def upsert(
        self,
        scope: Scope,
        fact: ExtractedFact,
        source_ids: Sequence[str] = (),
        *,
        expires_at: datetime | None = None,
        source: Source = Source.EXPLICIT_USER_INPUT,
        observed_at: datetime | None = None,
        origin: str | None = None,
    ) -> FactOutcome:
        """Apply the conflict rules to ``fact`` and write the result (see module docstring).

        ``observed_at`` is when the user said it (the message's time; replays of old
        conversations must keep their dates); it defaults to now. ``origin`` is the layer's
        mark (``EXTRACTED``) on a fact it took from the user's turns.

        A new fact (inserted, or replacing the current value) is one record admitted under
        the quotas; a confirmation or a conflict is a new version of the stored fact."""
        scope = self._scope(check_owner(scope))
        fact = _fact(fact)
        source_ids = check_ids(source_ids, "source_ids")
        expires_at = None if expires_at is None else check_time(expires_at, "expires_at")
        source = check_enum(Source, source, "source")
        if origin is not None:
            check_id(origin, "origin")
        fact = self._ctx.redact_fields(scope, fact, "value", "evidence")
        when = check_time(observed_at, "observed_at") if observed_at is not None else None
        return await settled(
            lambda: self._apply(scope, fact, tuple(source_ids), expires_at, source, when, origin),
            f"fact {fact.key!r} was changed",
            "upsert",
        )

    async def _apply(
        self,
        scope: Scope,
        fact: ExtractedFact,
        sources: tuple[str, ...],
        expires_at: datetime | None,
        source: Source,
        observed_at: datetime | None,
        origin: str | None,
    ) -> FactOutcome:
        """One read, decision and write of :meth:`upsert`; ``Raced`` when another writer
        changed what was read before this write landed (nothing of this one is written)."""
        now = self._ctx.clock.now()
        when = observed_at or now
        current, extras = await self._live(scope, fact.key)
        if current is not None and sources and set(sources) <= _seen(current):
            return FactOutcome(FactAction.UNCHANGED, await self._end(scope, current, extras))
        left = None  # a fact under another key that holds the value the user says they left
        if fact.replaces and current is None:
            left = await self._holder(scope, fact)
            if left is not None and not is_set_key(str(left.content.structured["key"])):
                # a slot ("favorite_place_for_lasagna"): the new value is its next value
                fact = fact.model_copy(
                    update={
                        "key": left.content.structured["key"],
                        "category": left.content.structured.get("category", fact.category),
                    }
                )
                current, left = left, None
        if observed_at is None and current is not None:
            # Without a time the fact is the newest the user said, even after the wall
            # clock stepped back behind the current value's start (NTP, a VM resumed):
            # taken as an earlier value replayed, a replacement given just now left the
            # old value current (audit31).
            when = max(now, _start(current))
        value = fact_value(current) if current else None  # what the current fact holds
        # A fact written otherwise (add(type="fact")) gets the key and value it holds.
        data: Mapping[str, Any] = (
            {"key": fact.key, "value": value, **current.content.structured} if current else {}
        )
        decision = decide(
            value,
            current.confidence if current else 0.0,
            int(data.get("mentions", 1)),
            fact.value,
            fact.confidence,
            current_expired=current is not None and is_expired(_expires(current), now),
            current_left=current is not None
            and bool(fact.replaces)
            and holds(str(value), fact.replaces),
            current_ended=data.get("ended") is True,
            incoming_ended=fact.ended,
            confirm_step=self._ctx.config.fact_confirm_step,
        )
        if decision.action is FactAction.UNCHANGED and current is not None:
            # it ends a value not held
            return FactOutcome(FactAction.UNCHANGED, await self._end(scope, current, extras))
        if decision.action is FactAction.INSERTED or current is None:
            # One of several likes the user left ends when the new fact is surer of itself;
            # it stays in the history, and comes back if the new fact's turns are purged.
            ended = left if left is not None and fact.confidence > left.confidence else None
            plan = await self._plan(scope, fact)
            record = self._new(
                scope,
                fact,
                (*sources, ended.id) if ended else sources,
                expires_at,
                source,
                decision,
                when,
                origin,
                replaces=ended.id if ended else None,
                plan=plan,
            )
            first = await self._first(scope, fact.key)
            record = replace(record, id=first.id)
            stored, left_old = await self._insert(
                scope, record, (ended, plan), now, when, seen=None, first=first
            )
            return FactOutcome(FactAction.INSERTED, stored, left_old)
        if decision.action is FactAction.CONFIRMED:
            updated = replace(
                current,
                version=current.version + 1,
                updated_at=now,
                confidence=decision.confidence,
                observed_at=max(current.observed_at, when),
                source_ids=tuple(dict.fromkeys((*current.source_ids, *sources))),
                content=replace(
                    current.content,
                    structured={
                        **data,
                        "confidence": decision.confidence,
                        "mentions": decision.mentions,
                        "last_updated": when.isoformat(),
                        "expires_at": _iso(expires_at) or data.get("expires_at"),
                    },
                ),
            )
            await self._replace(scope, updated, current, extras, reindex=False)
            return FactOutcome(FactAction.CONFIRMED, updated)
        if decision.action is FactAction.REPLACED and current is not None:
            if when < _start(current):  # said before the current value began
                return await self._earlier(
                    scope, fact, sources, expires_at, source, decision, when, origin, current
                )
            if when < current.observed_at:  # the user confirmed the current value after it
                mentions = int(data.get("mentions", 1))
                decision = FactDecision(FactAction.CONFLICT, current.confidence, mentions)
        if decision.action is FactAction.REPLACED:
            if fact.ended:  # the ending names the value it ends as the fact held it
                fact = fact.model_copy(update={"value": value})
            plan = await self._plan(scope, fact)
            record = self._new(
                scope,
                fact,
                (*sources, current.id),
                expires_at,
                Source.CORRECTED_MEMORY,
                decision,
                when,
                origin,
                replaces=current.id,
                plan=plan,
            )
            # The owner shared the key ("my city"), not one string: its next value is read
            # by whom the value it supersedes was (until session 28 it was private, and a
            # caller lost the key: the old value superseded, the new one unshared).
            shared = current if current.access != record.access else None
            record = replace(record, access=current.access)
            stored, old = await self._insert(
                scope,
                record,
                (current, plan),
                now,
                when,
                seen=current,
                extras=extras,
                shared_as=shared,
            )
            return FactOutcome(FactAction.REPLACED, stored, old)
        conflicts = [
            *data.get("conflicts", []),
            {
                "value": fact.value,
                "confidence": fact.confidence,
                "observed_at": when.isoformat(),
                "source_ids": list(sources),
                "evidence": fact.evidence,
            },
        ]
        text = fact_text(str(data.get("key", fact.key)), str(value), conflicts)
        kept = replace(
            current,
            version=current.version + 1,
            updated_at=now,
            content=Content(text, current.content.summary, {**data, "conflicts": conflicts}),
            content_hash=content_hash(text),
        )
        await self._replace(scope, kept, current, extras, reindex=text != current.text)
        return FactOutcome(FactAction.CONFLICT, kept)

    async def _earlier(
        self,
        scope: Scope,
        fact: ExtractedFact,
        sources: tuple[str, ...],
        expires_at: datetime | None,
        source: Source,
        decision: FactDecision,
        when: datetime,
        origin: str | None,
        current: MemoryRecord,
    ) -> FactOutcome:
        """``fact`` would replace the current value but was said before that value began (a
        replay of older turns after newer ones): it was the key's value from ``when`` until
        the next value began, superseded by that one, and the value it followed ends at
        ``when``; the current value stays current. One transaction, as a replacement."""
        versions = await list_records(
            self._ctx, self._scope(scope), RecordType.FACT, include_superseded=True, key=fact.key
        )
        later = min((r for r in (current, *versions) if _start(r) > when), key=_start)
        before = [
            r
            for r in versions
            if r.superseded_by is not None
            and _start(r) <= when
            and (r.valid_to is None or r.valid_to > when)
        ]
        record = self._new(scope, fact, sources, expires_at, source, decision, when, origin)
        record = replace(record, valid_to=_start(later), superseded_by=later.id)
        stored, _ = await self._insert(
            scope,
            record,
            (max(before, key=_start) if before else None,),
            self._ctx.clock.now(),
            when,
            seen=current,
        )
        return FactOutcome(FactAction.EARLIER, current, stored)

    async def _holder(self, scope: Scope, fact: ExtractedFact) -> MemoryRecord | None:
        """The current fact under another key whose value holds ``fact.replaces``: the same
        value first, then the newest that contains it. An ending ("I've stopped going to
        Porto") ends a fact of its own category only: a place the user stopped visiting is
        not where they stopped living. A plan holds no value one leaves ("I moved from Porto
        to Faro" is no next value of ``moving_to: Porto``)."""
        others = [
            r
            for r in await self.all(scope)
            if r.content.structured.get("key") not in (fact.key, *PLANS.values())
            and holds(str(r.content.structured.get("value", "")), fact.replaces)
            and (not fact.ended or r.content.structured.get("category") == fact.category)
        ]
        if not others:
            return None
        return max(
            others,
            key=lambda r: (
                same_value(str(r.content.structured.get("value", "")), fact.replaces),
                r.updated_at,
            ),
        )

    async def _plan(self, scope: Scope, fact: ExtractedFact) -> MemoryRecord | None:
        """The current plan ``fact`` carries out: ``moving_to: Porto, next month`` for
        ``location: Porto`` (``PLANS``). A move elsewhere carries out no plan: both stay."""
        key = PLANS.get(fact.key)
        if key is None or fact.ended:
            return None
        plan = await self._current(scope, key)
        if plan is None or plan.content.structured.get("ended") is True:
            return None
        return plan if carries_out(fact_value(plan), fact.value) else None

    async def _first(self, scope: Scope, key: str) -> FirstVersion:
        """A new fact for a key that no current fact holds: a random id, and the key's state
        as read, which its transaction checks first (``races.first_version``); of writers
        that read the same state one inserts and the others read again (``Raced``)."""
        return await first_version(self._ctx, scope, RecordType.FACT, "key", key, "fact-")

    async def _insert(
        self,
        scope: Scope,
        record: MemoryRecord,
        olds: Sequence[MemoryRecord | None],
        now: datetime,
        when: datetime,
        *,
        seen: MemoryRecord | None,
        extras: Sequence[MemoryRecord] = (),
        shared_as: MemoryRecord | None = None,
        first: FirstVersion | None = None,
    ) -> tuple[MemoryRecord, MemoryRecord | None]:
        """Store ``record`` and end each of ``olds`` (at ``when``) and of ``extras`` (the
        key's other live facts, at ``now``), superseded by it, in one transaction, admitted
        as one new record; returns ``record`` and the first of ``olds`` as stored (the value
        it replaced; not a plan it carried out). ``seen`` is the current fact the decision
        was made on: when another writer changed it first (``first``, a first fact: stored
        a fact of the key), nothing is written and ``Raced`` says to decide again, also when
        the quota refused a record the current state may not need. ``shared_as``: the record
        whose access ``record`` inherits; a ``set_access`` event says so, in the same
        transaction."""
        events = await self._shared_events(scope, record, shared_as)
        try:
            async with self._ctx.admit(scope, 1):
                write = (await self._ctx.writes([record]))[0]
                ending = {o.id: (o, when) for o in olds if o is not None}
                ending |= {o.id: (o, now) for o in extras if o.id not in ending}
                ended = [
                    (
                        old,
                        await self._ctx.version_write(
                            _superseded(old, record.id, now, at), reindex=False
                        ),
                    )
                    for old, at in ending.values()
                ]
                async with self._ctx.store.transaction() as tx:
                    if first is not None:
                        await first.check(tx)  # before any write: another first fact?
                    await tx.insert([write])
                    for old, end in ended:
                        await tx.replace(scope, end, expected_version=old.version)
                    if events:
                        await self._ctx.audit().append_in(tx, events)  # type: ignore[union-attr]
        except (ConflictError, NotFoundError):
            raise Raced from None
        except QuotaExceededError:
            if await self._moved(scope, record, seen):
                raise Raced from None
            raise
        replaced = olds[0] if olds else None
        return write.record, next((e.record for o, e in ended if o is replaced), None)

    async def _shared_events(
        self, scope: Scope, record: MemoryRecord, shared_as: MemoryRecord | None
    ) -> list[AuditEvent]:
        """The ``set_access`` event of a next value that inherits ``shared_as``'s access,
        as :meth:`AsyncAuditLog.ahead` returns it (none without a log, or nothing shared):
        the access a record has is one an event gave it, as ``Memory.set_access`` writes."""
        audit = self._ctx.audit()
        if audit is None or shared_as is None:
            return []
        access = record.access
        event = audit.event(
            scope.tenant,
            "system:facts",
            "set_access",
            user=scope.user,
            record_ids=[record.id],
            reason=f"the next value of a shared fact: read as {shared_as.id} is",
            details={
                "visibility": access.visibility.value,
                "allowed_users": list(access.allowed_users),
                "allowed_roles": list(access.allowed_roles),
            },
        )
        return await audit.ahead([event])

    async def _replace(
        self,
        scope: Scope,
        record: MemoryRecord,
        current: MemoryRecord,
        extras: Sequence[MemoryRecord],
        *,
        reindex: bool,
    ) -> None:
        """Store ``record`` as ``current``'s next version and end ``extras`` (the key's other
        live facts), superseded by it, in one transaction; ``Raced`` if any changed since."""
        try:
            if not extras:
                await self._ctx.replace(
                    scope, record, expected_version=current.version, reindex=reindex
                )
                return
            write = await self._ctx.version_write(record, reindex=reindex)
            await self._supersede(scope, [(write, current.version)], record.id, extras)
        except (ConflictError, NotFoundError):
            raise Raced from None

    async def _end(
        self,
        scope: Scope,
        current: MemoryRecord,
        extras: Sequence[MemoryRecord],
        name: NameRead | None = None,
    ) -> MemoryRecord:
        """``current``, after ending ``extras`` (the key's other live facts) superseded by
        it in one transaction, when there are any: a write that changes nothing of the key
        still leaves it one live fact. ``Raced`` if one changed since it was read (or,
        with ``name``, a fact of the key was stored since it was read)."""
        if extras:
            try:
                await self._supersede(scope, [], current.id, extras, name)
            except (ConflictError, NotFoundError):
                raise Raced from None
        return current

    async def _supersede(
        self,
        scope: Scope,
        writes: Sequence[tuple[RecordWrite, int]],
        by: str,
        extras: Sequence[MemoryRecord],
        name: NameRead | None = None,
    ) -> None:
        """One transaction: each of ``writes`` (a next version, the version it follows) and
        each of ``extras`` ended now, superseded by the record ``by``; ``ConflictError`` (or
        ``NotFoundError``) when one changed since it was read, and nothing is written
        (``Raced`` when ``name``, the key as read, changed since: its turn first)."""
        now = self._ctx.clock.now()
        ends = [
            (await self._ctx.version_write(_superseded(o, by, now, now), reindex=False), o.version)
            for o in extras
        ]
        async with self._ctx.store.transaction() as tx:
            if name is not None:
                await name.check(tx, live=True)
            for write, version in (*writes, *ends):
                await tx.replace(scope, write, expected_version=version)

    async def _moved(self, scope: Scope, record: MemoryRecord, seen: MemoryRecord | None) -> bool:
        """Whether the key's current fact is no longer ``seen`` (another writer's commit)."""
        current = await self._current(scope, str(record.content.structured["key"]))
        if current is None or seen is None:
            return current is not seen
        return (current.id, current.version) != (seen.id, seen.version)

    def _new(
        self,
        scope: Scope,
        fact: ExtractedFact,
        sources: Sequence[str],
        expires_at: datetime | None,
        source: Source,
        decision: FactDecision,
        now: datetime,
        origin: str | None,
        replaces: str | None = None,
        plan: MemoryRecord | None = None,
    ) -> MemoryRecord:
        structured: dict[str, Any] = {
            "category": fact.category,
            "key": fact.key,
            "value": fact.value,
            "confidence": decision.confidence,
            "mentions": decision.mentions,
            "first_observed": now.isoformat(),
            "last_updated": now.isoformat(),
            "expires_at": _iso(expires_at),
            "evidence": fact.evidence,
            "conflicts": [],
        }
        if replaces:
            structured["replaces"] = replaces
        if plan is not None:
            structured["carries_out"] = plan.id
        if fact.ended:
            structured["ended"] = True
        return build_record(
            self._ctx,
            scope,
            fact_text(fact.key, fact.value, ended=fact.ended),
            type=RecordType.FACT,
            importance=max(0.6, min(1.0, decision.confidence)),
            confidence=decision.confidence,
            structured=structured,
            metadata={"category": fact.category, "key": fact.key}
            | ({"origin": origin} if origin else {}),
            source=source,
            source_ids=sources,
            tags=(fact.category,),
            valid_from=now,
            observed_at=now,
        )


def _start(fact: MemoryRecord) -> datetime:
    """When the fact's value began to hold (a fact ``add`` wrote has no ``valid_from``)."""
    return fact.valid_from or fact.observed_at


def _superseded(old: MemoryRecord, by: str, now: datetime, when: datetime) -> MemoryRecord:
    """``old``'s next version, ended at ``when`` and superseded by the record ``by``."""
    return replace(old, version=old.version + 1, updated_at=now, valid_to=when, superseded_by=by)


class AsyncFactExtractionStep:
    """Ingest step: explicit facts from the user's messages, with the messages as provenance.

    Extraction goes through ``ctx.llm``; if it raises, the offline heuristic extracts
    instead. Messages are already stored, so nothing is lost either way; re-running on the
    same messages changes nothing (their ids are already in the facts' provenance).
    """

    name = "facts"

    def __init__(self, ctx: AsyncLayerContext, facts: AsyncFactService | None = None) -> None:
        self._ctx = ctx
        self._facts = facts or AsyncFactService(ctx)
        self._fallback = HeuristicLLM()

    async def _extract(self, text: str) -> list[ExtractedFact]:
        try:
            return await self._ctx.llm.extract_facts([text])
        except Exception as exc:  # a failing model degrades to the heuristic, never breaks
            log.warning(
                "fact extraction via %s failed (%s); using the heuristic",
                getattr(self._ctx.llm, "name", "llm"),
                exc,
            )
            return self._fallback.extract_facts([text])

    async def on_messages(self, scope: Scope, messages: Sequence[MemoryRecord]) -> None:
        for message in messages:
            if message.type is not RecordType.MESSAGE or message.role is not Role.USER:
                continue
            for fact in await self._extract(message.text):
                try:
                    _fact(fact)
                except ValidationError as exc:  # a model's malformed fact: the rest still count
                    log.warning("skipped an extracted fact: %s", exc)
                    continue
                await self._facts.upsert(
                    scope, fact, (message.id,), observed_at=message.observed_at, origin=EXTRACTED
                )

    async def on_session_end(self, scope: Scope) -> None:
        """Nothing to do: facts are extracted as messages arrive."""
