"""How search, context assembly, ingest and memory grow with the number of records.

For each size a fresh store is filled with :mod:`memstrata.bench.synth` text through
``add_messages`` in large batches (one user up to 10k records; above that 1,000 records per
user, so 1M records spread over 1,000 users), then ``queries`` searches (hybrid, top 10) and,
when the façade has it, ``build_context`` calls are timed, all scoped to one user.

Above ``bulk_above`` records (default 10k) the other users are loaded in bulk: each user's
batch is exactly what ``add_messages`` writes (``Memory._bulk_add_messages``: the message
records, their vectors and lexical index entries, one queued ingest job per batch, the
embedding-cache entries), but ``bulk_users`` users' batches share one transaction, so the
store's per-call costs are paid once per transaction. The measured user (``user-0``) is
still written through ``add_messages``; only their jobs run (as before, the other users'
derived layers are not built). Ingest msg/s of such a row counts the bulk load and says so.

``other_users`` (``--other-users N``) puts N more users of ``other_records`` records each in
the measured user's tenant before the measured user's records are written (loaded in bulk,
timed apart, their jobs not run): a search or context of the measured user should cost the
same with them as without, whatever the tenant's other users store (the lexical index
reads the searching user's postings only; docs/measurements.md, "Tenant isolation of the
lexical index"). The row's users count them; records/user stays the measured user's.
"""

from __future__ import annotations

import os
import re
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .measure import LatencyLog, RssSampler, load_average
from .synth import (
    SynthMessage,
    synth_messages,
    synth_messages_zh,
    synth_queries,
    synth_queries_zh,
)

__all__ = [
    "ScaleConfig",
    "latency_markdown",
    "long_session",
    "long_session_markdown",
    "parse_sizes",
    "run_scale",
    "store_kinds",
    "users_for",
]

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
    # Worker throughput: this many messages ingested with jobs queued, then drained by 1, 2...
    # worker processes at once (0 messages skips it).
    worker_messages: int = 2000
    workers: tuple[int, ...] = (1, 2)
    # one session fed turn by turn (add_message + flush); ms/message at these turn counts
    session_turns: tuple[int, ...] = ()  # the CLI asks for (100, 1_000, 10_000)
    session_window: int = 50
    zh_sizes: tuple[int, ...] = (10_000,)  # Chinese rows (one user up to 10k), see synth.py
    # build_context again with the context builder's pool at each of these thread counts
    # (1: every source in turn; 4: the default) on sizes up to 10k records/user
    context_threads: tuple[int, ...] = (1, 4)
    # above this many records, every user but the measured one is loaded in bulk
    bulk_above: int = 10_000
    bulk_users: int = 20  # users' add_messages batches per bulk transaction
    # users of ``other_records`` records each put in the measured user's tenant (sizes up to
    # 10k records, one measured user): what a search costs beside a tenant's other users
    other_users: int = 0
    other_records: int = 2000
    # messages another thread adds (in add_messages of 50) while the measured user searches
    # ten times a second with fresh questions, on sizes up to 10k records of one user (0 skips)
    during_ingest: int = 0
    # a folder where each row's SQLite store is kept after its ingest, and taken from
    # (copied) by a later run with the same content: its ingest is then not measured
    keep_stores: str | None = None


def store_kinds(spec: str) -> tuple[str, ...]:
    """``"sqlite,postgresql://u@h/db"`` → each store to measure, side by side in one run."""
    return tuple(p.strip() for p in spec.split(",") if p.strip())


def store_label(store: str) -> str:
    return store.split("?", 1)[0] if "://" in store else store


@contextmanager
def fresh_store(store: str, tmp: str, tag: str) -> Iterator[str]:
    """A fresh store for one measurement: a temp SQLite file, ``memory://``, or a new schema
    (dropped afterwards) in the PostgreSQL database the URL names."""
    if store == "sqlite":
        yield f"sqlite:///{tmp}/{tag}.db"
    elif store == "memory":
        yield "memory://"
    elif store.startswith(("postgresql://", "postgres://")):
        import uuid
        from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

        import psycopg

        parts = urlsplit(store)
        query = [(k, v) for k, v in parse_qsl(parts.query) if k != "schema"]
        schema = f"bench_{tag}_{uuid.uuid4().hex[:8]}"
        admin = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), ""))
        yield urlunsplit(
            (parts.scheme, parts.netloc, parts.path, urlencode([*query, ("schema", schema)]), "")
        )
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    else:
        raise ValueError(f"bench store {store!r}: use sqlite, memory or a postgresql:// URL")


