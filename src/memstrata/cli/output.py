"""Human output for the CLI: tables of records, hits, reports and key/value pairs.

Tables are :class:`~memstrata.cli.table.PlainTable` (drawn without rich, which would cost
every read command ~0.07 s of imports): brackets in user or library text are printed as
written (``[x]``, ``memstrata[postgres]``), never read as markup, and control characters
are shown as escapes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .table import PlainTable

if TYPE_CHECKING:
    from ..records import MemoryRecord
    from ..search.hit import SearchHit
    from ..worker_types import RunReport

__all__ = [
    "SHORT_ID",
    "explain_table",
    "hits_table",
    "kv_table",
    "records_table",
    "report_table",
    "run_report_data",
    "stats_table",
]

SHORT_ID = 12  # printed id length; any unique prefix is accepted back (see resolve.py)


def _table(title: str, columns: Iterable[str]) -> PlainTable:
    return PlainTable(title, tuple(columns))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if value is None:
        return "-"
    return str(value)


def records_table(records: Sequence[MemoryRecord], title: str) -> PlainTable:
    table = _table(title, ("id", "type", "observed", "v", "status", "text"))
    for r in records:
        table.add_row(
            *map(
                _cell,
                (
                    r.id[:SHORT_ID],
                    r.type.value,
                    r.observed_at.isoformat(" ", "minutes")[:16],  # strftime: "1-01-01"
                    r.version,
                    r.status.value,
                    r.text[:120],
                ),
            )
        )
    return table


def hits_table(hits: Sequence[SearchHit], title: str) -> PlainTable:
    table = _table(title, ("#", "score", "layer", "observed", "id", "text"))
    for i, h in enumerate(hits, 1):
        table.add_row(
            *map(
                _cell,
                (
                    i,
                    f"{h.score:.3f}",
                    h.layer,
                    h.record.observed_at.date().isoformat(),  # strftime: "999-05-01"
                    h.record.id[:SHORT_ID],
                    h.text[:160],
                ),
            )
        )
    return table


def explain_table(hits: Sequence[SearchHit]) -> PlainTable:
    """One row per hit: every term of its score (see the README's Search section)."""
    table = _table("score terms", ("#", "terms"))
    for i, h in enumerate(hits, 1):
        terms = "  ".join(f"{name}={_cell(value)}" for name, value in (h.explanation or {}).items())
        table.add_row(_cell(i), terms)
    return table


def kv_table(title: str, rows: Iterable[tuple[str, Any]]) -> PlainTable:
    table = _table(title, ("", "value"))
    for key, value in rows:
        table.add_row(key, _cell(value))
    return table


def report_table(title: str, data: Mapping[str, Any]) -> PlainTable:
    """A flat report (counts): lists are joined one item per line."""
    rows = []
    for key, value in data.items():
        if isinstance(value, list):
            value = "\n".join(map(str, value)) if value else "-"
        rows.append((key.replace("_", " "), value))
    return kv_table(title, rows)


def run_report_data(report: RunReport) -> dict[str, Any]:
    """Every count of a job run, ``claimed`` first: the six after it add up to it
    (``waiting``: jobs another worker still held when a timed-out flush returned)."""
    return {
        "claimed": report.claimed,
        "done": report.done,
        "retried": report.retried,
        "failed": report.failed,
        "lost": report.lost,
        "revoked": report.revoked,
        "given_back": report.given_back,
        "waiting": report.waiting,
        "errors": report.errors,
    }


def stats_table(data: Mapping[str, Any]) -> PlainTable:
    """``Memory.stats`` of the counted scope, beside the user's totals when narrowed."""
    total: Mapping[str, Any] | None = data.get("user_total")
    title = f"counted in {data['scope']}"
    columns = (
        ["", "this scope"]
        if total is None
        else ["", str(data["scope"]), f"whole user ({total['scope']})"]
    )
    table = _table(title, columns)

    def row(label: str, mine: Any, theirs: Any) -> None:
        cells = [label, _cell(mine)]
        if total is not None:
            cells.append(_cell(theirs))
        table.add_row(*cells)

    for key in ("records", "active", "deleted", "pending_jobs", "failed_jobs"):
        row(key.replace("_", " "), data[key], total and total[key])
    by_type = dict(data["by_type"])
    all_types = sorted(set(by_type) | set(total["by_type"] if total else ()))
    for rtype in all_types:
        row(f"  {rtype}", by_type.get(rtype, 0), total and total["by_type"].get(rtype, 0))
    for key in ("embedding_model", "embedding_dims", "llm", "store"):
        row(key.replace("_", " "), data[key], "")
    return table
