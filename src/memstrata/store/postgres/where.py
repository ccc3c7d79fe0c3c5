"""SQL ``WHERE`` fragments for PostgreSQL: the mirror of ``Scope.admits`` and
``Filters.matches`` (metadata conditions are checked in Python, as in the SQLite store;
string equalities also narrow the rows in SQL first)."""

from __future__ import annotations

import functools
import json
from typing import Any

from ...filters import Filters
from ...records import RecordStatus
from ...scope import Scope
from ..sqlite.codec import encode_time
from ..types import INDEXED_NAMES

__all__ = [
    "LIVE_SQL",
    "filters_sql",
    "json_of",
    "json_pair",
    "key_sql",
    "needs_python",
    "nul_read_as",
    "records_from",
    "scope_sql",
    "Walk",
]

Fragment = tuple[str, list[Any]]


def nul_read_as(column: str, escape: str) -> str:
    """SQL: the JSON text ``column`` with each ``\\u0000`` escape (a NUL, which ``::json``
    cannot read) written as the JSON escape ``escape`` (``"u0001"``, ``"ufffd"``). Only a real
    escape: one preceded by an odd run of backslashes is a backslash and "u0000" as
    characters. The one spelling of this pattern: schema 12's indexes repeat it word for
    word (:func:`key_sql`)."""
    return rf"regexp_replace({column}, '(?<!\\)((?:\\\\)*)\\u0000', '\1\\{escape}', 'g')"


def json_of(column: str) -> str:
    """``column`` (a JSON text column: tags, access) as ``json``. A NUL in one of its
    strings, which rows written before session 20 may hold, is read as U+FFFD: PostgreSQL's
    ``json`` cannot turn that escape into text, and the cast failed every filter over the
    user's rows. The row itself is left as it was written."""
    return (
        f"(CASE WHEN strpos({column}, '\\u0000') = 0 THEN {column} "
        f"ELSE {nul_read_as(column, 'ufffd')} END)::json"
    )


Walk = tuple[str, tuple[str, Any, int] | None, int | None]
"""How a listing reads: its order (``ASC``/``DESC``), the place it starts after (``>`` or
``<``, an ``observed_at`` and a ``seq``) and how many it keeps (``None``: all)."""


def records_from(scope: Scope, filters: Filters, walk: Walk | None = None) -> Fragment:
    """What a listing of ``scope`` reads ``records`` from.

    The owner's: the table, walked by its indexes. A caller's (caller30): only the owner's
    records it may read, each then read by its ``seq`` (a lateral read the planner keeps
    apart: it cannot choose to walk the owner's rows instead): those the index of readers
    names the caller for and, for a caller with roles, those of step 25's
    ``records_shared_roles`` (∝ what is shared by name and role, as a caller's search
    finds them, store/postgres/lexical.py), and the owner's public records walked in the
    listing's order from ``walk``'s place through step 26's ``records_public_observed``, as
    many as ``walk`` keeps of those ``filters`` and the caller's rule admit (∝ the page, not
    the owner's records). A caller's ``list`` walked the owner's rows in order until its
    page was full, so its cost (24 ms for 100 of 10k notes mostly private) grew with the
    records the owner did not share. These name a superset (a reader of an earlier
    version): the statement's ``scope_sql`` still decides. The join adds one column,
    ``m.s``."""
    if scope.caller is None:
        return "records", []
    parts = [
        "SELECT r.seq FROM record_readers rr JOIN records r ON r.tenant = rr.tenant AND "
        'r."user" = rr."user" AND r.id = rr.id WHERE rr.tenant = %s AND rr.reader = %s '
        'AND rr."user" = %s'
    ]
    args: list[Any] = [scope.tenant, scope.caller, scope.user]
    if scope.roles:  # the condition of records_shared_roles, written out for the planner
        parts.append(
            'SELECT seq FROM records WHERE tenant = %s AND "user" = %s AND '
            "visibility != 'public' AND strpos(access, '\"allowed_roles\":[]') = 0"
        )
        args += [scope.tenant, scope.user]
    sw, sa = scope_sql(scope)
    fw, fa = filters_sql(filters)
    order, after, keep = walk if walk is not None else ("ASC", None, None)
    place, place_args = "", []
    if after is not None:
        place, place_args = f" AND (observed_at, seq) {after[0]} (%s, %s)", [*after[1:]]
    limit, limit_args = ("", []) if keep is None else (" LIMIT %s", [keep])
    parts.append(  # records_public_observed's condition, written out for the planner
        f'(SELECT seq FROM records WHERE tenant = %s AND "user" = %s AND '
        f"visibility = 'public'{place} AND {sw} AND {fw} "
        f"ORDER BY observed_at {order}, seq {order}{limit})"
    )
    args += [scope.tenant, scope.user, *place_args, *sa, *fa, *limit_args]
    return (
        f"({' UNION '.join(parts)}) AS m (s) CROSS JOIN LATERAL "
        "(SELECT * FROM records WHERE records.seq = m.s OFFSET 0) AS records",
        args,
    )