# A worker process: open the store, say ready, wait for "go" (so interpreter start-up is not
# timed), drain every claimable job, report how many it ran.
# Claims one job at a time, as a worker sharing a queue should (a batch lease hoards work).
_DRAIN = """
import sys
from memstrata import Memory
from memstrata.worker import JobRunner
mem = Memory(sys.argv[1], embedder=sys.argv[2], background=False)
runner = JobRunner(mem.store, mem.layers.handlers(), mem.clock)
print("ready", flush=True)
sys.stdin.readline()
report = runner.run_pending(batch=1, include_delayed=True)
mem.close()
print(report.done, flush=True)
"""
_WORKER_USERS = 16
_WORKER_BATCH = 20


def _worker_throughput(store: str, cfg: ScaleConfig, tmp: str) -> dict[str, Any]:
    """Jobs drained per second by 1, 2, ... worker processes sharing one store."""
    import subprocess
    import sys

    from memstrata import Memory, Message, Role, Scope

    out: dict[str, Any] = {"messages": cfg.worker_messages}
    if cfg.worker_messages <= 0 or store == "memory":
        return out
    msgs = list(synth_messages(cfg.worker_messages, _WORKER_USERS, cfg.seed + 3))
    for n in cfg.workers:
        with fresh_store(store, tmp, f"workers{n}") as url:
            mem: Any = Memory(url, embedder=cfg.embedder, background=False)
            try:
                for batch in _batches(msgs, _WORKER_BATCH):
                    mem.add_messages(
                        Scope("scale", f"user-{batch[0].user}"),
                        [
                            Message(role=Role(m.role), content=m.content, observed_at=m.observed_at)
                            for m in batch
                        ],
                    )
                jobs = sum(
                    len(mem.store.list_jobs("scale", f"user-{u}", status="pending"))
                    for u in range(_WORKER_USERS)
                )
            finally:
                mem.close()
            procs = [
                subprocess.Popen(
                    [sys.executable, "-c", _DRAIN, url, cfg.embedder],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                for _ in range(n)
            ]
            for p in procs:
                assert p.stdout is not None and p.stdout.readline().strip() == "ready"
            t0 = time.perf_counter()
            for p in procs:
                assert p.stdin is not None
                p.stdin.write("go\n")
                p.stdin.flush()
            done = [int((p.communicate()[0] or "0").strip() or 0) for p in procs]
            seconds = time.perf_counter() - t0
            out[f"{n}_workers"] = {
                "jobs": jobs,
                "jobs_done": sum(done),
                "seconds": seconds,
                "messages_per_s": cfg.worker_messages / seconds,
                "per_worker": done,
            }
    return out


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


def _load_other_users(mem: Any, cfg: ScaleConfig, tick: Progress, lang: str) -> dict[str, Any]:
    """``cfg.other_users`` users of ``cfg.other_records`` records each in the tenant
    ``scale``, loaded in bulk (their jobs queued, not run)."""
    from memstrata import Message, Role, Scope

    gen = synth_messages_zh if lang == "zh" else synth_messages
    total = cfg.other_users * cfg.other_records
    t0 = time.perf_counter()
    pending: list[tuple[Any, list[Any]]] = []
    for batch in _batches(gen(total, cfg.other_users, cfg.seed + 5), cfg.batch):
        msgs = [
            Message(role=Role(m.role), content=m.content, observed_at=m.observed_at) for m in batch
        ]
        pending.append((Scope("scale", f"other-{batch[0].user}"), msgs))
        if len(pending) >= cfg.bulk_users:
            mem._bulk_add_messages(pending)
            pending = []
        tick("other users", len(batch))
    if pending:
        mem._bulk_add_messages(pending)
    seconds = time.perf_counter() - t0
    return {
        "users": cfg.other_users,
        "records_each": cfg.other_records,
        "seconds": seconds,
        "messages_per_s": total / seconds if seconds else None,
    }


def kept_store(cfg: ScaleConfig, size: int, lang: str) -> Path | None:
    """Where ``--keep-stores`` keeps the SQLite store of this row: named by everything that
    decides its content (size, language, embedder, seed, batch, other users)."""
    if cfg.keep_stores is None:
        return None
    if cfg.store != "sqlite":
        raise ValueError(f"--keep-stores keeps SQLite stores only, not {cfg.store!r}")
    embedder = re.sub(r"[^A-Za-z0-9._-]+", "_", cfg.embedder)
    name = (
        f"scale-{lang}-{size}-{embedder}-seed{cfg.seed}-batch{cfg.batch}"
        f"-others{cfg.other_users}x{cfg.other_records}.db"
    )
    return Path(cfg.keep_stores) / name


def _copy_store(src: Path, dst: Path) -> None:
    """A consistent copy of a SQLite store (its WAL included), written whole or not at all."""
    part = dst.with_name(dst.name + ".part")
    dst.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(src)) as a, closing(sqlite3.connect(part)) as b:
        a.backup(b)
    os.replace(part, dst)


