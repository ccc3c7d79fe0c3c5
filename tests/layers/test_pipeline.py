"""The ingest pipeline through the real job runner: overflow, summaries, session end,
idempotency (a job run twice), a failing step retried."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from strata_kit import ALICE, add_turns, layer_ctx, minutes_after, rounds

from memstrata.errors import ValidationError
from memstrata.layers.base import LayerContext
from memstrata.layers.mid_term import MidTermService
from memstrata.layers.pipeline import (
    Pipeline,
    PipelineError,
    default_steps,
    make_ingest_job,
    make_session_end_job,
)
from memstrata.layers.summaries import SummaryService
from memstrata.records import MemoryRecord
from memstrata.scope import Scope
from memstrata.worker import JobRunner


class FlakyStep:
    """A real IngestStep that fails the first ``failures`` times it is called."""

    name = "flaky"

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    def on_messages(self, scope: Scope, messages: Sequence[MemoryRecord]) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise RuntimeError("transient failure")

    def on_session_end(self, scope: Scope) -> None:
        self.on_messages(scope, [])


def ingest(
    ctx: LayerContext, pipeline: Pipeline, turns: list[tuple[str, str]], first_round: int
) -> list[MemoryRecord]:
    recs = add_turns(ctx, ALICE, turns, start=minutes_after(2 * (first_round - 1)))
    pipeline.handlers()["ingest"](make_ingest_job(ALICE, [r.id for r in recs], ctx.clock.now()))
    return recs


def snapshot(ctx: LayerContext) -> list[tuple[str, int, str]]:
    everything = [r for batch in ctx.store.scan() for r in batch if r.type.value != "message"]
    return sorted((r.id, r.version, r.status.value) for r in everything)


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_overflow_goes_to_mid_term_and_summaries_every_10_rounds(tmp_path: Path, kind: str) -> None:
    with layer_ctx(tmp_path, kind) as ctx:
        pipe = Pipeline(ctx, default_steps(ctx))
        for n in range(1, 21):
            ingest(ctx, pipe, rounds(n, n), n)
        mid, sums = MidTermService(ctx), SummaryService(ctx)
        assert mid.clusters(ALICE) == [] and sums.rolling(ALICE) is None
        assert [r.content.structured["step_end"] for r in sums.summaries(ALICE)] == [10]
        first = ingest(ctx, pipe, rounds(21, 21), 21)
        clustered = {i for c in mid.clusters(ALICE) for i in c.source_ids}
        rolling = sums.rolling(ALICE)
        assert rolling is not None and len(rolling.source_ids) == 2
        assert clustered == set(rolling.source_ids)
        assert first[0].id not in clustered
        assert [r.content.structured["step_end"] for r in sums.summaries(ALICE)] == [10, 20]


def test_running_the_same_jobs_twice_gives_the_same_state(tmp_path: Path) -> None:
    with layer_ctx(tmp_path) as ctx:
        pipe = Pipeline(ctx, default_steps(ctx))
        jobs = []
        for n in range(1, 24):
            recs = add_turns(ctx, ALICE, rounds(n, n), start=minutes_after(2 * (n - 1)))
            jobs.append(make_ingest_job(ALICE, [r.id for r in recs], ctx.clock.now()))
        end = make_session_end_job(ALICE, ctx.clock.now())
        handlers = pipe.handlers()
        for job in jobs:
            handlers[job.kind](job)
        handlers[end.kind](end)
        state = snapshot(ctx)
        assert state  # something was written
        for job in [*jobs, end]:  # as if every job ran again after a kill -9
            handlers[job.kind](job)
        assert snapshot(ctx) == state


def test_session_end_absorbs_the_buffer_and_writes_the_final_summary(tmp_path: Path) -> None:
    with layer_ctx(tmp_path) as ctx:
        pipe = Pipeline(ctx, default_steps(ctx))
        recs = ingest(ctx, pipe, rounds(1, 3), 1)
        assert MidTermService(ctx).clusters(ALICE) == []
        ctx.store.enqueue([make_session_end_job(ALICE, ctx.clock.now())])
        report = JobRunner(ctx.store, pipe.handlers(), ctx.clock).run_pending()
        assert report.done == 1 and report.failed == 0
        clustered = {i for c in MidTermService(ctx).clusters(ALICE) for i in c.source_ids}
        assert clustered == {r.id for r in recs}
        (final,) = SummaryService(ctx).summaries(ALICE)
        assert final.content.structured["final"] is True
        assert final.source_ids == tuple(r.id for r in recs)


def test_a_failing_step_does_not_block_the_others_and_the_job_is_retried(tmp_path: Path) -> None:
    with layer_ctx(tmp_path) as ctx:
        flaky = FlakyStep(failures=1)
        pipe = Pipeline(ctx, [flaky, *default_steps(ctx)])
        recs = add_turns(ctx, ALICE, rounds(1, 11))
        ctx.store.enqueue([make_ingest_job(ALICE, [r.id for r in recs], ctx.clock.now())])
        runner = JobRunner(ctx.store, pipe.handlers(), ctx.clock)
        first = runner.run_pending()
        assert first.retried == 1 and "transient failure" in first.errors[0]
        assert len(SummaryService(ctx).summaries(ALICE)) == 1  # the other steps ran
        second = runner.run_pending(include_delayed=True)
        assert second.done == 1 and flaky.calls == 2
        assert len(SummaryService(ctx).summaries(ALICE)) == 1  # and wrote nothing twice


def test_jobs_carry_scope_and_bad_input_is_refused(tmp_path: Path) -> None:
    with layer_ctx(tmp_path) as ctx:
        job = make_ingest_job(ALICE, ["a", "b"], ctx.clock.now())
        assert (job.kind, job.tenant, job.user, job.session) == ("ingest", "acme", "alice", "s1")
        assert job.payload == {"ids": ["a", "b"]}
        with pytest.raises(ValidationError):
            make_ingest_job(ALICE, [], ctx.clock.now())
        with pytest.raises(ValidationError):
            make_session_end_job(ALICE.with_session(None), ctx.clock.now())
        with pytest.raises(ValidationError):
            Pipeline(ctx, [FlakyStep(0), FlakyStep(0)])
        pipe = Pipeline(ctx, default_steps(ctx))
        pipe.run_ingest(job)  # unknown ids (deleted or purged since): nothing to do
        assert snapshot(ctx) == []
        with pytest.raises(PipelineError):
            Pipeline(ctx, [FlakyStep(5)]).run_session_end(
                make_session_end_job(ALICE, job.created_at)
            )
