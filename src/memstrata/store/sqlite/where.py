"""SQL ``WHERE`` fragments for scope and filters: the SQL mirror of ``Scope.admits`` and
``Filters.matches``. The contract suite holds them equal to the Python predicates.

Metadata conditions stay in Python (``Filters.matches``): their operators compare arbitrary
JSON values with Python semantics that SQL's type affinity would not reproduce exactly.
Equality with a string is also given to SQL as a *pre-filter* (exact for strings: SQL keeps
every row Python would), so a look-up such as a fact by its key decodes the matching rows
only, not every record of the type (Python still decides). A fact's key and a document's
qa_id are asked in the words of schema 12's partial indexes (``key_sql``): SQLite reads
those rows by index, not every record of the type. Such a listing leaves out the
``type IN (...)`` of its types (``key_sql`` says the type): with it, SQLite (3.40) read a
live listing's next page (``(observed_at, seq) > (?, ?)``) by the index of the user's
records of the type, from that place to the user's last (every chunk of the user written
after the document's, for each ``knowledge.chunks``), not by the name's live index.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...filters import Filters
from ...records import RecordStatus
from ...scope import Scope
from ..types import INDEXED_NAMES, PLAIN_NAME
from .codec import encode_time
from .roles import markers, public_range, public_reader

__all__ = [
    "LIVE_SQL",
    "filters_index",
    "filters_sql",
    "in_list",
    "key_indexes",
    "key_sql",
    "needs_python",
    "records_from",
    "scope_sql",
    "Walk",
]

Fragment = tuple[str, list[Any]]


def in_list(column: str, values: Iterable[str] | Iterable[int]) -> Fragment:
    items: list[Any] = sorted(values)  # all of one kind
    return f"{column} IN ({', '.join('?' * len(items))})", items


def scope_sql(scope: Scope, p: str = "") -> Fragment:
    """Tenant and user always; session and agent per ``Scope.admits``."""
    parts = [f"{p}tenant = ?", f"{p}user = ?"]
    args: list[Any] = [scope.tenant, scope.user]
    if scope.session is not None:
        parts.append(f"{p}session = ?")
        args.append(scope.session)
    if scope.agent is not None:
        parts.append(f"({p}agent IS NULL OR {p}agent = ? OR {p}visibility != 'private')")
        args.append(scope.agent)
    if scope.caller is not None:  # access control (seed 003), as in Scope.admits
        parts.append(f"{p}status = '{RecordStatus.ACTIVE.value}'")  # a deleted one is not shared
        roles = sorted(scope.roles)
        marks = ", ".join("?" * len(roles)) or "NULL"
        parts.append(
            f"({p}visibility = 'public' OR EXISTS (SELECT 1 FROM json_each({p}access, "
            f"'$.allowed_users') WHERE value = ?) OR EXISTS (SELECT 1 FROM "
            f"json_each({p}access, '$.allowed_roles') WHERE value IN ({marks})))"
        )
        args += [scope.caller, *roles]
    return " AND ".join(parts), args


Walk = tuple[str, tuple[str, str, int] | None, int | None]
"""How a listing reads: its order (``ASC``/``DESC``), the place it starts after (``>`` or
``<``, an encoded ``observed_at`` and a ``seq``) and how many it keeps (``None``: all)."""


def records_from(
    scope: Scope, filters: Filters, by: str = "", walk: Walk | None = None
) -> Fragment:
    """What a listing of ``scope`` reads ``records`` from (``by``: an ``INDEXED BY``).

    The owner's: the table, walked by its indexes. A caller's (caller30): only the owner's
    records it may read, from the index of readers (store/sqlite/roles.py), each looked up
    by its key: those it names the caller and the caller's roles for (∝ what is shared by
    name and role), and the owner's public records walked in the listing's order from
    ``walk``'s place, as many as ``walk`` keeps of those ``filters`` and the caller's rule
    admit (∝ the page, not the owner's records). A caller's ``list`` walked the owner's
    rows in order until its page was full, so its cost (and time, 10-16 ms for 100 of 10k
    notes mostly private) grew with the records the owner did not share. The rows name a
    superset (a reader of an earlier version, a deleted record): the statement's
    ``scope_sql`` still decides. ``m.i`` is the only column the join adds."""
    if scope.caller is None:
        return f"records {by}", []
    readers = [scope.caller, *markers(sorted(scope.roles))]
    low, high = public_range(scope.user)
    sw, sa = scope_sql(scope)
    fw, fa = filters_sql(filters)
    order, after, keep = walk if walk is not None else ("ASC", None, None)
    place, place_args = "", []
    if after is not None:
        op, at, seq = after
        place, place_args = f" AND p.r {op} ?", [public_reader(scope.user, at, seq)]
    limit, limit_args = ("", []) if keep is None else (" LIMIT ?", [keep])
    # p.r's range holds the owner (the key's order, not rr_u's: no p.u term to choose it by)
    public = (
        "SELECT i FROM (SELECT p.i FROM rr AS p CROSS JOIN records ON records.tenant = p.t "
        "AND records.user = p.u AND records.id = p.i WHERE p.t = ? AND p.r >= ? AND p.r < ?"
        f"{place} AND {sw} AND {fw} ORDER BY p.r {order}{limit})"
    )
    return (
        f"(SELECT i FROM rr WHERE t = ? AND r IN ({', '.join('?' * len(readers))}) AND u = ? "
        f"UNION {public}) AS m CROSS JOIN records ON records.tenant = ? AND records.user = ? "
        "AND records.id = m.i",
        [scope.tenant, *readers, scope.user, scope.tenant, low, high, *place_args]
        + [*sa, *fa, *limit_args, scope.tenant, scope.user],
    )


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
        add(f"({p}valid_from IS NULL OR {p}valid_from <= ?)", at)
        add(f"({p}valid_to IS NULL OR {p}valid_to > ?)", at)
    elif not f.include_superseded:
        add(f"{p}superseded_by IS NULL")
    keyed = _keyed(f) is not None  # key_sql says the type: ``type = 'fact'``
    for column, values in (("id", f.ids), ("type", f.types), ("source", f.sources)):
        if values is not None and not (keyed and column == "type"):
            sql, vals = in_list(p + column, [str(v) for v in values])
            add(sql, *vals)
    if f.tags_any is not None:
        sql, vals = in_list("value", f.tags_any)
        add(f"EXISTS (SELECT 1 FROM json_each({p}tags) WHERE {sql})", *vals)
    if f.tags_all:
        sql, vals = in_list("value", f.tags_all)
        add(
            f"(SELECT count(DISTINCT value) FROM json_each({p}tags) WHERE {sql}) = ?",
            *vals,
            len(vals),
        )
    if f.observed_after is not None:
        add(f"{p}observed_at >= ?", encode_time(f.observed_after))
    if f.observed_before is not None:
        add(f"{p}observed_at < ?", encode_time(f.observed_before))
    if f.min_importance is not None:
        add(f"{p}importance >= ?", f.min_importance)
    for cond in f.metadata:
        if cond.op == "eq" and isinstance(cond.value, str) and PLAIN_NAME.fullmatch(cond.key):
            kind, _ = INDEXED_NAMES.get(cond.key, (None, None))
            if kind is not None and f.types == frozenset({kind}):  # a fact by key ...
                add(key_sql(kind, cond.key, p), cond.value)  # ... read by index
            else:
                add(f"json_extract({p}metadata, ?) = ?", f"$.{cond.key}", cond.value)
    return (" AND ".join(parts) or "1"), args


def filters_index(f: Filters) -> str:
    """``INDEXED BY`` schema 12's index of every row of a fact's key (a document's qa_id)
    for a listing of that name (``filters_sql`` asks it in ``key_sql``'s words) that reads
    more than its live rows (superseded or deleted ones, or as of a time): a fact's history.
    Without it SQLite reads every record of the type (it has no statistics to prefer the
    name's index; the live rows' index it finds alone). Empty for any other listing."""
    if not (f.include_deleted or f.include_superseded or f.valid_at is not None):
        return ""
    short = _keyed(f)
    return "" if short is None else f"INDEXED BY records_{short}_key"


def _keyed(f: Filters) -> str | None:
    """The short name of schema 12's indexes (``fact``, ``doc``) when ``filters_sql`` asks
    a name of ``f`` in ``key_sql``'s words (a fact by its key, a document's chunks by
    qa_id), else ``None``."""
    for cond in f.metadata:
        if cond.op == "eq" and isinstance(cond.value, str) and PLAIN_NAME.fullmatch(cond.key):
            kind, short = INDEXED_NAMES.get(cond.key, (None, None))
            if kind is not None and f.types == frozenset({kind}):
                return short
    return None


def needs_python(f: Filters) -> bool:
    """Whether results must still pass ``Filters.matches`` after the SQL (metadata)."""
    return bool(f.metadata)


def key_sql(kind: str, field: str, p: str = "") -> str:
    """The records of type ``kind`` whose ``metadata[field]`` is the string ``?`` (exactly:
    ``Filters.matches``), in the words of schema 12's partial indexes (``records_fact_key``,
    ``records_doc_key`` ...: a fact's key, a document's qa_id), so SQLite reads them by index.
    ``kind`` and ``field`` are written into the SQL: a record type and a plain name only."""
    path = f"'$.{field}'"
    return (
        f"json_extract({p}metadata, {path}) = ? AND {p}type = '{kind}' "
        f"AND json_type({p}metadata, {path}) = 'text'"
    )


def key_indexes(kind: str, field: str) -> tuple[str, str]:
    """``INDEXED BY`` clauses naming schema 12's indexes of the name's rows and of its live
    rows (empty for a name it has none for). Without them SQLite may read the live check
    through the index of every row of the key (it has no statistics to tell them apart)."""
    indexed_kind, short = INDEXED_NAMES.get(field, (None, None))
    if indexed_kind != kind:
        return "", ""
    return f"INDEXED BY records_{short}_key", f"INDEXED BY records_{short}_live"


# what key_sql adds for the live ones (``records_fact_live`` ...)
LIVE_SQL = f"status = '{RecordStatus.ACTIVE.value}' AND superseded_by IS NULL"
