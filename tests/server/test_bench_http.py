"""``memstrata bench http`` runs end to end on a tiny store and counts what it sent."""

from __future__ import annotations

from memstrata.bench.http import HttpBenchConfig, run_http_bench


def test_http_bench_reports_latencies_and_no_errors() -> None:
    result = run_http_bench(HttpBenchConfig(records=60, clients=2, requests=6, duration=60))
    assert result["errors"] == 0, result["first_errors"]
    assert result["requests"] == 12
    for kind in ("add", "search", "context"):
        assert result["latency_ms"][kind]["n"] == 4
        assert result["latency_ms"][kind]["p95_ms"] >= result["latency_ms"][kind]["p50_ms"] > 0
