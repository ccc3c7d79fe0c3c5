from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memstrata.bench.plots import plot_scale
from memstrata.bench.report import scale_markdown
from memstrata.bench.scale import (
    ScaleConfig,
    latency_markdown,
    parse_sizes,
    run_scale,
    users_for,
)
from memstrata.bench.synth import synth_messages, synth_queries


def test_parse_sizes() -> None:
    assert parse_sizes("1k, 10k,100k,1M") == (1_000, 10_000, 100_000, 1_000_000)
    assert parse_sizes("500") == (500,)
    with pytest.raises(ValueError):
        parse_sizes("lots")


def test_users_for() -> None:
    assert users_for(1_000) == 1 and users_for(10_000) == 1
    assert users_for(100_000) == 100 and users_for(1_000_000) == 1_000


def test_synth_is_deterministic_and_mixed() -> None:
    a = list(synth_messages(400, 4, seed=3))
    assert a == list(synth_messages(400, 4, seed=3))
    assert a != list(synth_messages(400, 4, seed=4))
    assert [m.user for m in a[:100]] == [0] * 100 and a[-1].user == 3
    zh = sum(1 for m in a if any("\u4e00" <= ch <= "\u9fff" for ch in m.content))
    assert 0.05 * len(a) < zh < 0.4 * len(a)
    assert synth_queries(5, 1) == synth_queries(5, 1)


def test_run_scale_small(tmp_path: Path) -> None:
    res = run_scale(
        ScaleConfig(
            sizes=(200,), embedder="hashing", store="memory", queries=5, batch=64, zh_sizes=(120,)
        )
    )
    row, zh = res["results"]
    assert row["size"] == 200 and row["users"] == 1 and row["language"] == "en"
    assert zh["size"] == 120 and zh["language"] == "zh" and zh["search"]["n"] == 5
    assert "| 120 | zh |" in scale_markdown(res)
    assert row["search"]["n"] == 5 and row["search"]["p95_ms"] >= row["search"]["p50_ms"]
    assert row["ingest"]["messages_per_s"] > 0 and row["peak_rss_mb"] > 0
    assert "| 200 |" in scale_markdown(res)
    assert plot_scale(res, tmp_path).read_bytes()[:4] == b"\x89PNG"
    # CPU time beside wall clock, the load around the queries, 1 vs 4 context threads
    assert 0 <= row["search"]["cpu_p50_ms"] <= row["search"]["cpu_p95_ms"]
    assert set(row["load_average_1m"]) == {"before_queries", "after_queries"}
    assert set(row["context_threads"]) == {"1", "4"}
    assert all(t["n"] == 5 for t in row["context_threads"].values())
    md = latency_markdown(res)
    assert "| memory | 200 | en |" in md and "1 thread: wall p50 / CPU p50" in md


def test_context_threads_restores_the_builders_pool() -> None:
    from memstrata.context import builder

    before = builder._POOL
    run_scale(
        ScaleConfig(
            sizes=(50,),
            embedder="hashing",
            store="memory",
            queries=2,
            zh_sizes=(),
            worker_messages=0,
            context_threads=(1, 2),
        )
    )
    assert builder._POOL is before


def test_long_session_row_reports_ms_per_message_and_retries() -> None:
    from memstrata.bench.scale import long_session, long_session_markdown

    res = long_session(
        ScaleConfig(embedder="hashing", store="memory", session_turns=(30, 60), session_window=10)
    )
    assert [r["turns"] for r in res["rows"]] == [30, 60]
    assert all(r["ms_per_message"] > 0 for r in res["rows"])
    assert res["rows"][0]["vs_first"] == 1.0
    assert (res["job_retries"], res["job_failures"]) == (0, 0)
    assert "| 60 |" in long_session_markdown(res)


