"""Write benchmark results as JSON and as a Markdown report a person can read."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["locomo_markdown", "scale_markdown", "write_json"]

ANCHORS = (
    "Published anchors (not measured here): LoCoMo paper, DRAGON retriever, evidence recall "
    "@5/10/25/50 = 56.7/66.2/76.7/82.7; seed's BM25 45.5/53.1/62.4/70.1; mem0 paper search "
    "p50 0.148 s / p95 0.200 s; Zep retrieval p95 ~155 ms."
)
_TITLES = {
    "locomo": "LoCoMo",
    "convo-en": "Synthetic conversations, English",
    "convo-zh": "Synthetic conversations, Chinese",
    "convo-assistant-en": "Synthetic user-assistant conversations, English",
    "convo-assistant-zh": "Synthetic user-assistant conversations, Chinese",
}
RANKED = ("memstrata hybrid", "BM25 only", "dense only")
BUDGETED = (
    "memstrata build_context",
    "memstrata hybrid",
    "BM25 only",
    "dense only",
    "sliding window",
    "random sampling",
)


def write_json(data: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8"
    )


def _pct(cell: Any) -> str:
    if not isinstance(cell, dict) or cell.get("mean") is None:
        return "–"
    return f"{100 * cell['mean']:.1f}"


def _ms(v: Any) -> str:
    return "–" if v is None else f"{v:.1f}"


def _ingest_cell(ing: dict[str, Any]) -> str:
    """A scale row's ingest rate, or that its store was a kept one (not ingested)."""
    if ing.get("reused"):
        return "kept store"
    bulk = " bulk" if str(ing.get("loader", "")).startswith("bulk") else ""
    return f"{ing['messages_per_s']:,.0f}{bulk}"


