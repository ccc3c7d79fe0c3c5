"""How search, context assembly, ingest and memory grow with the number of records.

For each size a fresh store is filled with :mod:`memstrata.bench.synth` text through
``add_messages`` in large batches (one user up to 10k records; above that 1,000 records per
user, so 1M records spread over 1,000 users), then ``queries`` searches (hybrid, top 10) and,
when the façade has it, ``build_context`` calls are timed, all scoped to one user.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from .measure import LatencyLog, RssSampler
from .synth import (
    SynthMessage,
    synth_messages,
    synth_messages_zh,
    synth_queries,
    synth_queries_zh,
)

__all__ = ["ScaleConfig", "parse_sizes", "run_scale", "users_for"]

Progress = Callable[[str, int], None]
RECORDS_PER_USER_ABOVE_10K = 1000


@dataclass(frozen=True)
class ScaleConfig:
    sizes: tuple[int, ...] = (1_000, 10_000, 100_000, 1_000_000)
    embedder: str = "hashing"
    store: str = "sqlite"
    queries: int = 50
    top_k: int = 10
    budget: int = 2000
    batch: int = 1000
    seed: int = 7
    zh_sizes: tuple[int, ...] = (10_000,)  # Chinese rows (one user up to 10k), see synth.py


def users_for(size: int) -> int:
    return 1 if size <= 10_000 else max(1, size // RECORDS_PER_USER_ABOVE_10K)


def parse_sizes(spec: str) -> tuple[int, ...]:
    """``"1k,10k,1M"`` → (1000, 10000, 1000000)."""
    out = []
    for part in (p.strip().lower() for p in spec.split(",") if p.strip()):
        mult = {"k": 1_000, "m": 1_000_000}.get(part[-1], 1)
        num = part[:-1] if mult != 1 else part
        try:
            out.append(int(float(num) * mult))
        except ValueError:
            raise ValueError(f"bad size {part!r}: use numbers like 1000, 10k or 1M") from None
    return tuple(out)


def _batches(msgs: Sequence[SynthMessage] | Any, size: int) -> Any:
    batch: list[SynthMessage] = []
    for m in msgs:
        if batch and (m.user != batch[-1].user or len(batch) >= size):
            yield batch
            batch = []
        batch.append(m)
    if batch:
        yield batch


def _one_size(size: int, cfg: ScaleConfig, tick: Progress, lang: str = "en") -> dict[str, Any]:
    from memstrata import Memory, Message, Role, Scope

    users = users_for(size)
    with tempfile.TemporaryDirectory(prefix="memstrata-scale-") as tmp, RssSampler() as rss:
        url = f"sqlite:///{tmp}/scale.db" if cfg.store == "sqlite" else "memory://"
        mem: Any = Memory(url, embedder=cfg.embedder)
        try:
            t0 = time.perf_counter()
            gen = synth_messages_zh if lang == "zh" else synth_messages
            for batch in _batches(gen(size, users, cfg.seed), cfg.batch):
                scope = Scope("scale", f"user-{batch[0].user}")
                mem.add_messages(
                    scope,
                    [
                        Message(role=Role(m.role), content=m.content, observed_at=m.observed_at)
                        for m in batch
                    ],
                )
                tick(f"ingest {size:,}", len(batch))
            ingest_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            mem.flush()
            flush_s = time.perf_counter() - t0
            ingest_peak = rss.peak_mb
            scope = Scope("scale", "user-0")
            search = LatencyLog()
            context = LatencyLog()
            has_ctx = hasattr(mem, "build_context")
            queries = (synth_queries_zh if lang == "zh" else synth_queries)(
                cfg.queries, cfg.seed + 1
            )
            mem.search(scope, queries[0], top_k=cfg.top_k)  # warm caches and lazy loads
            for q in queries:
                with search.time():
                    mem.search(scope, q, top_k=cfg.top_k)
                if has_ctx:
                    with context.time():
                        mem.build_context(scope, q, token_budget=cfg.budget)
                tick(f"queries {size:,}", 1)
        finally:
            mem.close()
    return {
        "size": size,
        "language": lang,
        "users": users,
        "records_per_user": size // users,
        "ingest": {
            "messages": size,
            "seconds": ingest_s,
            "messages_per_s": size / ingest_s,
            "flush_seconds": flush_s,
        },
        "search": search.summary_ms(),
        "build_context": context.summary_ms()
        if has_ctx
        else {"missing": "Memory.build_context is not available yet"},
        "peak_rss_mb": rss.peak_mb,
        "ingest_peak_rss_mb": ingest_peak,
    }


def run_scale(cfg: ScaleConfig, progress: Progress | None = None) -> dict[str, Any]:
    tick = progress or (lambda label, n: None)
    import os
    import platform

    return {
        "benchmark": "scale",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": asdict(cfg),
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_1m_at_end": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        },
        "results": [_one_size(s, cfg, tick) for s in cfg.sizes]
        + [_one_size(s, cfg, tick, "zh") for s in cfg.zh_sizes],
    }
