"""The code before mem32b, kept as the oracle of tests/mem32b: ``InMemoryAudit``'s
redaction of a purged user as a walk of every event of the log, and a caller's ``count``
as a walk of every shared record of the owner, a dump's load of key rows and audit events
with every held row's hash / event's id gathered first (lead32 e73608a)."""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence

from memstrata.audit_backends import InMemoryAudit
from memstrata.audit_types import AuditEvent, redacted_event, without_actor, without_reader
from memstrata.filters import Filters
from memstrata.scope import Scope
from memstrata.store.key_rows import KeyRow
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


def walked_load_keys(rows: MutableMapping[str, KeyRow], keys: Sequence[KeyRow]) -> int:
    """``load_keys`` as it was (e73608a), on a plain dict of the held rows: every held
    row's hash gathered first."""
    new = 0
    hashes = {k.key_hash for k in rows.values()}
    for key in keys:
        if key.id not in rows and key.key_hash not in hashes:
            rows[key.id] = key
            hashes.add(key.key_hash)
            new += 1
    return new


def walked_load_audit(events: list[AuditEvent], loaded: Sequence[AuditEvent]) -> int:
    """``load_audit`` as it was (e73608a), on a list of the held events."""
    known = {e.id for e in events}
    fresh = [e for e in loaded if e.id not in known]
    events.extend(fresh)
    return len(fresh)
