"""What quotas cost a write: ``mem.add`` with quotas off and on, side by side (session 34).

One run times ``adds`` calls of ``Memory.add`` (``dedup=False``: the write path, not the
near-duplicate search) for one user after ``warmup`` untimed ones, in each case below, on a
fresh store per case and round (a temp SQLite file, or a new schema in the PostgreSQL
database a ``postgresql://`` URL names, dropped afterwards). Rounds rotate the order of the
cases, so a machine's drift falls on each in turn. Cases:

- ``off``: no quotas, on a store no process with quotas opened (nothing counted);
- ``counted``: no quotas, on a store whose ``quotas:in_use`` flag is set (a process with
  quotas opened it): each write counts its embedding with no limit, in its own transaction
  on SQLite and PostgreSQL (:mod:`memstrata.store.counted_writes`);
- ``records``: ``max_records`` per user (the records lease around each write, the count
  carried by the write);
- ``daily``: ``embeddings_per_day`` per user (the lease and a counter take before the
  embedding);
- ``both``: the two limits.

Reported per case: the median and p95 of one ``add`` (ms) and adds per second, each the
median over the rounds, with every round's median; and each case's median against ``off``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

__all__ = ["CASES", "QuotaBenchConfig", "quota_markdown", "run_quota"]

CASES = ("off", "counted", "records", "daily", "both")
_LIMIT = 10**9  # a limit never reached: the cost of checking, not of refusing


@dataclass(frozen=True)
class QuotaBenchConfig:
    store: str = "sqlite"  # sqlite | a postgresql:// URL
    adds: int = 200
    warmup: int = 20
    rounds: int = 3
    embedder: str = "hashing"
    cases: tuple[str, ...] = CASES


def _quotas(case: str) -> Any:
    from ..quotas import Quota, Quotas

    if case in ("off", "counted"):
        return None
    records = _LIMIT if case in ("records", "both") else None
    daily = _LIMIT if case in ("daily", "both") else None
    return Quotas(per_user=Quota(max_records=records, embeddings_per_day=daily))


def _one(cfg: QuotaBenchConfig, case: str, url: str) -> list[float]:
    """Seconds of each timed ``add`` of one case on a fresh store."""
    from ..memory import Memory
    from ..quotas import Quota, Quotas
    from ..scope import Scope

    if case == "counted":  # a process with quotas opened the store: its flag is set
        Memory(
            url,
            embedder=cfg.embedder,
            background=False,
            quotas=Quotas(per_user=Quota(embeddings_per_day=_LIMIT)),
        ).close()
    mem = Memory(url, embedder=cfg.embedder, background=False, quotas=_quotas(case))
    scope = Scope("bench", "u0", session="s0")
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    timings: list[float] = []
    try:
        for i in range(cfg.warmup + cfg.adds):
            text = f"{case} note {i} written at {stamp}: the kiln runs at {900 + i} degrees"
            start = time.perf_counter()
            mem.add(scope, text, dedup=False)
            if i >= cfg.warmup:
                timings.append(time.perf_counter() - start)
    finally:
        mem.close()
    return timings


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def run_quota(
    cfg: QuotaBenchConfig, progress: Callable[[str, int], None] | None = None
) -> dict[str, Any]:
    from .scale import fresh_store

    for case in cfg.cases:
        if case not in CASES:
            raise ValueError(f"quota bench case {case!r}: use some of {', '.join(CASES)}")
    if cfg.adds < 1 or cfg.rounds < 1 or cfg.warmup < 0:
        raise ValueError("adds and rounds must be >= 1, warmup >= 0")
    rounds: dict[str, list[dict[str, float]]] = {c: [] for c in cfg.cases}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(cfg.rounds):
            shift = r % len(cfg.cases)
            order = [*cfg.cases[shift:], *cfg.cases[:shift]]
            for case in order:
                with fresh_store(cfg.store, tmp, f"q{r}{case}") as url:
                    timings = _one(cfg, case, url)
                rounds[case].append(
                    {
                        "median_ms": statistics.median(timings) * 1000,
                        "p95_ms": _p95(timings) * 1000,
                        "adds_per_s": len(timings) / sum(timings),
                    }
                )
                if progress is not None:
                    progress(f"round {r + 1} {case}", 1)
    cases: dict[str, dict[str, Any]] = {}
    for case, per in rounds.items():
        cases[case] = {
            "median_ms": statistics.median(x["median_ms"] for x in per),
            "p95_ms": statistics.median(x["p95_ms"] for x in per),
            "adds_per_s": statistics.median(x["adds_per_s"] for x in per),
            "rounds_median_ms": [round(x["median_ms"], 3) for x in per],
        }
    off = cases.get("off")
    for entry in cases.values():
        entry["vs_off"] = entry["median_ms"] / off["median_ms"] if off else None
    store = "sqlite" if cfg.store == "sqlite" else "postgresql"
    return {
        "config": {**asdict(cfg), "store": store},
        "cases": cases,
        "seconds": time.perf_counter() - started,
    }


def quota_markdown(res: dict[str, Any]) -> str:
    cfg = res["config"]
    lines = [
        f"# Quota cost of `Memory.add` ({cfg['store']}, {cfg['embedder']} embedder)",
        "",
        f"{cfg['adds']} adds after {cfg['warmup']} per case and round, {cfg['rounds']} "
        "rounds (order rotated), a fresh store each; medians over the rounds.",
        "",
        "| case | median ms | p95 ms | adds/s | vs off | rounds' medians (ms) |",
        "|---|---|---|---|---|---|",
    ]
    for case, c in res["cases"].items():
        vs = "" if c["vs_off"] is None else f"{c['vs_off']:.2f}x"
        each = " ".join(f"{m:.2f}" for m in c["rounds_median_ms"])
        lines.append(
            f"| {case} | {c['median_ms']:.2f} | {c['p95_ms']:.2f} | {c['adds_per_s']:.0f} | "
            f"{vs} | {each} |"
        )
    lines += ["", f"Run time {res['seconds']:.0f} s."]
    return "\n".join(lines) + "\n"
