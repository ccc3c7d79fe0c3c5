"""PNG plots of benchmark results (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["plot_locomo", "plot_scale"]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _all(cell: Any) -> float | None:
    if isinstance(cell, dict) and isinstance(cell.get("all"), dict):
        m = cell["all"].get("mean")
        return None if m is None else 100 * float(m)
    return None


def plot_locomo(res: dict[str, Any], out_dir: Path) -> list[Path]:
    """``locomo_recall_vs_k.png`` and ``locomo_recall_vs_budget.png``."""
    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    cfg, methods = res["config"], res["methods"]
    series = {m: d["evidence_recall"] for m, d in methods.items() if "evidence_recall" in d}
    mem0 = res.get("mem0") or {}
    if "evidence_recall" in mem0:
        series["mem0 (infer=False)"] = mem0["evidence_recall"]
    paths = []
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for name, er in sorted(series.items()):
        ks = [k for k in cfg["ks"] if _all(er.get(str(k))) is not None]
        ax.plot(ks, [_all(er[str(k)]) for k in ks], marker="o", label=name)
    ax.set_xscale("log")
    ax.set_xticks(cfg["ks"], [str(k) for k in cfg["ks"]])
    ax.set_xlabel("k (top-k hits)")
    ax.set_ylabel("turn evidence recall (%)")
    ax.set_title("LoCoMo evidence recall vs k")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    p = out_dir / "locomo_recall_vs_k.png"
    fig.savefig(p, dpi=120)
    plt.close(fig)
    paths.append(p)

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    budgets = cfg["budgets"]
    for name, data in sorted(methods.items()):
        ar = data.get("answer_recall")
        if not ar or name == "full history":
            continue
        bs = [b for b in budgets if _all(ar.get(str(b))) is not None]
        ax.plot(bs, [_all(ar[str(b)]) for b in bs], marker="o", label=name)
    full = _all(methods.get("full history", {}).get("answer_recall", {}).get("full"))
    if full is not None:
        ax.axhline(full, linestyle="--", color="grey", label="full history (no budget)")
    ax.set_xlabel("context budget (tokens)")
    ax.set_ylabel("answer recall in context (%)")
    ax.set_title("LoCoMo answer recall vs budget (categories 1–4)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    p = out_dir / "locomo_recall_vs_budget.png"
    fig.savefig(p, dpi=120)
    plt.close(fig)
    paths.append(p)
    return paths


def plot_scale(res: dict[str, Any], out_dir: Path) -> Path:
    """``scale_cost.png``: latencies (left axis) and ingest throughput (right) vs size."""
    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = res["results"]
    sizes = [r["size"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for key, label in (("search", "search"), ("build_context", "build_context")):
        for q in ("p50_ms", "p95_ms"):
            ys = [r[key].get(q) for r in rows]
            pts = [(s, y) for s, y in zip(sizes, ys, strict=True) if y is not None]
            if pts:
                ax.plot(
                    [p[0] for p in pts],
                    [p[1] for p in pts],
                    marker="o",
                    linestyle="-" if q == "p95_ms" else ":",
                    label=f"{label} {q[:3]}",
                )
    ax.set_xscale("log")
    ax.set_xlabel("records in the store")
    ax.set_ylabel("latency (ms)")
    ax2 = ax.twinx()
    ax2.plot(
        sizes,
        [r["ingest"]["messages_per_s"] or float("nan") for r in rows],  # nan: a kept store
        marker="s",
        color="black",
        alpha=0.5,
        label="ingest msg/s",
    )
    ax2.set_ylabel("ingest (messages/s)")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper left")
    ax.set_title(f"Cost vs size (embedder: {res['config']['embedder']})")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    p = out_dir / "scale_cost.png"
    fig.savefig(p, dpi=120)
    plt.close(fig)
    return p