def _fill(
    mem: Any, size: int, cfg: ScaleConfig, tick: Progress, lang: str
) -> tuple[dict[str, Any] | None, float, float]:
    """Write the row's messages (and its other users), then drain the jobs: the other
    users' load, ingest seconds, flush seconds."""
    from memstrata import Message, Role, Scope

    users = users_for(size)
    others = cfg.other_users if users == 1 else 0
    bulk = size > cfg.bulk_above and users > 1
    other_load = _load_other_users(mem, cfg, tick, lang) if others else None
    t0 = time.perf_counter()
    gen = synth_messages_zh if lang == "zh" else synth_messages
    pending: list[tuple[Any, list[Any]]] = []
    for batch in _batches(gen(size, users, cfg.seed), cfg.batch):
        scope = Scope("scale", f"user-{batch[0].user}")
        msgs = [
            Message(role=Role(m.role), content=m.content, observed_at=m.observed_at) for m in batch
        ]
        if bulk and batch[0].user != 0:
            pending.append((scope, msgs))
            if len(pending) >= cfg.bulk_users:
                mem._bulk_add_messages(pending)
                pending = []
        else:
            mem.add_messages(scope, msgs)
        tick(f"ingest {size:,}", len(batch))
    if pending:
        mem._bulk_add_messages(pending)
    ingest_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    mem.flush() if users == 1 and not others else mem.flush(Scope("scale", "user-0"))
    return other_load, ingest_s, time.perf_counter() - t0


def _one_size(size: int, cfg: ScaleConfig, tick: Progress, lang: str = "en") -> dict[str, Any]:
    from memstrata import Memory, Scope

    users = users_for(size)
    others = cfg.other_users if users == 1 else 0
    bulk = size > cfg.bulk_above and users > 1
    kept = kept_store(cfg, size, lang)
    reused = kept is not None and kept.exists()
    with (
        tempfile.TemporaryDirectory(prefix="memstrata-scale-") as tmp,
        RssSampler() as rss,
        fresh_store(cfg.store, tmp, f"s{size}") as url,
    ):
        if reused:  # measured on a copy: searches write access counts
            assert kept is not None
            _copy_store(kept, Path(tmp) / f"s{size}.db")
            tick(f"ingest {size:,} (kept store)", size)
        # Above 10k records (many users) only the measured user's background jobs run: at
        # 1M records the others' (clusters, facts, summaries of 999 users) would take hours
        # on 2 cores, and their messages are searchable without them (indexed when added).
        mem: Any = Memory(url, embedder=cfg.embedder, background=users == 1 and not others)
        try:
            other_load: dict[str, Any] | None
            ingest_s: float | None
            flush_s: float | None
            if reused:
                other_load, ingest_s, flush_s = None, None, None
            else:
                other_load, ingest_s, flush_s = _fill(mem, size, cfg, tick, lang)
                if kept is not None:
                    _copy_store(Path(tmp) / f"s{size}.db", kept)
            scope = Scope("scale", "user-0")
            ingest_peak = rss.peak_mb
            search = LatencyLog()
            context = LatencyLog()
            has_ctx = hasattr(mem, "build_context")
            queries = (synth_queries_zh if lang == "zh" else synth_queries)(
                cfg.queries, cfg.seed + 1
            )
            mem.search(scope, queries[0], top_k=cfg.top_k)  # warm caches and lazy loads
            load_before = load_average()
            for q in queries:
                with search.time():
                    mem.search(scope, q, top_k=cfg.top_k)
                if has_ctx:
                    with context.time():
                        mem.build_context(scope, q, token_budget=cfg.budget)
                tick(f"queries {size:,}", 1)
            load_after = load_average()
            threads = _context_threads(mem, scope, queries, cfg) if has_ctx and users == 1 else {}
            during = (
                _search_during_ingest(mem, scope, cfg, lang)
                if cfg.during_ingest and users == 1 and not others
                else None
            )
        finally:
            mem.close()
    return {
        "store": store_label(cfg.store),
        "size": size,
        "language": lang,
        "users": users + others,
        "records_per_user": size // users,
        "other_users": other_load,
        "ingest": {
            "messages": size,
            "seconds": ingest_s,
            "messages_per_s": size / ingest_s if ingest_s else None,
            "flush_seconds": flush_s,
            "kept_store": str(kept) if kept is not None else None,
            "reused": reused,
            "jobs_run_for": "every user" if users == 1 and not others else "the measured user only",
            "loader": (
                f"bulk: the measured user through add_messages, the others' add_messages "
                f"batches {cfg.bulk_users} users per transaction"
                if bulk
                else "add_messages"
            ),
        },
        "search": search.summary_ms(),
        "build_context": context.summary_ms()
        if has_ctx
        else {"missing": "Memory.build_context is not available yet"},
        "peak_rss_mb": rss.peak_mb,
        "ingest_peak_rss_mb": ingest_peak,
        "load_average_1m": {"before_queries": load_before, "after_queries": load_after},
        "context_threads": threads,
        "search_during_ingest": during,
    }