def _load(res: dict[str, Any]) -> str:
    env = res["environment"]
    load, cpus = env.get("load_average_1m_at_end"), env.get("cpus") or 1
    if load is None:
        return ""
    busy = " — the machine was shared with other work, so latencies are pessimistic"
    return f", 1-min load average {load:.1f} at the end{busy if load > cpus else ''}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def locomo_markdown(res: dict[str, Any]) -> str:
    cfg, methods = res["config"], res["methods"]
    cats = [str(c) for c in sorted(int(k) for k in res["dataset"]["categories"])]
    names = {str(k): v for k, v in res["dataset"]["categories"].items()}
    lines = [
        f"# {_TITLES.get(res.get('benchmark', 'locomo'), res.get('benchmark'))}: memstrata "
        "against the seed's baselines",
        "",
        f"Run {res['created_at']} on {res['environment']['platform']} "
        f"({res['environment']['cpus']} CPUs, Python {res['environment']['python']}"
        f"{_load(res)}). "
        f"Conversations: {', '.join(res['dataset']['conversations'])}; "
        f"{res['dataset']['questions']} questions, {res['dataset']['turns']} turns. "
        f"Embedder: `{cfg['embedder']}`; store: `{cfg['store']}`; search pool top_k="
        f"{cfg['pool']}; speaker name in stored content: {cfg['speaker_in_content']}.",
        "",
        "## Turn evidence recall @k (%), all categories",
        "",
    ]
    ranked = [m for m in RANKED if m in methods]
    mem0 = res.get("mem0") or {}
    rows = [
        [m] + [_pct(methods[m]["evidence_recall"].get(str(k), {}).get("all")) for k in cfg["ks"]]
        for m in ranked
        if "evidence_recall" in methods[m]
    ]
    if "evidence_recall" in mem0:
        rows.append(
            ["mem0 (infer=False)"]
            + [_pct(mem0["evidence_recall"].get(str(k), {}).get("all")) for k in cfg["ks"]]
        )
    lines += _table(["method"] + [f"@{k}" for k in cfg["ks"]], rows)
    lines += ["", "## Evidence recall @k per category (%)", ""]
    rows = []
    all_er = [(m, methods[m].get("evidence_recall", {})) for m in ranked]
    if "evidence_recall" in mem0:
        all_er.append(("mem0 (infer=False)", mem0["evidence_recall"]))
    for m, er in all_er:
        for k in cfg["ks"]:
            by_cat = er.get(str(k), {})
            rows.append(
                [m, f"@{k}"] + [_pct(by_cat.get(c)) for c in cats] + [_pct(by_cat.get("all"))]
            )
    lines += _table(["method", "k"] + [f"{c} {names[c]}" for c in cats] + ["all"], rows)

    budgets = cfg["budgets"]
    # The categories with answers (LoCoMo's 5, adversarial, has none).
    answered = [
        c
        for c in cats
        if any(
            c in cell
            for m in BUDGETED
            for cell in methods.get(m, {}).get("answer_recall", {}).values()
        )
    ]
    lines += ["", f"## Answer recall in context (%), categories {', '.join(answered)}", ""]
    rows = []
    for m in BUDGETED:
        data = methods.get(m, {})
        if "missing" in data:
            rows.append([m] + ["missing"] * len(budgets) + [data["missing"]])
            continue
        ar = data.get("answer_recall", {})
        used = data.get("context_tokens", {})
        note = ", ".join(f"{used[str(b)]['all']['mean']:.0f}" for b in budgets if str(b) in used)
        if ar:
            rows.append(
                [m]
                + [_pct(ar.get(str(b), {}).get("all")) for b in budgets]
                + [f"mean tokens used: {note}" if note else ""]
            )
    full = methods.get("full history", {})
    if "answer_recall" in full:
        tok = full.get("tokens", {})
        mean_tok = tok.get("mean")
        rows.append(
            ["full history (no budget)"]
            + [_pct(full["answer_recall"]["full"].get("all"))] * len(budgets)
            + [f"~{mean_tok:,.0f} tokens per conversation" if mean_tok else ""]
        )
    lines += _table(["method"] + [f"{b} tok" for b in budgets] + ["note"], rows)
    rows = []
    for m in BUDGETED:
        ev = methods.get(m, {}).get("evidence_in_context", {})
        if ev:
            rows.append([m] + [_pct(ev.get(str(b), {}).get("all")) for b in budgets])
    if rows:
        lines += [
            "",
            f"### Evidence turns shown in the context (%), categories {', '.join(answered)}",
            "",
            "Share of each question's evidence turns that the context shows as turns (a "
            "summary retelling one does not count); a distractor holding the answer's words "
            "cannot raise it.",
            "",
        ]
        lines += _table(["method"] + [f"{b} tok" for b in budgets], rows)
    lines += ["", "### Per category at each budget (%)", ""]
    rows = []
    for m in BUDGETED:
        ar = methods.get(m, {}).get("answer_recall", {})
        for b in budgets:
            if str(b) in ar:
                rows.append(
                    [m, str(b)]
                    + [_pct(ar[str(b)].get(c)) for c in answered]
                    + [_pct(ar[str(b)].get("all"))]
                )
    lines += _table(["method", "budget"] + [f"{c} {names[c]}" for c in answered] + ["all"], rows)

    lines += ["", "## Latency and throughput", ""]
    rows = []
    for m in (*RANKED, "memstrata build_context"):
        la = methods.get(m, {}).get("latency")
        if la:
            what = "build_context" if "build_context" in m else f"search top_k={cfg['pool']}"
            rows.append([m, what, str(la["n"]), _ms(la["p50_ms"]), _ms(la["p95_ms"])])
    if "latency" in mem0:
        la = mem0["latency"]
        rows.append(
            [
                "mem0 (infer=False)",
                f"search top_k={cfg['pool']}",
                str(la["n"]),
                _ms(la["p50_ms"]),
                _ms(la["p95_ms"]),
            ]
        )
    lines += _table(["method", "call", "n", "p50 ms", "p95 ms"], rows)
    ing = res["ingest"]
    lines += [
        "",
        f"- memstrata ingest (`add_messages` per session): {ing['messages']} messages in "
        f"{ing['seconds']:.2f} s = **{ing['messages_per_s'] or 0:.1f} messages/s** "
        f"(+ flush {ing['flush_seconds']:.2f} s); peak RSS during the run "
        f"{res['peak_rss_mb']:.0f} MB.",
    ]
    if "ingest" in mem0:
        mi = mem0["ingest"]
        lines.append(
            f"- mem0 {mem0.get('version') or ''} ingest (`add(infer=False)` per turn): "
            f"{mi['messages']} messages in {mi['seconds']:.2f} s = "
            f"**{mi['messages_per_s'] or 0:.1f} messages/s**; peak RSS {mem0['peak_rss_mb']:.0f} MB"
            " (the embedding server runs in a separate process, not counted)."
        )
    lines += ["", "## Notes", ""]
    notes = list(res.get("notes", []))
    if mem0:
        notes.append(mem0.get("note", ""))
        if "embedder" in mem0:
            notes.append("mem0 embedder: " + mem0["embedder"] + ".")
        if "missing" in mem0:
            notes.append("mem0 not measured: " + mem0["missing"])
    notes += [
        "Evidence recall@k: share of a question's gold evidence turns covered by the "
        "source_ids of the top-k hits (questions without evidence skipped; malformed ids "
        "such as 'D8:6; D9:17' split, 'D10:' dropped).",
        "build_context is called with reserve_ratio="
        + str(cfg.get("context_reserve", 0.0))
        + " so it uses the same token budget as the baselines; the trailing user message "
        "repeating the question is removed before answer tokens are counted.",
        "Answer recall: share of the gold answer's LoCoMo-normalised, Porter-stemmed tokens "
        "present in the context; ranked methods pack their hits' turns (with dates) in rank "
        "order; random sampling uses seed " + str(cfg["seed"]) + " + question index.",
        ANCHORS,
    ]
    lines += [f"- {n}" for n in notes if n]
    return "\n".join(lines) + "\n"


