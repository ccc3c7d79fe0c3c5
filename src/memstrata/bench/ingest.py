"""Ingest throughput against the raw embedder's, on the same texts, side by side (issue 13 §2).

The texts are LoCoMo's turns, read at run time from the dataset file (never copied). One
run measures, in this order and in one process:

1. **raw**: a fresh, uncached embedder encodes every turn text in batches of ``batch``;
2. **ingest**: a fresh ``Memory`` (SQLite in a temp dir, the same embedder model) takes
   the turns session by session — ``add_messages`` per session (``mode="session"``) or
   ``add_message`` per turn (``mode="turn"``) — then ``flush()`` runs every background job;
3. **raw** again (the machine's load drifts; the ratio uses the mean of both raw runs).

It reports texts/s of each, the ratio ingest ÷ raw (goal ≥ 0.8), and the job queue's
retries and failures (goal 0), with every job the flushes claimed accounted for (``jobs``:
each of ``RunReport``'s outcomes, which add up to ``claimed``). Thread settings
(``OMP_WAIT_POLICY``, ``OMP_NUM_THREADS``, ``GOMP_SPINCOUNT``) are read by the embedding
engine when it loads, so each setting runs in a child process of its own
(:func:`run_settings`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..embedder.batching import CoalescingEmbedder

__all__ = ["IngestConfig", "ingest_markdown", "run_ingest", "run_settings"]

_THREAD_VARS = ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "GOMP_SPINCOUNT")
# what a flush's RunReport counts of the jobs it claimed (the others add up to "claimed")
_JOB_COUNTS = ("claimed", "done", "retried", "failed", "lost", "revoked", "given_back")


@dataclass(frozen=True)
class IngestConfig:
    data_path: str
    conversations: int = 1
    embedder: str = "default"
    # session: add_messages per session | turn: add_message per turn | users: add_messages
    # per session, each conversation fed by its own thread at the same time
    mode: str = "session"
    coalesce: bool = True  # False: concurrent embedding calls are not merged (before)
    batch: int = 64


def _sessions(cfg: IngestConfig) -> list[tuple[str, int, list[tuple[str, datetime]]]]:
    from .locomo.dataset import load_locomo

    convs = load_locomo(Path(cfg.data_path))[: cfg.conversations]
    return [
        (c.sample_id, s.number, [(f"{t.speaker}: {t.text}", t.observed_at) for t in s.turns])
        for c in convs
        for s in c.sessions
        if s.turns
    ]


def _raw(cfg: IngestConfig, texts: list[str]) -> tuple[float, float]:
    """(texts/s by the wall clock, texts per CPU-second of this process)."""
    from ..embedder.factory import make_embedder

    embedder = make_embedder(None if cfg.embedder == "default" else cfg.embedder)
    embedder.embed_batch(texts[:4])  # load the model outside the timing
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(0, len(texts), cfg.batch):
        embedder.embed_batch(texts[i : i + cfg.batch])
    return (
        len(texts) / (time.perf_counter() - t0),
        len(texts) / max(1e-9, time.process_time() - c0),
    )


def _ingest(
    cfg: IngestConfig, sessions: list[tuple[str, int, list[tuple[str, datetime]]]]
) -> dict[str, Any]:
    from memstrata import Memory, Message, Role, Scope

    with tempfile.TemporaryDirectory(prefix="memstrata-ingest-") as tmp:
        mem = Memory(
            f"sqlite:///{tmp}/ingest.db",
            embedder=None if cfg.embedder == "default" else cfg.embedder,
            llm="heuristic",
            background=False,
        )
        try:
            mem.embedder.embed_batch(["warm up"])  # load the model outside the timing
            if not cfg.coalesce:  # the "before" of the coalescer: one model call per caller
                mem._embedder._model = CoalescingEmbedder(mem.embedder, max_batch=1)
            counts: dict[str, float] = {"messages": 0, "add_s": 0.0}
            jobs = dict.fromkeys(_JOB_COUNTS, 0)
            lock = threading.Lock()

            def feed(part: list[tuple[str, int, list[tuple[str, datetime]]]]) -> None:
                for sample, number, turns in part:
                    scope = Scope("bench", sample, session=f"session_{number}")
                    msgs = [
                        Message(role=Role.USER, content=text, observed_at=at) for text, at in turns
                    ]
                    t_add = time.perf_counter()
                    if cfg.mode == "turn":
                        for m in msgs:
                            mem.add_messages(scope, [m])
                    else:
                        mem.add_messages(scope, msgs)
                    spent = time.perf_counter() - t_add
                    report = mem.flush(scope)
                    with lock:
                        counts["add_s"] += spent
                        counts["messages"] += len(msgs)
                        for key in _JOB_COUNTS:
                            jobs[key] += getattr(report, key)

            t0, c0 = time.perf_counter(), time.process_time()
            if cfg.mode == "users":  # one thread per user (conversation), as a server would
                by_user: dict[str, list[tuple[str, int, list[tuple[str, datetime]]]]] = {}
                for item in sessions:
                    by_user.setdefault(item[0], []).append(item)
                threads = [threading.Thread(target=feed, args=(part,)) for part in by_user.values()]
                for th in threads:
                    th.start()
                for th in threads:
                    th.join()
            else:
                feed(sessions)
            messages, add_s = int(counts["messages"]), counts["add_s"]
            report = mem.flush()
            total = time.perf_counter() - t0
            cpu = time.process_time() - c0
            for key in _JOB_COUNTS:
                jobs[key] += getattr(report, key)
        finally:
            mem.close()
    return {
        "messages": messages,
        "seconds": total,
        "messages_per_s": messages / total,
        "cpu_seconds": cpu,
        "messages_per_cpu_s": messages / max(1e-9, cpu),
        "add_seconds": add_s,
        "job_retries": jobs["retried"],
        "job_failures": jobs["failed"],
        "jobs": jobs,
    }


def run_ingest(cfg: IngestConfig) -> dict[str, Any]:
    """One side-by-side measurement in this process (its thread settings as they are)."""
    sessions = _sessions(cfg)
    texts = [text for _, _, turns in sessions for text, _ in turns]
    raw_first, cpu_first = _raw(cfg, texts)
    ingest = _ingest(cfg, sessions)
    raw_second, cpu_second = _raw(cfg, texts)
    raw = (raw_first + raw_second) / 2
    return {
        "settings": {k: os.environ.get(k) for k in _THREAD_VARS},
        "texts": len(texts),
        "raw_texts_per_s": [raw_first, raw_second],
        "raw_texts_per_cpu_s": [cpu_first, cpu_second],
        "ingest": ingest,
        "ratio": ingest["messages_per_s"] / raw,
        # CPU time is what the process itself spent: it does not count waiting for a core,
        # so on a loaded machine it compares the work done, where the wall clock drifts.
        "cpu_ratio": ingest["messages_per_cpu_s"] / ((cpu_first + cpu_second) / 2),
    }


def run_settings(cfg: IngestConfig, settings: list[dict[str, str]]) -> dict[str, Any]:
    """:func:`run_ingest` once per thread setting, each in a fresh child process (the
    engine reads these variables when it loads)."""
    runs = []
    for setting in settings:
        env = {k: v for k, v in os.environ.items() if k not in _THREAD_VARS}
        env.update(setting)
        out = subprocess.run(
            [sys.executable, "-m", "memstrata.bench.ingest", json.dumps(asdict(cfg))],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode != 0:
            runs.append({"settings": setting, "error": out.stderr.strip()[-2000:]})
        else:
            runs.append(json.loads(out.stdout))
    return {
        "benchmark": "ingest",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": asdict(cfg),
        "cpus": os.cpu_count(),
        "load_average_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "runs": runs,
    }


def ingest_markdown(res: dict[str, Any]) -> str:
    cfg = res["config"]
    lines = [
        f"## Ingest vs raw embedder ({cfg['embedder']}, {cfg['conversations']} LoCoMo "
        f"conversation(s), mode {cfg['mode']}"
        f"{'' if cfg.get('coalesce', True) else ', calls not merged'})",
        "",
        "| OMP_WAIT_POLICY | OMP_NUM_THREADS | GOMP_SPINCOUNT | texts | raw texts/s | "
        "ingest msg/s | ratio | CPU ratio | retries | failed jobs |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in res["runs"]:
        s = run["settings"]
        cells = " | ".join(s.get(k) or "(unset)" for k in _THREAD_VARS)
        if "error" in run:
            lines.append(f"| {cells} | error: {run['error'][:80]} ||||||| ")
            continue
        raw = sum(run["raw_texts_per_s"]) / 2
        ing = run["ingest"]
        lines.append(
            f"| {cells} | {run['texts']} | {raw:.1f} | "
            f"{ing['messages_per_s']:.1f} | {run['ratio']:.2f} | "
            f"{run.get('cpu_ratio', float('nan')):.2f} | {ing['job_retries']} | "
            f"{ing['job_failures']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # the child of run_settings
    print(json.dumps(run_ingest(IngestConfig(**json.loads(sys.argv[1])))))
