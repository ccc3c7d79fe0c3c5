"""How fast ``memstrata migrate`` copies and verifies a store, against its size.

For each size a SQLite store is filled as ``bench scale`` fills one (synthetic messages
through ``add_messages``, one user up to 10k records, 1,000 records per user above), its
ingest jobs left pending, then copied into the target (a PostgreSQL URL gets a fresh schema
per size, dropped afterwards; ``sqlite`` a temporary file) and verified. Reported: records
per second of the copy, the verification's seconds, and whether it proved the copy equal.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .scale import _batches, users_for
from .synth import synth_messages

__all__ = ["migrate_markdown", "run_migrate_bench"]

Progress = Callable[[str, int], None]


def _fill(url: str, size: int, embedder: str, seed: int, tick: Progress) -> float:
    from memstrata import Memory, Message, Role, Scope

    mem = Memory(url, embedder=embedder, background=False)
    try:
        t0 = time.perf_counter()
        for batch in _batches(synth_messages(size, users_for(size), seed), 500):
            mem.add_messages(
                Scope("bench", f"user-{batch[0].user}"),
                [
                    Message(role=Role(m.role), content=m.content, observed_at=m.observed_at)
                    for m in batch
                ],
            )
            tick(f"fill {size:,}", len(batch))
        return time.perf_counter() - t0
    finally:
        mem.close()


@contextmanager
def _target(spec: str, tmp: str, size: int) -> Iterator[str]:
    if spec == "sqlite":
        yield f"sqlite:///{Path(tmp) / f'target-{size}.db'}"
        return
    from memstrata.store.postgres.connection import parse_url

    schema = f"bench_migrate_{size}_{uuid.uuid4().hex[:8]}"
    sep = "&" if "?" in spec else "?"
    try:
        yield f"{spec}{sep}schema={schema}"
    finally:
        import psycopg

        with psycopg.connect(parse_url(spec).conninfo, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def run_migrate_bench(
    sizes: Sequence[int],
    target: str,
    *,
    embedder: str = "hashing",
    batch_size: int = 500,
    seed: int = 7,
    tick: Progress | None = None,
) -> list[dict[str, Any]]:
    from memstrata.store.migrate import copy_store

    step = tick or (lambda label, n: None)
    rows: list[dict[str, Any]] = []
    for size in sizes:
        with (
            tempfile.TemporaryDirectory(prefix="memstrata-migrate-") as tmp,
            _target(target, tmp, size) as dst,
        ):
            src = f"sqlite:///{Path(tmp) / f'source-{size}.db'}"
            fill_s = _fill(src, size, embedder, seed, step)
            source_mb = Path(src[len("sqlite:///") :]).stat().st_size / 1e6

            def progress(kind: str, n: int, size: int = size) -> None:
                if kind == "records":
                    step(f"migrate {size:,}", n)

            report = copy_store(src, dst, batch_size=batch_size, progress=progress)
            rows.append(
                {
                    "size": size,
                    "target": "sqlite" if target == "sqlite" else "postgresql",
                    "embedder": embedder,
                    "batch_size": batch_size,
                    "fill_seconds": fill_s,
                    "source_mb": source_mb,
                    "ok": report.ok,
                    **report.as_dict(),
                }
            )
    return rows


def migrate_markdown(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| records | target | copy s | records/s | verify s | cache | jobs | verified |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        c = r["counts"]
        lines.append(
            f"| {r['size']:,} | {r['target']} | {r['copy_seconds']:.1f} | "
            f"{r['records_per_second']:,.0f} | {r['verify_seconds']:.1f} | "
            f"{c['cache']['target']:,} | {c['jobs']['target']:,} | "
            f"{'yes' if r['ok'] else 'NO'} |"
        )
    return "\n".join(lines) + "\n"
