"""The code before mem33, kept as the oracle of tests/mem33 (main 5ecb98d):
``InMemoryAudit`` as it was (its ``query_audit`` sorts every event of the tenant at each
query; the append files each event by subject for ``redact_subject``, mem32b), a caller's
``count`` as it was (the caller's kept order walked between the time bounds, every other
filter checked record by record), and a claim of pending jobs as it was (a claim by user
alone walks every user's first pending job)."""

from __future__ import annotations

import itertools
import threading
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from memstrata.audit_types import (
    AuditEvent,
    AuditQuery,
    redacted_event,
    unknown_event,
    without_actor,
    without_reader,
)
from memstrata.filters import Filters
from memstrata.scope import Scope
from memstrata.store.memory import InMemoryStore
from memstrata.store.memory_jobs import JobIndex, Queues

__all__ = ["OldAudit", "OldJobIndex", "old_after", "old_count", "old_list", "old_walk"]


class OldAudit:
    """main 5ecb98d's ``InMemoryAudit``, verbatim but for its name."""

    def __init__(self, *, in_transactions: bool = False) -> None:
        self._events: list[AuditEvent] = []
        # The positions in ``_events`` of the events a whole-user purge of a name may
        # change, by ``(tenant, name)``: the name's own events, those it acted in and the
        # ``set_access`` events listing it as a reader (``_names``). Kept on each append, so
        # ``redact_subject`` costs the user's events, not the log's; a position whose event
        # no longer names the user is passed over (the redaction's rules decide, as before).
        self._by_subject: dict[tuple[str, str], set[int]] = {}
        self._ids: set[str] = set()  # the events' ids, for a dump's load (memory_dump.py)
        self._lock = threading.Lock()
        # ``memory://``'s own log: its units of work append events with their writes
        # (store/memory.py); the fallback log of a store without one cannot.
        self.audit_in_transactions = in_transactions

    def append_audit(self, events: Sequence[AuditEvent]) -> None:
        with self._lock:
            self._extend(events)

    def _extend(self, events: Sequence[AuditEvent]) -> None:
        """Append ``events`` and file them by subject; the caller holds ``_lock``
        (``load_audit`` of store/memory_dump.py appends through it too)."""
        for e in events:
            self._file(len(self._events), e)
            self._events.append(e)
            self._ids.add(e.id)

    def _file(self, i: int, e: AuditEvent) -> None:
        for name in _names(e):
            self._by_subject.setdefault((e.tenant, name), set()).add(i)

    def query_audit(self, tenant: str, query: AuditQuery) -> list[AuditEvent]:
        with self._lock:  # the log's order: (at, position), as the tables' (at, seq)
            mine = sorted(
                ((e.at, i, e) for i, e in enumerate(self._events) if e.tenant == tenant),
                key=lambda t: (t[0], t[1]),
            )
        if query.after is not None:
            cursor = next(((at, i) for at, i, e in mine if e.id == query.after), None)
            if cursor is None:
                raise unknown_event(tenant, query.after)
            mine = [t for t in mine if (t[0], t[1]) > cursor]
        found = [e for _, _, e in mine if query.matches(e)]
        return found[query.offset : query.offset + query.limit]

    def redact_subject(self, tenant: str, user: str) -> int:
        """The user's events lose who and which ids; other users' ``set_access`` events
        lose the user from the readers they list, and other events whose actor is the user
        get ``[purged]`` as actor (the events stay). Only the events filed under the user
        are looked at (``_by_subject``)."""
        n = 0
        with self._lock:
            for i in sorted(self._by_subject.pop((tenant, user), ())):
                e = self._events[i]
                if e.user == user:
                    kept = redacted_event(e, user)
                else:
                    kept = without_actor(without_reader(e, user), user)
                if kept is not e:
                    self._events[i] = kept
                    self._file(i, kept)  # its actor may now be [purged]
                    n += 1
        return n


def _names(e: AuditEvent) -> set[str]:
    """The names a whole-user purge of which may change ``e`` (``redact_subject``'s rules):
    its user, its actor, and the readers a ``set_access`` event lists."""
    names = {e.actor}
    if e.user is not None:
        names.add(e.user)
    readers = e.details.get("allowed_users") if e.action == "set_access" else None
    if isinstance(readers, list):
        names.update(r for r in readers if isinstance(r, str))
    return names


# --- a caller's count and walk (main 5ecb98d's InMemoryStore._caller_count and
# _readable_walk, as functions of the store; the caller's whole kept order walked) ---------


def old_count(store: InMemoryStore, scope: Scope, filters: Filters) -> int:
    with store._lock:
        if filters.ids is not None:
            shared = store._sharing(scope.tenant, scope.user)
            placed = shared.order(scope).placed
            found = [shared.entries[rid] for rid in filters.ids if rid in placed]
            return sum(e.record.visible_in(scope) and filters.matches(e.record) for e in found)
        return sum(1 for _ in old_walk(store, scope, filters, newest_first=False))


def old_walk(
    store: InMemoryStore,
    scope: Scope,
    filters: Filters,
    newest_first: bool,
    below: tuple[datetime, int] | None = None,
    from_: tuple[datetime, int] | None = None,
) -> Iterator[Any]:
    shared = store._sharing(scope.tenant, scope.user)
    places = shared.order(scope).places
    lo, hi = 0, len(places)
    if filters.observed_after is not None:
        lo = bisect_left(places, (filters.observed_after,))
    if from_ is not None:
        lo = max(lo, bisect_left(places, from_))
    if filters.observed_before is not None:
        hi = bisect_left(places, (filters.observed_before,))
    if below is not None:
        hi = min(hi, bisect_left(places, below))
    for i in range(hi - 1, lo - 1, -1) if newest_first else range(lo, hi):
        entry = shared.entries[places[i][2]]
        if entry.record.visible_in(scope) and filters.matches(entry.record):
            yield entry


def old_list(
    store: InMemoryStore, scope: Scope, filters: Filters, limit: int, offset: int, newest: bool
) -> list[str]:
    """A caller's ``list`` page as main's ``_list`` walked it."""
    with store._lock:
        walk = old_walk(store, scope, filters, newest)
        return [e.record.id for e in itertools.islice(walk, offset, offset + limit)]


def old_after(
    store: InMemoryStore, scope: Scope, filters: Filters, rid: str, limit: int, newest: bool
) -> list[str]:
    """A caller's ``list_after`` as main's walked it."""
    with store._lock:
        at = store._visible(scope, rid)
        if at is None:
            return []
        place = (at.record.observed_at, at.seq)
        after = (place, None) if newest else (None, (place[0], place[1] + 1))
        walk = old_walk(store, scope, filters, newest, *after)
        return [e.record.id for _, e in zip(range(limit), walk, strict=False)]


# --- the pending jobs' groups (main 5ecb98d's JobIndex._group) ------------------------------


class OldJobIndex(JobIndex):
    """A job index whose claims and counts by user alone use every pending job's group, as
    main's ``_group`` (which took no user) did."""

    def _group(self, tenant: str | None, session: str | None, user: str | None) -> Queues | None:
        if session is not None:
            return self.of_session.get(session)
        if tenant is not None:
            return self.of_tenant.get(tenant)
        return self.queues
