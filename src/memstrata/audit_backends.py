"""Where the sync stores keep audit events: SQLite's ``audit_log`` table, a list for
``memory://`` (and for a backend without an audit table), and :func:`audit_store`, which picks
one for a store. ``memstrata.audit`` re-exports them; the async tree reaches them through
:mod:`memstrata.aio.core_audit`."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import weakref
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from .audit_types import (
    PURGED,
    AuditEvent,
    AuditQuery,
    event_of_row,
    names_user,
    redacted_event,
    row_of_event,
    unknown_event,
    without_actor,
    without_reader,
)
from .errors import StoreError

if TYPE_CHECKING:
    from .audit import AuditStore

__all__ = [
    "AUDIT_COLUMNS",
    "SUBJECT_EVENTS",
    "InMemoryAudit",
    "SQLiteAudit",
    "audit_store",
    "sqlite_append_audit",
    "sqlite_index_readers",
    "sqlite_redact_reader",
    "sqlite_redact_subject",
]

log = logging.getLogger("memstrata.audit")


class InMemoryAudit:
    """The audit log of a ``memory://`` store: a list, gone with the process.

    A query walks the events it may return, not the log: each event's place in the log's
    order, ``(at, position)`` (as the tables' ``(at, seq)``), is kept sorted in the lanes
    of its tenant (every event), of its user, its actor and its action (``_lanes``, filed
    on append and again when a redaction changes the event); a query walks the shortest
    lane its filters name, from its ``since`` or ``after`` cursor (bisected) to its
    ``until``, until ``offset + limit`` events match (mem33: it sorted every event of the
    tenant at each query). Not in a lane by record id: nearly every event names records of
    its own, and a lane each doubled an append's cost (docs/measurements.md, session 33); the
    positions of the events naming each record id are kept instead (``_by_record``, a list
    appended to), and a query by ``record_id`` sorts those of the tenant's when they are
    fewer than its narrowest lane (mem34: it walked the tenant's lane)."""

    def __init__(self, *, in_transactions: bool = False) -> None:
        self._events: list[AuditEvent] = []
        # The positions in ``_events`` of the events a whole-user purge of a name may
        # change, by ``(tenant, name)``: the name's own events, those it acted in and the
        # ``set_access`` events listing it as a reader (``_names``). Kept on each append, so
        # ``redact_subject`` costs the user's events, not the log's; a position whose event
        # no longer names the user is passed over (the redaction's rules decide, as before).
        self._by_subject: dict[tuple[str, str], set[int]] = {}
        # The events' places ``(at in µs, position)`` in the log's order, by lane
        # (:func:`_lanes`): what a query walks (mem33).
        self._lanes: dict[Lane, list[Place]] = {}
        # the events' ids and the first position of each (an id held again: its later
        # positions in ``_more_ids``): a dump's load (memory_dump.py) skips held ids; a
        # query's ``after`` finds its cursor
        self._ids: dict[str, int] = {}
        self._more_ids: dict[str, list[int]] = {}
        # The positions of the events naming each record id (every tenant's, in the order
        # appended; a position kept after a redaction took the id out: the query checks
        # the event), the first in ``_by_record`` and the later ones in
        # ``_more_by_record`` (as ``_ids``): what a query by ``record_id`` reads instead of
        # a lane (mem34)
        self._by_record: dict[str, int] = {}
        self._more_by_record: dict[str, list[int]] = {}
        self._lock = threading.Lock()
        # ``memory://``'s own log: its units of work append events with their writes
        # (store/memory.py); the fallback log of a store without one cannot.
        self.audit_in_transactions = in_transactions

    def append_audit(self, events: Sequence[AuditEvent]) -> None:
        with self._lock:
            self._extend(events)

    def _extend(self, events: Sequence[AuditEvent]) -> None:
        """Append ``events`` and file them by subject and lane; the caller holds ``_lock``
        (``load_audit`` of store/memory_dump.py appends through it too)."""
        lanes, named = self._lanes, self._by_record.setdefault
        for e in events:
            i = len(self._events)
            place = (_micros(e.at), i)  # first: an ``at`` that is no datetime appends nothing
            self._events.append(e)
            self._file(i, e)
            for lane in _lanes(e):  # ``_place`` inlined: ~1 µs less an event
                held = lanes.get(lane)
                if held is None:
                    lanes[lane] = [place]
                elif held[-1] < place:  # the usual append: the newest event
                    held.append(place)
                else:
                    insort(held, place)
            if self._ids.setdefault(e.id, i) != i:
                self._more_ids.setdefault(e.id, []).append(i)
            for rid in e.record_ids:  # no list made for an id's first event (most ids')
                if named(rid, i) != i:
                    self._more_by_record.setdefault(rid, []).append(i)

    def _file(self, i: int, e: AuditEvent) -> None:
        for name in _names(e):
            self._by_subject.setdefault((e.tenant, name), set()).add(i)

    def _place(self, place: Place, lanes: Iterable[Lane]) -> None:
        for lane in lanes:
            held = self._lanes.setdefault(lane, [])
            if not held or held[-1] < place:  # the usual append: the newest event
                held.append(place)
            else:
                insort(held, place)

    def _unplace(self, place: Place, lanes: Iterable[Lane]) -> None:
        for lane in lanes:
            held = self._lanes[lane]
            del held[bisect_left(held, place)]
            if not held:
                del self._lanes[lane]

    def _positions(self, event_id: str) -> list[int]:
        first = self._ids.get(event_id)
        return [] if first is None else [first, *self._more_ids.get(event_id, ())]

    def query_audit(self, tenant: str, query: AuditQuery) -> list[AuditEvent]:
        found: list[AuditEvent] = []
        with self._lock:  # the log's order: (at, position), as the tables' (at, seq)
            cursor: Place | None = None
            if query.after is not None:
                cursor = min(
                    (
                        (_micros(self._events[i].at), i)
                        for i in self._positions(query.after)
                        if self._events[i].tenant == tenant
                    ),
                    default=None,
                )
                if cursor is None:
                    raise unknown_event(tenant, query.after)
            lane = min((self._lanes.get(k, []) for k in _query_lanes(tenant, query)), key=len)
            if query.record_id is not None:  # the record's events, sorted: a handful
                first = self._by_record.get(query.record_id)
                named = (
                    [] if first is None else [first, *self._more_by_record.get(query.record_id, ())]
                )
                if len(named) < len(lane):
                    mine = ((i, self._events[i]) for i in named)
                    lane = sorted({(_micros(e.at), i) for i, e in mine if e.tenant == tenant})
            lo, hi = 0, len(lane)
            if query.since is not None:
                lo = bisect_left(lane, (_micros(query.since), -1))
            if cursor is not None:
                lo = max(lo, bisect_right(lane, cursor))
            if query.until is not None:
                hi = bisect_left(lane, (_micros(query.until), -1))
            skip, want = query.offset, query.limit
            for k in range(lo, hi):
                e = self._events[lane[k][1]]
                if not query.matches(e):
                    continue
                if skip:
                    skip -= 1
                    continue
                found.append(e)
                if len(found) == want:
                    break
        return found

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
                    was, now = set(_lanes(e)), set(_lanes(kept))
                    place = (_micros(e.at), i)
                    self._unplace(place, was - now)  # its user, maybe its actor
                    self._place(place, now - was)
                    n += 1
        return n


# A lane of the log (``InMemoryAudit._lanes``): ``(tenant, field, value)``, the tenant's
# every event under ``(tenant, "", "")``; an event's place in it: ``(at in µs, position)``.
Lane = tuple[str, str, str]
Place = tuple[int, int]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _micros(at: datetime) -> int:
    """``at`` as whole µs since the epoch (a naive time read as UTC): an exact order key
    that compares times of any offset (and naive ones, which the sort of before refused
    beside aware ones) as instants."""
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return (at - _EPOCH) // _MICROSECOND


def _lanes(e: AuditEvent) -> list[Lane]:
    """The lanes ``e`` is placed in, each once: its tenant's, its user's, actor's and
    action's (what :class:`AuditQuery` filters on besides time and record id)."""
    t = e.tenant
    lanes = [(t, "", ""), (t, "actor", e.actor), (t, "action", e.action)]
    if e.user is not None:
        lanes.append((t, "user", e.user))
    return lanes


def _query_lanes(tenant: str, q: AuditQuery) -> Iterator[Lane]:
    """The lanes holding every event ``q`` may return (the shortest is walked)."""
    yield (tenant, "", "")
    for name, value in (
        ("user", q.user),
        ("actor", q.actor),
        ("action", q.action),
    ):
        if value is not None:
            yield (tenant, name, value)


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


# The events of a user and those they acted in (``sqlite_redact_subject``), read in the
# table's order: ``NOT INDEXED`` keeps the planner off ``audit_log_tenant_at``.
SUBJECT_EVENTS = (
    "SELECT seq, user IS ?2, actor FROM audit_log NOT INDEXED "
    "WHERE tenant = ?1 AND (user = ?2 OR actor = ?2)"
)


def sqlite_redact_subject(conn: sqlite3.Connection, tenant: str, user: str) -> int:
    """The SQLite redaction, inside the caller's transaction (the store's purge): the
    user's own events lose who and which ids, and their actor when it names the user
    (``audit_types.names_user``; the one update the table's trigger lets through), other
    users' ``set_access`` events lose the user from
    ``details.allowed_users`` (:func:`sqlite_redact_reader`), and other events whose actor
    is the user (exactly: ``audit_types.without_actor``) get ``[purged]`` as actor.

    The user's own events and the events they acted in are found by one read of the
    table in its order (an index by user or by actor does not fit on the schema's first
    page, tests/err26), then updated by ``seq``. Not by ``audit_log_tenant_at``: that
    looks up each of the tenant's events in the table, ~3 µs each (100,000 events: ~290
    ms, more than the purge's VACUUM of the whole file; the table in order: ~9 ms), and
    the VACUUM that follows a whole-user purge reads the whole table anyway
    (docs/measurements.md, session 29)."""
    own: list[int] = []
    named: list[int] = []  # of own: the actor names the user (audit_types.names_user)
    acted: list[int] = []
    for seq, mine, actor in conn.execute(SUBJECT_EVENTS, (tenant, user)):
        (own if mine else acted).append(int(seq))
        if mine and names_user(str(actor), user):
            named.append(int(seq))
    n = 0
    if own:
        n += conn.execute(
            "UPDATE audit_log SET user = NULL, record_ids = '[]', reason = ?1, details = '{}', "
            "actor = CASE WHEN seq IN (SELECT value FROM json_each(?5)) THEN ?1 ELSE actor END "
            "WHERE seq IN (SELECT value FROM json_each(?4)) AND tenant = ?2 AND user = ?3",
            (PURGED, tenant, user, json.dumps(own), json.dumps(named)),
        ).rowcount
    return n + sqlite_redact_reader(conn, tenant, user, acted=acted)


# One of other users' set_access events naming the user as a reader (the JSON string,
# then the parsed list: an id that is a substring of another's is not taken), by its seq.
_NAMES_READER = (
    "seq = ?4 AND tenant = ?1 AND action = 'set_access' AND instr(details, ?3) > 0 AND EXISTS "
    "(SELECT 1 FROM json_each(audit_log.details, '$.allowed_users') WHERE value = ?2)"
)


def sqlite_redact_reader(
    conn: sqlite3.Connection, tenant: str, user: str, *, acted: Sequence[int] = ()
) -> int:
    """Take ``user`` out of the readers listed in other users' ``set_access`` events
    (the events stay, with their other readers), and make the actor of the events of
    ``acted`` (seqs of other users' events whose actor is ``user``) ``[purged]``, inside
    the caller's transaction (the store's purge: ``BEGIN IMMEDIATE``, so no other
    connection writes meanwhile). The set_access events are those the index of readers
    holds for them (store/purged_reader.py): what was shared with them, not the tenant's
    log.

    The table's trigger refuses these updates (it allows only the redaction of the purged
    user's own events). Rather than a longer trigger (its text must keep the schema on the
    file's first page: a damaged file's first third still opens, tests/err26), this one
    path drops the trigger and creates it again from its own text around the updates, in
    the same transaction: no committed state, nor any other connection, ever sees the log
    without it, and a kill midway rolls all three back."""
    needle = json.dumps(user, ensure_ascii=False)
    found = [
        (tenant, user, needle, int(seq))
        for (seq,) in conn.execute(
            "SELECT i FROM rr WHERE t = ? AND r = ? AND u != ? AND typeof(i) = 'integer'",
            (tenant, user, user),
        ).fetchall()
    ]
    found = [
        args
        for args in found
        if conn.execute(f"SELECT 1 FROM audit_log WHERE {_NAMES_READER}", args).fetchone()
    ]
    if not found and not acted:
        return 0
    trigger = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'audit_log_no_update'"
    ).fetchone()
    if trigger is not None:
        conn.execute("DROP TRIGGER audit_log_no_update")
    n = 0
    for args in found:
        n += conn.execute(
            "UPDATE audit_log SET details = json_set(details, '$.allowed_users', json(("
            "SELECT json_group_array(value) FROM json_each(audit_log.details, "
            f"'$.allowed_users') WHERE value != ?2))) WHERE {_NAMES_READER} "
            "AND instr(details, '\\u0000') = 0",
            args,
        ).rowcount
        # A legacy id holding NUL (stored before session 20): SQLite's JSON functions cut
        # it at the NUL, so these events are edited in Python, the id kept as it is.
        for seq, text in conn.execute(
            f"SELECT seq, details FROM audit_log WHERE {_NAMES_READER} "
            "AND instr(details, '\\u0000') > 0",
            args,
        ).fetchall():
            details = json.loads(text)
            details["allowed_users"] = [u for u in details["allowed_users"] if u != user]
            n += conn.execute(
                "UPDATE audit_log SET details = ? WHERE seq = ?",
                (json.dumps(details, ensure_ascii=False, default=str), seq),
            ).rowcount
    if acted:
        n += conn.execute(
            "UPDATE audit_log SET actor = ?1 WHERE seq IN (SELECT value FROM json_each(?2)) "
            "AND tenant = ?3 AND actor = ?4 AND user IS NOT ?4",
            (PURGED, json.dumps(list(acted)), tenant, user),
        ).rowcount
    if trigger is not None:
        conn.execute(trigger[0])
    return n


AUDIT_COLUMNS = "id, tenant, user, actor, action, at, record_ids, reason, policy, score, details"


def sqlite_append_audit(conn: sqlite3.Connection, events: Sequence[AuditEvent]) -> None:
    """Append ``events`` inside the caller's transaction (``SQLiteAudit.append_audit``'s
    own, or a unit of work's: ``UnitOfWork.append_audit``)."""
    rows = [row_of_event(e, json_ids=True) for e in events]
    conn.executemany(
        f"INSERT INTO audit_log ({AUDIT_COLUMNS}) VALUES ({', '.join('?' * 11)})", rows
    )
    sqlite_index_readers(conn, events)


def sqlite_index_readers(conn: sqlite3.Connection, events: Sequence[AuditEvent]) -> None:
    """The rows of the index of readers (``rr``, store/purged_reader.py) of the set_access
    events among ``events``, stored already: ``(tenant, reader, user, seq)``."""
    conn.executemany(
        "INSERT OR IGNORE INTO rr SELECT a.tenant, u.value, a.user, a.seq FROM audit_log a, "
        "json_each(a.details, '$.allowed_users') u WHERE a.id = ? AND a.user IS NOT NULL",
        [(e.id,) for e in events if e.action == "set_access" and e.user is not None],
    )


class SQLiteAudit:
    """The ``audit_log`` table of a SQLite store, written in the store's own transactions."""

    # Its events are rows of the store's database: a unit of work of the store appends
    # them in its transaction (``UnitOfWork.append_audit``), with the writes they record.
    audit_in_transactions = True

    def __init__(self, store: Any) -> None:
        self._store = store

    def append_audit(self, events: Sequence[AuditEvent]) -> None:
        with self._store._write() as c:
            sqlite_append_audit(c, events)

    def query_audit(self, tenant: str, query: AuditQuery) -> list[AuditEvent]:
        sql = f"SELECT {AUDIT_COLUMNS} FROM audit_log WHERE tenant = ?"
        args: list[Any] = [tenant]
        for column, value in (
            ("user", query.user),
            ("action", query.action),
            ("actor", query.actor),
        ):
            if value is not None:
                sql += f" AND {column} = ?"
                args.append(value)
        if query.record_id is not None:
            sql += " AND EXISTS (SELECT 1 FROM json_each(record_ids) WHERE value = ?)"
            args.append(query.record_id)
        if query.since is not None:
            sql += " AND at >= ?"
            args.append(query.since.isoformat())
        if query.until is not None:
            sql += " AND at < ?"
            args.append(query.until.isoformat())
        if query.after is not None:
            sql += " AND (at > ? OR (at = ? AND seq > ?))"
        sql += " ORDER BY at, seq LIMIT ? OFFSET ?"
        with self._store._read() as c:
            if query.after is not None:
                cursor = c.execute(
                    "SELECT at, seq FROM audit_log WHERE tenant = ? AND id = ?",
                    (tenant, query.after),
                ).fetchone()
                if cursor is None:
                    raise unknown_event(tenant, query.after)
                args += [cursor[0], cursor[0], cursor[1]]
            rows = c.execute(sql, [*args, query.limit, query.offset]).fetchall()
        return [event_of_row(tuple(r), json_ids=True) for r in rows]

    def redact_subject(self, tenant: str, user: str) -> int:
        with self._store._write() as c:
            return sqlite_redact_subject(c, tenant, user)


_IN_MEMORY: weakref.WeakKeyDictionary[object, InMemoryAudit] = weakref.WeakKeyDictionary()
_IN_MEMORY_LOCK = threading.Lock()


def audit_store(store: object) -> AuditStore:
    """The audit backend of ``store``: the store itself when it implements
    :class:`AuditStore` (e.g. PostgreSQL), else the adapter for the built-in stores."""
    from .audit import AuditStore

    if isinstance(store, AuditStore):
        return store
    from .store.memory import InMemoryStore
    from .store.sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        return SQLiteAudit(store)
    if isinstance(store, InMemoryStore):
        return store.audit_log
    if not isinstance(store, InMemoryStore):
        # A backend without its own audit table (PostgreSQL today): keep the events in
        # process memory and say so, rather than refusing to open the store.
        log.warning(
            "%s keeps no audit log: events are kept in process memory only; "
            "implement memstrata.audit.AuditStore on it to persist them",
            type(store).__name__,
        )
    with _IN_MEMORY_LOCK:
        try:
            return _IN_MEMORY.setdefault(store, InMemoryAudit())
        except TypeError:  # not weak-referenceable
            raise StoreError(
                f"{type(store).__name__} keeps no audit log: implement "
                "memstrata.audit.AuditStore on it"
            ) from None