def _context_threads(
    mem: Any, scope: Any, queries: Sequence[str], cfg: ScaleConfig
) -> dict[str, Any]:
    """build_context p50/p95 (wall and CPU) with the context builder's thread pool swapped
    for one of each size in ``cfg.context_threads`` (the pool is module-level; restored
    after). One thread runs every source in turn; more only help if reads run concurrently.
    """
    from concurrent.futures import ThreadPoolExecutor

    from ..context import builder

    out: dict[str, Any] = {}
    original = builder._POOL
    try:
        for n in cfg.context_threads:
            pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix=f"bench-context-{n}")
            builder._POOL = pool
            log = LatencyLog()
            try:
                mem.build_context(scope, queries[0], token_budget=cfg.budget)  # warm
                for q in queries:
                    with log.time():
                        mem.build_context(scope, q, token_budget=cfg.budget)
            finally:
                builder._POOL = original
                pool.shutdown(wait=True)
            out[str(n)] = {**log.summary_ms(), "load_average_1m": load_average()}
    finally:
        builder._POOL = original
    return out


_DURING_INTERVAL_S = 0.1  # ten searches a second, open loop


def _fresh_questions(texts: Sequence[str], seed: int, lang: str) -> Iterator[str]:
    """Questions no search asked before (so none is in the embedding caches): runs of 5-12
    words (English) or 8-19 characters (Chinese) of the generator's messages."""
    import random

    rng = random.Random(seed)
    seen: set[str] = set()
    while True:
        t = rng.choice(texts)
        if lang == "zh":
            n = rng.randint(8, 19)
            i = rng.randint(0, max(0, len(t) - n))
            q = t[i : i + n] + "？"
        else:
            words = t.split()
            n = rng.randint(5, 12)
            i = rng.randint(0, max(0, len(words) - n))
            q = " ".join(words[i : i + n]) + "?"
        if q not in seen:
            seen.add(q)
            yield q