def test_many_users_run_only_the_measured_users_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above 10k records the other users' background jobs are left queued (hours at 1M)."""
    from memstrata import Memory
    from memstrata.bench import scale

    monkeypatch.setattr(scale, "users_for", lambda size: 1 if size <= 100 else 3)
    flushed: list[object] = []
    real_flush = Memory.flush

    def flush(self: Memory, scope: object = None, **kw: object) -> object:
        flushed.append(scope)
        return real_flush(self, scope, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Memory, "flush", flush)
    res = run_scale(
        ScaleConfig(sizes=(60, 150), embedder="hashing", store="memory", queries=2, zh_sizes=())
    )
    one, many = res["results"]
    assert one["ingest"]["jobs_run_for"] == "every user" and flushed[0] is None
    assert many["users"] == 3
    assert many["ingest"]["jobs_run_for"] == "the measured user only"
    assert getattr(flushed[1], "user", None) == "user-0"


def test_search_during_an_ingest_row(tmp_path: Path) -> None:
    """``during_ingest``: the messages are added (and searchable) while searches run, each
    with a question no search asked before; English and Chinese rows, and the markdown."""
    res = run_scale(
        ScaleConfig(
            sizes=(100,),
            embedder="hashing",
            store="memory",
            queries=2,
            zh_sizes=(100,),
            worker_messages=0,
            context_threads=(),
            during_ingest=300,
        )
    )
    for row in res["results"]:
        d = row["search_during_ingest"]
        assert d["messages"] == 300 and d["ingest_seconds"] > 0
        assert d["during"]["n"] >= 1 and d["after"]["n"] == d["during"]["n"]
    md = latency_markdown(res)
    assert "Search while the same process ingests" in md
    assert "| memory | 100 | zh | 300 |" in md
    # off by default: no row, nothing added
    plain = run_scale(
        ScaleConfig(sizes=(50,), embedder="hashing", store="memory", queries=1, zh_sizes=())
    )
    assert plain["results"][0]["search_during_ingest"] is None
    assert "Search while the same process ingests" not in latency_markdown(plain)
    # the questions are fresh: none repeats
    from memstrata.bench.scale import _fresh_questions

    gen = _fresh_questions(["一二三四五六七八九十甲乙丙丁戊己庚辛壬癸子丑寅卯"] * 3, 1, "zh")
    qs = [next(gen) for _ in range(50)]
    assert len(set(qs)) == 50 and all(8 <= len(q) - 1 <= 19 for q in qs)


def test_kept_stores_are_reused_whole(tmp_path: Path) -> None:
    """``--keep-stores``: the first run keeps each row's store, the second measures a copy
    of it without ingesting (and leaves the kept file as it was)."""
    keep = tmp_path / "kept"
    cfg = ScaleConfig(
        sizes=(150,),
        embedder="hashing",
        store="sqlite",
        queries=3,
        batch=50,
        zh_sizes=(80,),
        worker_messages=0,
        context_threads=(),
        keep_stores=str(keep),
    )
    first = run_scale(cfg)
    kept = sorted(p.name for p in keep.iterdir())
    assert kept == [
        "scale-en-150-hashing-seed7-batch50-others0x2000.db",
        "scale-zh-80-hashing-seed7-batch50-others0x2000.db",
    ]
    before = {p.name: p.read_bytes() for p in keep.iterdir()}
    ticks: list[str] = []
    second = run_scale(cfg, lambda label, n: ticks.append(label))
    assert not any(t.startswith("ingest") and "kept" not in t for t in ticks)
    for a, b in zip(first["results"], second["results"], strict=True):
        assert (a["ingest"]["reused"], b["ingest"]["reused"]) == (False, True)
        assert b["ingest"]["messages_per_s"] is None and b["search"]["n"] == 3
    assert {p.name: p.read_bytes() for p in keep.iterdir()} == before
    assert "kept store" in scale_markdown(second)
    assert plot_scale(second, tmp_path).read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="SQLite stores only"):
        run_scale(replace(cfg, store="memory"))
