"""How big a store gets: bytes per message, and growth per 1,000 context builds.

One user talks in sessions of ``session_turns`` turns (synthetic chat text from
:mod:`memstrata.bench.synth`); every turn is one ``add_message`` (as an agent would call
it), background jobs run every ``flush_every`` turns (clustering, summaries, facts) and each
session is closed with ``end_session``. The file is checkpointed (WAL folded in) and
measured at checkpoints, with the bytes per table from SQLite's ``dbstat`` when it is
compiled in. Then ``context_builds`` ``build_context`` calls (each followed by the jobs
they queue, e.g. cluster hit counts) measure what the read path adds to the file. Last,
``Memory.compact()`` rewrites the store and it is measured again: its live data alone.

``store`` is ``sqlite`` (a temp file) or a ``postgresql://`` URL: then a fresh schema of that
database (dropped afterwards), measured as the sum of its relations (tables with their
indexes and TOAST, ``pg_total_relation_size``) after the writes; there is no WAL to fold in,
and rows deleted since the last vacuum still count.

Only the public ``Memory`` API is used, so the same function measures any version.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .scale import fresh_store, store_label
from .synth import synth_messages, synth_queries

__all__ = [
    "StorageConfig",
    "StorageResult",
    "file_bytes",
    "history_bytes",
    "run_storage",
    "table_bytes",
]


@dataclass(frozen=True)
class StorageConfig:
    messages: int = 10_000
    embedder: str = "default"
    session_turns: int = 200
    flush_every: int = 20
    checkpoints: tuple[int, ...] = (1_000, 2_500, 5_000, 10_000)
    context_builds: int = 1_000
    budget: int = 2_000
    seed: int = 7
    store: str = "sqlite"


@dataclass
class StorageResult:
    config: dict[str, Any]
    sizes: list[dict[str, Any]] = field(default_factory=list)  # per checkpoint
    bytes_per_message: float = 0.0
    tables: dict[str, int] = field(default_factory=dict)
    history: dict[str, Any] = field(default_factory=dict)
    context_builds: int = 0
    context_growth_bytes: int = 0
    context_growth_per_1000: float = 0.0
    # After ``Memory.compact()`` (SQLite VACUUM, PostgreSQL VACUUM FULL): the live data alone,
    # without free pages or rows deleted since the last vacuum.
    compacted_bytes_per_message: float = 0.0
    compacted_tables: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def file_bytes(path: Path) -> int:
    """The database file's size after folding the WAL in (what a copy of it would take)."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return sum(os.path.getsize(p) for p in (path, Path(f"{path}-wal")) if p.exists())


def table_bytes(path: Path) -> dict[str, int]:
    """Bytes per table and index (``dbstat``), or ``{}`` when SQLite lacks it."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
    except sqlite3.Error:
        return {}
    finally:
        conn.close()
    return {str(name): int(size) for name, size in rows}


def relation_bytes(url: str) -> dict[str, int]:
    """Bytes per table of the PostgreSQL schema a store URL names (``schema=``, default
    ``memstrata``), its indexes and TOAST included, largest first."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    import psycopg

    parts = urlsplit(url)
    query = parse_qsl(parts.query)
    schema = dict(query).get("schema", "memstrata")
    plain = [(k, v) for k, v in query if k != "schema"]
    admin = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(plain), ""))
    with psycopg.connect(admin, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace "
            "n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind IN ('r', 'p') "
            "ORDER BY 2 DESC",
            (schema,),
        ).fetchall()
    return {str(name): int(size) for name, size in rows}


def _schema_bytes(url: str) -> int:
    return sum(relation_bytes(url).values())


def _measures(
    store: str, path: Path, url: str
) -> tuple[Callable[[], int], Callable[[], dict[str, int]]]:
    """The store's whole size and its size per table, as functions of nothing."""
    if store == "sqlite":
        return functools.partial(file_bytes, path), functools.partial(table_bytes, path)
    return functools.partial(_schema_bytes, url), functools.partial(relation_bytes, url)


def history_bytes(path: Path) -> dict[str, Any]:
    """Where ``record_history`` spends its bytes: per record type (versions, delta bytes) and
    per column, each delta's stored (compressed) size shared among its columns in proportion
    to their uncompressed JSON. ``{}`` for a file whose history is not reverse deltas."""
    from ..store.sqlite.history import decode_delta

    conn = sqlite3.connect(path)
    types: dict[str, dict[str, int]] = {}
    columns: dict[str, float] = {}
    try:
        rows = conn.execute(
            "SELECT r.type, h.delta FROM record_history h JOIN records r ON r.seq = h.seq"
        )
        for kind, blob in rows:
            delta = decode_delta(blob)
            per = types.setdefault(str(kind), {"versions": 0, "bytes": 0})
            per["versions"] += 1
            per["bytes"] += len(blob)
            parts = {
                col: len(json.dumps(op, ensure_ascii=False, separators=(",", ":")))
                for col, op in delta.items()
            }
            whole = sum(parts.values()) or 1
            for col, size in parts.items():
                key = f"{kind}.{col}"
                columns[key] = columns.get(key, 0.0) + len(blob) * size / whole
    except (sqlite3.Error, zlib.error, ValueError, AttributeError):
        return {}
    finally:
        conn.close()
    top = sorted(columns.items(), key=lambda kv: -kv[1])[:15]
    return {"types": types, "columns": {k: round(v) for k, v in top}}