def _search_during_ingest(mem: Any, scope: Any, cfg: ScaleConfig, lang: str) -> dict[str, Any]:
    """Search p50/p95 while another thread adds ``cfg.during_ingest`` new messages (in
    add_messages of 50), searching ten times a second with fresh questions; then the same
    number of searches after the ingest, and the ingest's own time. A search arriving
    during an ingest shares the cores (and the embedder) with it."""
    import threading

    from memstrata import Message, Role

    gen = synth_messages_zh if lang == "zh" else synth_messages
    new = [
        Message(role=Role(m.role), content=f"{m.content} ({i})", observed_at=m.observed_at)
        for i, m in enumerate(gen(cfg.during_ingest, 1, cfg.seed + 100))
    ]
    questions = _fresh_questions([m.content for m in new], cfg.seed + 200, lang)
    ingest_s: list[float] = []
    errors: list[BaseException] = []

    def ingest() -> None:
        t0 = time.perf_counter()
        try:
            for i in range(0, len(new), 50):
                mem.add_messages(scope, new[i : i + 50])
        except BaseException as exc:  # reported by the caller
            errors.append(exc)
        ingest_s.append(time.perf_counter() - t0)

    during = LatencyLog()
    thread = threading.Thread(target=ingest, name="bench-during-ingest")
    thread.start()
    due = time.perf_counter()
    while True:  # at least one search, however short the ingest
        due += _DURING_INTERVAL_S
        with during.time():
            mem.search(scope, next(questions), top_k=cfg.top_k)
        if not thread.is_alive():
            break
        time.sleep(max(0.0, due - time.perf_counter()))
    thread.join()
    if errors:
        raise errors[0]
    after = LatencyLog()
    for _ in range(max(1, len(during.samples))):
        with after.time():
            mem.search(scope, next(questions), top_k=cfg.top_k)
    return {
        "messages": cfg.during_ingest,
        "ingest_seconds": ingest_s[0],
        "searches_per_s": 1 / _DURING_INTERVAL_S,
        "during": during.summary_ms(),
        "after": after.summary_ms(),
    }


