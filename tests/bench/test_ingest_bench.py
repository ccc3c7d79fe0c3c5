"""``memstrata bench ingest``: raw embedder vs ingest on the same texts, one child process per
thread setting, retries counted."""

from __future__ import annotations

from pathlib import Path

from memstrata.bench.ingest import IngestConfig, ingest_markdown, run_ingest, run_settings


def test_run_ingest_side_by_side(locomo_file: Path) -> None:
    res = run_ingest(IngestConfig(data_path=str(locomo_file), embedder="hashing", mode="turn"))
    assert res["texts"] == 6 and res["ingest"]["messages"] == 6
    assert len(res["raw_texts_per_s"]) == 2 and all(r > 0 for r in res["raw_texts_per_s"])
    assert res["ratio"] > 0
    assert (res["ingest"]["job_retries"], res["ingest"]["job_failures"]) == (0, 0)


def test_each_setting_runs_in_its_own_process(locomo_file: Path) -> None:
    cfg = IngestConfig(data_path=str(locomo_file), embedder="hashing")
    res = run_settings(cfg, [{}, {"OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "1"}])
    first, second = res["runs"]
    assert "error" not in first and "error" not in second, res
    assert first["settings"]["OMP_WAIT_POLICY"] is None
    assert second["settings"] == {
        "OMP_WAIT_POLICY": "PASSIVE",
        "OMP_NUM_THREADS": "1",
        "GOMP_SPINCOUNT": None,
    }
    md = ingest_markdown(res)
    assert "| PASSIVE | 1 | (unset) | 6 |" in md


def test_users_mode_feeds_conversations_concurrently(locomo_file: Path) -> None:
    for coalesce in (True, False):
        res = run_ingest(
            IngestConfig(
                data_path=str(locomo_file),
                embedder="hashing",
                mode="users",
                conversations=2,
                coalesce=coalesce,
            )
        )
        assert res["ingest"]["messages"] == res["texts"]
        assert res["cpu_ratio"] > 0 and len(res["raw_texts_per_cpu_s"]) == 2
        assert (res["ingest"]["job_retries"], res["ingest"]["job_failures"]) == (0, 0)
        jobs = res["ingest"]["jobs"]  # every job the flushes claimed, in one outcome
        outcomes = ("done", "retried", "failed", "lost", "revoked", "given_back")
        assert jobs["claimed"] == sum(jobs[k] for k in outcomes) == jobs["done"] > 0, jobs
