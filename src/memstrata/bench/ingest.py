"""Ingest throughput against the raw embedder's, on the same texts, side by side (issue 13 §2).

The texts are LoCoMo's turns, read at run time from the dataset file (never copied). One
run measures, in this order and in one process:

1. **raw**: a fresh, uncached embedder encodes every turn text in batches of ``batch``;
2. **ingest**: a fresh ``Memory`` (SQLite in a temp dir, the same embedder model) takes
   the turns session by session — ``add_messages`` per session (``mode="session"``) or
   ``add_message`` per turn (``mode="turn"``) — then ``flush()`` runs every background job;
3. **raw** again (the machine's load drifts; the ratio uses the mean of both raw runs).

It reports texts/s of each, the ratio ingest ÷ raw (goal ≥ 0.8), and the job queue's
retries and failures (goal 0). Thread settings (``OMP_WAIT_POLICY``, ``OMP_NUM_THREADS``)
are read by the embedding engine when it loads, so each setting runs in a child process of
its own (:func:`run_settings`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["IngestConfig", "ingest_markdown", "run_ingest", "run_settings"]

_THREAD_VARS = ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")


@dataclass(frozen=True)
class IngestConfig:
    data_path: str
    conversations: int = 1
    embedder: str = "default"
    mode: str = "session"   # session: add_messages per session | turn: add_message per turn
    batch: int = 64


def _sessions(cfg: IngestConfig) -> list[tuple[str, int, list[tuple[str, datetime]]]]:
    from .locomo.dataset import load_locomo

    convs = load_locomo(Path(cfg.data_path))[: cfg.conversations]
    return [(c.sample_id, s.number, [(f"{t.speaker}: {t.text}", t.observed_at)
                                     for t in s.turns])
            for c in convs for s in c.sessions if s.turns]


def _raw(cfg: IngestConfig, texts: list[str]) -> float:
    from ..embedder.factory import make_embedder

    embedder = make_embedder(None if cfg.embedder == "default" else cfg.embedder)
    embedder.embed_batch(texts[:4])  # load the model outside the timing
    t0 = time.perf_counter()
    for i in range(0, len(texts), cfg.batch):
        embedder.embed_batch(texts[i:i + cfg.batch])
    return len(texts) / (time.perf_counter() - t0)


def _ingest(cfg: IngestConfig,
            sessions: list[tuple[str, int, list[tuple[str, datetime]]]]) -> dict[str, Any]:
    from memstrata import Memory, Message, Role, Scope

    with tempfile.TemporaryDirectory(prefix="memstrata-ingest-") as tmp:
        mem = Memory(f"sqlite:///{tmp}/ingest.db",
                     embedder=None if cfg.embedder == "default" else cfg.embedder,
                     llm="heuristic", background=False)
        try:
            mem.embedder.embed_batch(["warm up"])  # load the model outside the timing
            retried = failed = messages = 0
            add_s = 0.0
            t0 = time.perf_counter()
            for sample, number, turns in sessions:
                scope = Scope("bench", sample, session=f"session_{number}")
                msgs = [Message(role=Role.USER, content=text, observed_at=at)
                        for text, at in turns]
                t_add = time.perf_counter()
                if cfg.mode == "turn":
                    for m in msgs:
                        mem.add_messages(scope, [m])
                else:
                    mem.add_messages(scope, msgs)
                add_s += time.perf_counter() - t_add
                messages += len(msgs)
                report = mem.flush(scope)
                retried += report.retried
                failed += report.failed
            report = mem.flush()
            total = time.perf_counter() - t0
            retried += report.retried
            failed += report.failed
        finally:
            mem.close()
    return {"messages": messages, "seconds": total, "messages_per_s": messages / total,
            "add_seconds": add_s, "job_retries": retried, "job_failures": failed}


def run_ingest(cfg: IngestConfig) -> dict[str, Any]:
    """One side-by-side measurement in this process (its thread settings as they are)."""
    sessions = _sessions(cfg)
    texts = [text for _, _, turns in sessions for text, _ in turns]
    raw_first = _raw(cfg, texts)
    ingest = _ingest(cfg, sessions)
    raw_second = _raw(cfg, texts)
    raw = (raw_first + raw_second) / 2
    return {
        "settings": {k: os.environ.get(k) for k in _THREAD_VARS},
        "texts": len(texts),
        "raw_texts_per_s": [raw_first, raw_second],
        "ingest": ingest,
        "ratio": ingest["messages_per_s"] / raw,
    }


def run_settings(cfg: IngestConfig, settings: list[dict[str, str]]) -> dict[str, Any]:
    """:func:`run_ingest` once per thread setting, each in a fresh child process (the
    engine reads these variables when it loads)."""
    runs = []
    for setting in settings:
        env = {k: v for k, v in os.environ.items() if k not in _THREAD_VARS}
        env.update(setting)
        out = subprocess.run([sys.executable, "-m", "memstrata.bench.ingest",
                              json.dumps(asdict(cfg))], env=env, capture_output=True,
                             text=True, check=False)
        if out.returncode != 0:
            runs.append({"settings": setting, "error": out.stderr.strip()[-2000:]})
        else:
            runs.append(json.loads(out.stdout))
    return {"benchmark": "ingest", "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "config": asdict(cfg), "cpus": os.cpu_count(),
            "load_average_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
            "runs": runs}


def ingest_markdown(res: dict[str, Any]) -> str:
    cfg = res["config"]
    lines = [f"## Ingest vs raw embedder ({cfg['embedder']}, {cfg['conversations']} LoCoMo "
             f"conversation(s), mode {cfg['mode']})", "",
             "| OMP_WAIT_POLICY | OMP_NUM_THREADS | texts | raw texts/s | ingest msg/s | "
             "ratio | retries | failed jobs |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for run in res["runs"]:
        s = run["settings"]
        policy = s.get("OMP_WAIT_POLICY") or "(unset)"
        threads = s.get("OMP_NUM_THREADS") or "(unset)"
        if "error" in run:
            lines.append(f"| {policy} | {threads} | error: {run['error'][:80]} |||||| ")
            continue
        raw = sum(run["raw_texts_per_s"]) / 2
        ing = run["ingest"]
        lines.append(f"| {policy} | {threads} | {run['texts']} | {raw:.1f} | "
                     f"{ing['messages_per_s']:.1f} | {run['ratio']:.2f} | {ing['job_retries']} | "
                     f"{ing['job_failures']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # the child of run_settings
    print(json.dumps(run_ingest(IngestConfig(**json.loads(sys.argv[1])))))