def scope_sql(scope: Scope, p: str = "") -> Fragment:
    """Tenant and user always; session and agent per ``Scope.admits``."""
    parts = [f"{p}tenant = %s", f'{p}"user" = %s']
    args: list[Any] = [scope.tenant, scope.user]
    if scope.session is not None:
        parts.append(f"{p}session = %s")
        args.append(scope.session)
    if scope.agent is not None:
        parts.append(f"({p}agent IS NULL OR {p}agent = %s OR {p}visibility <> 'private')")
        args.append(scope.agent)
    if scope.caller is not None:  # access control (seed 003), as in Scope.admits
        parts.append(f"{p}status = '{RecordStatus.ACTIVE.value}'")  # a deleted one is not shared
        parts.append(
            f"({p}visibility = 'public' OR EXISTS (SELECT 1 FROM json_array_elements_text("
            f"{json_of(p + 'access')}->'allowed_users') AS au(v) WHERE au.v = %s) OR EXISTS ("
            f"SELECT 1 FROM json_array_elements_text({json_of(p + 'access')}->'allowed_roles') "
            "AS ar(v) WHERE ar.v = ANY(%s)))"
        )
        args += [scope.caller, sorted(scope.roles)]
    return " AND ".join(parts), args


def filters_sql(f: Filters, p: str = "") -> Fragment:
    """Every filter except metadata, as SQL over the ``records`` columns."""
    parts: list[str] = []
    args: list[Any] = []

    def add(sql: str, *values: Any) -> None:
        parts.append(sql)
        args.extend(values)

    if not f.include_deleted:  # a literal: schema 12's indexes of live rows apply
        add(f"{p}status = '{RecordStatus.ACTIVE.value}'")
    if f.valid_at is not None:
        at = encode_time(f.valid_at)
        add(f"({p}valid_from IS NULL OR {p}valid_from <= %s)", at)
        add(f"({p}valid_to IS NULL OR {p}valid_to > %s)", at)
    elif not f.include_superseded:
        add(f"{p}superseded_by IS NULL")
    for column, values in (("id", f.ids), ("type", f.types), ("source", f.sources)):
        if values is not None:
            add(f"{p}{column} = ANY(%s)", sorted(str(v) for v in values))
    if f.tags_any is not None:
        add(
            f"EXISTS (SELECT 1 FROM json_array_elements_text({json_of(p + 'tags')}) AS t(v) "
            "WHERE t.v = ANY(%s))",
            sorted(f.tags_any),
        )
    if f.tags_all:
        wanted = sorted(f.tags_all)
        add(
            "(SELECT count(DISTINCT t.v) FROM "
            f"json_array_elements_text({json_of(p + 'tags')}) AS t(v) WHERE t.v = ANY(%s)) = %s",
            wanted,
            len(wanted),
        )
    if f.observed_after is not None:
        add(f"{p}observed_at >= %s", encode_time(f.observed_after))
    if f.observed_before is not None:
        add(f"{p}observed_at < %s", encode_time(f.observed_before))
    if f.min_importance is not None:
        add(f"{p}importance >= %s", f.min_importance)
    # String equality on metadata (a fact's key ...) narrows the rows in SQL, as on SQLite.
    # The rows still pass ``Filters.matches`` (``needs_python``), so this only has to keep
    # every row that matches: the column is ``codec._json`` text (sorted keys, no spaces,
    # non-ASCII as is), where a top-level ``key == value`` is always the substring
    # ``"key":"value"`` (JSON-encoded); elsewhere it is only nested (or a quote inside a
    # string is escaped). No JSON is parsed: ``::jsonb`` refuses a ``\u0000`` escape.
    # A fact's key and a document's qa_id are asked in the words of schema 12's partial
    # indexes (key_sql, which checks the pair's text too): read by index.
    for cond in f.metadata:
        if cond.op == "eq" and isinstance(cond.value, str):
            kind, _ = INDEXED_NAMES.get(cond.key, (None, None))
            if kind is not None and f.types == frozenset({kind}):
                name_sql, name_args = key_sql(kind, cond.key, cond.value, p)
                add(name_sql, *name_args)
            else:
                add(f"strpos({p}metadata, %s) > 0", json_pair(cond.key, cond.value))
    return (" AND ".join(parts) or "TRUE"), args


def json_pair(key: str, value: str) -> str:
    """``"key":"value"`` as the stored metadata text holds a top-level string pair."""
    dump = functools.partial(json.dumps, ensure_ascii=False)
    return f"{dump(key)}:{dump(value)}"


def needs_python(f: Filters) -> bool:
    """Whether results must still pass ``Filters.matches`` after the SQL (metadata)."""
    return bool(f.metadata)


def key_sql(kind: str, field: str, value: str, p: str = "") -> Fragment:
    """The records of type ``kind`` whose ``metadata[field]`` is the string ``value``, in the
    words of schema 12's partial indexes (``records_fact_key``, ``records_doc_key`` ...), so
    PostgreSQL reads them by index; the stored text must also hold the pair (exact where the
    index reads a NUL as U+0001). ``kind`` and ``field`` are written into the SQL: a record
    type and a plain name only. ``metadata`` is read with a NUL as U+0001 (the indexes
    must not fail on any row)."""
    meta = f"{nul_read_as(p + 'metadata', 'u0001')}::json"
    return (
        f"({meta} ->> '{field}') = %s AND {p}type = '{kind}' "
        f"AND json_typeof({meta} -> '{field}') = 'string' AND strpos({p}metadata, %s) > 0",
        [value, json_pair(field, value)],
    )


# what key_sql adds for the live ones (``records_fact_live`` ...)
LIVE_SQL = f"status = '{RecordStatus.ACTIVE.value}' AND superseded_by IS NULL"