def scale_markdown(res: dict[str, Any]) -> str:
    cfg = res["config"]
    lines = [
        "# Scale: cost against number of records",
        "",
        f"Run {res['created_at']} on {res['environment']['platform']} "
        f"({res['environment']['cpus']} CPUs{_load(res)}). Embedder: `{cfg['embedder']}`"
        + (
            " (hashing: a fast stand-in; real-model costs are higher)"
            if cfg["embedder"] == "hashing"
            else ""
        )
        + f"; store `{cfg['store']}`; {cfg['queries']} queries per size, hybrid search "
        f"top_k={cfg['top_k']}, build_context budget {cfg['budget']} tokens; ingest through "
        f"`add_messages` in batches of {cfg['batch']}. Synthetic chat-like text, English with "
        "~1/8 Chinese, generated deterministically (seed " + str(cfg["seed"]) + ").",
        "",
        "Ingest msg/s counts the synchronous `add_messages` calls; `flush` then runs the queued "
        "background jobs (summaries, facts, clusters) and is timed separately. 'bulk': the "
        "other users' batches, exactly what `add_messages` writes, many users per transaction "
        "(bench/scale.py); not comparable with the per-call rows.",
        "",
    ]
    rows = []
    for r in res["results"]:
        bc = r["build_context"]
        rows.append(
            [
                str(r.get("store", cfg["store"])),
                f"{r['size']:,}",
                r.get("language", "en"),
                str(r["users"]),
                f"{r['records_per_user']:,}",
                _ms(r["search"]["p50_ms"]),
                _ms(r["search"]["p95_ms"]),
                "missing" if "missing" in bc else _ms(bc["p50_ms"]),
                "missing" if "missing" in bc else _ms(bc["p95_ms"]),
                _ingest_cell(r["ingest"]),
                "kept" if r["ingest"].get("reused") else f"{r['ingest']['flush_seconds']:.1f}",
                f"{r['peak_rss_mb']:,.0f}",
            ]
        )
    lines += _table(
        [
            "store",
            "records",
            "language",
            "users",
            "records/user",
            "search p50 ms",
            "search p95 ms",
            "build_context p50 ms",
            "build_context p95 ms",
            "ingest msg/s",
            "flush s",
            "peak RSS MB",
        ],
        rows,
    )
    if any("missing" in r["build_context"] for r in res["results"]):
        lines += [
            "",
            "- build_context is not in the façade yet: those cells are missing, not estimated.",
        ]
    workers = [w for w in res.get("workers", []) if any(k.endswith("_workers") for k in w)]
    if workers:
        lines += [
            "",
            "Worker throughput: messages whose background jobs N `memstrata worker`-"
            "like processes drain together (jobs claimed with leases; no job twice).",
            "",
        ]
        wrows = [
            [
                w["store"],
                str(k.split("_")[0]),
                str(v["jobs"]),
                f"{v['seconds']:.1f}",
                f"{v['messages_per_s']:,.0f}",
                "/".join(map(str, v["per_worker"])),
            ]
            for w in workers
            for k, v in w.items()
            if k.endswith("_workers")
        ]
        lines += _table(["store", "workers", "jobs", "seconds", "msg/s", "jobs per worker"], wrows)
    return "\n".join(lines) + "\n"