def run_storage(
    cfg: StorageConfig,
    progress: Callable[[str, int], None] | None = None,
    *,
    directory: Path | None = None,
) -> StorageResult:
    from ..memory import Memory
    from ..scope import Scope

    started = time.perf_counter()
    result = StorageResult(config=asdict(cfg))
    with (
        tempfile.TemporaryDirectory(dir=directory) as tmp,
        fresh_store(cfg.store, tmp, "storage") as url,
    ):
        path = Path(tmp) / "storage.db"
        total, sizes = _measures(cfg.store, path, url)
        mem: Any = Memory(url, embedder=cfg.embedder, background=False)
        try:
            marks = sorted(c for c in cfg.checkpoints if c <= cfg.messages)
            if cfg.messages not in marks:
                marks.append(cfg.messages)
            scope = Scope("bench", "u0", session="s0")
            for n, msg in enumerate(synth_messages(cfg.messages, 1, seed=cfg.seed), start=1):
                session = f"s{(n - 1) // cfg.session_turns}"
                scope = Scope("bench", "u0", session=session)
                mem.add_message(scope, msg.role, msg.content, observed_at=msg.observed_at)
                if n % cfg.flush_every == 0:
                    mem.flush(scope)
                if n % cfg.session_turns == 0:
                    mem.end_session(scope)
                if progress is not None:
                    progress("write", 1)
                if n in marks:
                    mem.flush()
                    size = total()
                    result.sizes.append(
                        {"messages": n, "bytes": size, "bytes_per_message": round(size / n, 1)}
                    )
            mem.flush()
            result.tables = sizes()
            result.history = history_bytes(path) if cfg.store == "sqlite" else {}
            before = total()
            result.bytes_per_message = round(before / max(1, cfg.messages), 1)
            if cfg.context_builds > 0:
                queries = synth_queries(min(cfg.context_builds, 200), seed=cfg.seed + 4)
                for i in range(cfg.context_builds):
                    mem.build_context(scope, queries[i % len(queries)], token_budget=cfg.budget)
                    mem.flush()
                    if progress is not None:
                        progress("context", 1)
                after = total()
                result.context_builds = cfg.context_builds
                result.context_growth_bytes = after - before
                result.context_growth_per_1000 = round(
                    (after - before) * 1000 / cfg.context_builds, 1
                )
            mem.compact()
            result.compacted_bytes_per_message = round(total() / max(1, cfg.messages), 1)
            result.compacted_tables = sizes()
        finally:
            mem.close()
    result.seconds = round(time.perf_counter() - started, 1)
    return result


def storage_markdown(res: StorageResult) -> str:
    cfg = res.config
    lines = [
        f"## Storage ({cfg['messages']:,} messages, embedder {cfg['embedder']}, "
        f"sessions of {cfg['session_turns']} turns, "
        f"store {store_label(cfg.get('store', 'sqlite'))})",
        "",
        "| messages | bytes | bytes/message |",
        "|---:|---:|---:|",
    ]
    lines += [
        f"| {s['messages']:,} | {s['bytes']:,} | {s['bytes_per_message']:,} |" for s in res.sizes
    ]
    if res.tables:
        lines += ["", "| table (SQLite: or index) | bytes |", "|---|---:|"]
        lines += [f"| {name} | {size:,} |" for name, size in res.tables.items()]
    if res.history:
        lines += ["", "| history of record type | versions | delta bytes |", "|---|---:|---:|"]
        lines += [
            f"| {kind} | {v['versions']:,} | {v['bytes']:,} |"
            for kind, v in res.history["types"].items()
        ]
        lines += ["", "| history bytes by type.column (top 15) | bytes |", "|---|---:|"]
        lines += [f"| {col} | {size:,} |" for col, size in res.history["columns"].items()]
    if res.compacted_tables:
        lines += [
            "",
            f"After `compact()` (VACUUM): {res.compacted_bytes_per_message:,} bytes/message.",
            "",
            "| table, compacted | bytes |",
            "|---|---:|",
        ]
        lines += [f"| {name} | {size:,} |" for name, size in res.compacted_tables.items()]
    if res.context_builds:
        lines += [
            "",
            f"Growth over {res.context_builds:,} build_context calls: "
            f"{res.context_growth_bytes:,} bytes "
            f"({res.context_growth_per_1000:,} per 1,000).",
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover - for measuring older versions by path
    import sys

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    emb = sys.argv[2] if len(sys.argv) > 2 else "default"
    builds = int(sys.argv[3]) if len(sys.argv) > 3 else 1_000
    out = run_storage(StorageConfig(messages=n, embedder=emb, context_builds=builds))
    print(storage_markdown(out))
    print(json.dumps(asdict(out), default=str))
