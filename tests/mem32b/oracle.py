"""The code before mem32b, kept as the oracle of tests/mem32b: ``InMemoryAudit``'s
redaction of a purged user as a walk of every event of the log, and a caller's ``count``
as a walk of every shared record of the owner (lead32 e73608a)."""

from __future__ import annotations

from collections.abc import Sequence

from memstrata.audit_backends import InMemoryAudit
from memstrata.audit_types import AuditEvent, redacted_event, without_actor, without_reader
from memstrata.filters import Filters
from memstrata.scope import Scope
from memstrata.store.memory import InMemoryStore


class WalkedAudit(InMemoryAudit):
    """``append_audit`` and ``redact_subject`` as they were (e73608a): no index, every
    event of the log is looked at."""

    def append_audit(self, events: Sequence[AuditEvent]) -> None:
        with self._lock:
            self._events.extend(events)

    def redact_subject(self, tenant: str, user: str) -> int:
        n = 0
        with self._lock:
            for i, e in enumerate(self._events):
                if e.tenant != tenant:
                    continue
                if e.user == user:
                    kept = redacted_event(e, user)
                else:
                    kept = without_actor(without_reader(e, user), user)
                if kept is not e:
                    self._events[i] = kept
                    n += 1
        return n


def walked_count(store: InMemoryStore, scope: Scope, filters: Filters) -> int:
    """A caller's ``count`` as it was (e73608a): every shared record of the owner looked at."""
    with store._lock:
        shared = store._shared(scope.tenant, scope.user)
        return sum(filters.matches(e.record) for e in shared if e.record.visible_in(scope))
