"""``memstrata bench http`` runs end to end on a tiny store and counts what it sent."""

from __future__ import annotations

from memstrata.bench.http import HttpBenchConfig, run_http_bench


def _check(result: dict[str, object], requests: int) -> None:
    assert result["errors"] == 0, result["first_errors"]
    assert result["requests"] == requests
    latency = result["latency_ms"]
    assert isinstance(latency, dict)
    for kind in ("add", "search", "context"):
        assert latency[kind]["n"] == requests // 3
        assert latency[kind]["p95_ms"] >= latency[kind]["p50_ms"] > 0


def test_http_bench_reports_latencies_and_no_errors() -> None:
    result = run_http_bench(HttpBenchConfig(records=60, clients=2, requests=6, duration=60))
    _check(result, 12)
    assert result["user_records"] == 60 and result["processes_answering"] == 1


def test_http_bench_on_postgresql_with_two_processes(pg_url: str) -> None:
    cfg = HttpBenchConfig(records=60, clients=4, requests=6, duration=120, store=pg_url, workers=2)
    first = run_http_bench(cfg)
    _check(first, 24)
    assert first["config"]["store"] == "postgresql"  # type: ignore[index]
    # which process accepts a keep-alive connection is the kernel's choice (the spread over
    # both is shown by test_serve_processes.py, with a new connection per request)
    assert first["processes_answering"] in (1, 2)
    assert first["user_records"] == 60
    again = run_http_bench(cfg)  # the seeded user is reused, not seeded twice
    assert again["user_records"] == first["user_records"]