def latency_markdown(res: dict[str, Any]) -> str:
    """CPU time beside wall clock per row, the load average around each row's queries, and
    build_context with 1 vs more context threads."""
    rows = res.get("results") or []
    if not rows:
        return ""

    def ms(cell: Any, key: str) -> str:
        v = cell.get(key) if isinstance(cell, dict) else None
        return "–" if v is None else f"{v:.1f}"

    def load(v: Any) -> str:
        return "–" if v is None else f"{v:.1f}"

    lines = [
        "",
        "### CPU time per call (the process's, all threads) and machine load",
        "",
        "| store | records | language | search wall p50 / p95 | search CPU p50 / p95 | "
        "build_context wall p50 / p95 | build_context CPU p50 / p95 | load 1m before / "
        "after |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        la = r.get("load_average_1m") or {}
        s, c = r.get("search", {}), r.get("build_context", {})
        lines.append(
            f"| {r['store']} | {r['size']:,} | {r['language']} | {ms(s, 'p50_ms')} / "
            f"{ms(s, 'p95_ms')} | {ms(s, 'cpu_p50_ms')} / {ms(s, 'cpu_p95_ms')} | "
            f"{ms(c, 'p50_ms')} / {ms(c, 'p95_ms')} | {ms(c, 'cpu_p50_ms')} / "
            f"{ms(c, 'cpu_p95_ms')} | {load(la.get('before_queries'))} / "
            f"{load(la.get('after_queries'))} |"
        )
    threaded = [r for r in rows if r.get("context_threads")]
    if threaded:
        counts = sorted({int(n) for r in threaded for n in r["context_threads"]})
        lines += [
            "",
            "### build_context with the context builder's pool at 1 vs more threads",
            "",
            "| store | records | language | "
            + " | ".join(f"{n} thread{'s' if n > 1 else ''}: wall p50 / CPU p50" for n in counts)
            + " |",
            "|---|---:|---|" + "---:|" * len(counts),
        ]
        for r in threaded:
            cells = [
                f"{ms(r['context_threads'].get(str(n)), 'p50_ms')} / "
                f"{ms(r['context_threads'].get(str(n)), 'cpu_p50_ms')}"
                for n in counts
            ]
            lines.append(
                f"| {r['store']} | {r['size']:,} | {r['language']} | " + " | ".join(cells) + " |"
            )
    during = [r for r in rows if r.get("search_during_ingest")]
    if during:
        lines += [
            "",
            "### Search while the same process ingests (ten searches a second, fresh questions)",
            "",
            "| store | records | language | messages added | ingest s | search during p50 / "
            "p95 | searches | search after p50 / p95 |",
            "|---|---:|---|---:|---:|---:|---:|---:|",
        ]
        for r in during:
            d = r["search_during_ingest"]
            lines.append(
                f"| {r['store']} | {r['size']:,} | {r['language']} | {d['messages']:,} | "
                f"{d['ingest_seconds']:.1f} | {ms(d['during'], 'p50_ms')} / "
                f"{ms(d['during'], 'p95_ms')} | {d['during'].get('n', 0)} | "
                f"{ms(d['after'], 'p50_ms')} / {ms(d['after'], 'p95_ms')} |"
            )
    return "\n".join(lines) + "\n"


def run_scale(cfg: ScaleConfig, progress: Progress | None = None) -> dict[str, Any]:
    tick = progress or (lambda label, n: None)
    import platform

    created = datetime.now(UTC).isoformat(timespec="seconds")
    out: dict[str, Any] = {
        "results": [
            _one_size(s, replace(cfg, store=store), tick)
            for store in store_kinds(cfg.store)
            for s in cfg.sizes
        ]
        + [
            _one_size(s, replace(cfg, store=store), tick, "zh")
            for store in store_kinds(cfg.store)
            for s in cfg.zh_sizes
        ],
        "workers": _workers_all(cfg),
        "long_session": long_session(cfg, tick) if cfg.session_turns else None,
    }
    # the environment after the run: its load average is the one at the end
    return {
        "benchmark": "scale",
        "created_at": created,
        "config": asdict(cfg),
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_1m_at_end": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        },
        **out,
    }


def _workers_all(cfg: ScaleConfig) -> list[dict[str, Any]]:
    out = []
    with tempfile.TemporaryDirectory(prefix="memstrata-workers-") as tmp:
        for store in store_kinds(cfg.store):
            out.append({"store": store_label(store), **_worker_throughput(store, cfg, tmp)})
    return out


def long_session(cfg: ScaleConfig, tick: Progress | None = None) -> dict[str, Any]:
    """Background cost per message as one session grows (issue 7 item 6).

    One user, one session, fed one turn at a time with ``add_message`` followed by
    ``flush`` (so every ingest job runs at once), in a single run up to the largest count:
    the row for N turns is the mean ms per message over the ``session_window`` messages
    ending at turn N. Job retries (the queue's) are counted over the whole run."""
    from memstrata import Memory, Role, Scope

    tick = tick or (lambda label, n: None)
    marks = sorted(set(cfg.session_turns))
    total = marks[-1]
    window = max(1, min(cfg.session_window, marks[0]))
    rows: list[dict[str, Any]] = []
    retried = failed = 0
    store = store_kinds(cfg.store)[0]  # the first store named (sqlite by default)
    with (
        tempfile.TemporaryDirectory(prefix="memstrata-session-") as tmp,
        fresh_store(store, tmp, "session") as url,
    ):
        mem: Any = Memory(url, embedder=cfg.embedder, llm="heuristic", background=False)
        scope = Scope("bench", "long-user", session="long-session")
        try:
            started = 0.0
            for i, m in enumerate(synth_messages(total, 1, cfg.seed), start=1):
                if i == marks[len(rows)] - window + 1:
                    started = time.perf_counter()
                mem.add_message(scope, Role(m.role), m.content, observed_at=m.observed_at)
                report = mem.flush(scope)
                retried += report.retried
                failed += report.failed
                if i == marks[len(rows)]:
                    ms = (time.perf_counter() - started) * 1000 / window
                    rows.append({"turns": i, "ms_per_message": ms})
                    if len(rows) == len(marks):
                        break
                tick("long session", 1)
        finally:
            mem.close()
    base = rows[0]["ms_per_message"] if rows else None
    for row in rows:
        row["vs_first"] = row["ms_per_message"] / base if base else None
    return {
        "embedder": cfg.embedder,
        "store": store_label(store),
        "window": window,
        "rows": rows,
        "job_retries": retried,
        "job_failures": failed,
    }


def long_session_markdown(res: dict[str, Any] | None) -> str:
    if not res:
        return ""
    lines = [
        "",
        f"### One long session (add_message + flush per turn, {res['embedder']}, "
        f"{res['store']}; mean of the last {res['window']} turns)",
        "",
        "| turns | ms/message | × first row |",
        "|---:|---:|---:|",
    ]
    for row in res["rows"]:
        lines.append(f"| {row['turns']:,} | {row['ms_per_message']:.1f} | {row['vs_first']:.2f} |")
    lines.append("")
    lines.append(f"Job retries: {res['job_retries']}, failed jobs: {res['job_failures']}.")
    return "\n".join(lines) + "\n"
