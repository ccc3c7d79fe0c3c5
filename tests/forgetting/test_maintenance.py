"""Maintenance runs over a real Memory (SQLite and in-memory): forgetting as soft deletes with
a log entry, restore, protection, decay scores, retention purges, consolidation, dry run,
the periodic job, and bad input changing nothing."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.errors import NotFoundError, ValidationError
from memstrata.maintenance import MAINTAIN, Retention
from memstrata.records import RecordType, Source


def _old_notes(mem: Memory, s: Scope) -> tuple[str, str, str]:
    weak = mem.add(
        s,
        "the user once mentioned a blue umbrella in passing",
        importance=0.1,
        source=Source.IMPLICIT_INFERENCE,
        type=RecordType.EPISODE,
    ).id
    strong = mem.add(
        s,
        "the user is allergic to peanuts and carries an epipen",
        importance=0.95,
        source=Source.IMPLICIT_INFERENCE,
        type=RecordType.EPISODE,
    ).id
    mine = mem.add(s, "remember that my sister's birthday is in March", importance=0.1).id
    return weak, strong, mine


def test_default_pass_forgets_softly_logs_and_restores(mem: Memory, clock: FixedClock) -> None:
    s = Scope("acme", "alice")
    weak, strong, mine = _old_notes(mem, s)
    key = mem.key.set(s, "deadline: ship the report by Friday").id
    clock.advance(days=60)  # weak: 0.4*60/90 + 0.35*0.9 + 0.25 = 0.83; strong: 0.53
    report = mem.maintain(s)
    assert report.scanned == 4 and report.forgotten == 1
    assert report.downgraded == 1  # strong is cold (never used in 60 days): downgraded
    [entry] = [e for e in report.log if e.action == "forget"]
    assert entry.record_id == weak and entry.policy == "hybrid" and entry.score > 0.6
    with pytest.raises(NotFoundError):
        mem.get(s, weak)
    gone = mem.get(s, weak, include_deleted=True)
    assert gone.metadata["forgotten"]["policy"] == "hybrid"
    assert gone.metadata["forgotten"]["score"] == pytest.approx(entry.score, abs=1e-6)
    # protected: user-set key memory and the user's own note, however old and unimportant
    assert mem.get(s, key).is_active and mem.get(s, mine).is_active
    assert mem.get(s, strong).is_active
    mem.restore(s, weak)
    assert mem.get(s, weak).is_active


def test_decay_score_is_kept_current(mem: Memory, clock: FixedClock) -> None:
    s = Scope("acme", "alice")
    _, strong, _ = _old_notes(mem, s)
    clock.advance(days=90)
    mem.maintain(s, policy="time")
    assert mem.get(s, strong).decay_score == pytest.approx(0.5, abs=1e-3)
    versions = len(mem.history(s, strong))
    mem.maintain(s, policy="time")  # nothing moved: no new version
    assert len(mem.history(s, strong)) == versions


def test_dry_run_writes_nothing(mem: Memory, clock: FixedClock) -> None:
    s = Scope("acme", "alice")
    weak, strong, _ = _old_notes(mem, s)
    clock.advance(days=300)
    before = {r.id: r.version for r in mem.list(s, filters={"include_deleted": True})}
    report = mem.maintain(s, dry_run=True)
    assert report.forgotten == 2 and report.decay_updated >= 1 and report.dry_run
    after = {r.id: r.version for r in mem.list(s, filters={"include_deleted": True})}
    assert before == after


def test_hotness_downgrade_halves_importance_once(mem: Memory, clock: FixedClock) -> None:
    s = Scope("acme", "alice")
    rid = mem.add(
        s,
        "a fact nobody ever asked about again",
        importance=0.8,
        source=Source.IMPLICIT_INFERENCE,
        type=RecordType.EPISODE,
    ).id
    clock.advance(days=40)
    assert mem.maintain(s, policy="hotness").downgraded == 1
    assert mem.get(s, rid).importance == pytest.approx(0.4)
    assert mem.maintain(s, policy="hotness").downgraded == 0
    assert mem.get(s, rid).importance == pytest.approx(0.4)


def test_retention_purges_summarised_messages_for_real(mem: Memory, clock: FixedClock) -> None:
    s = Scope("acme", "alice", session="s1")
    for i in range(12):
        mem.add_message(s, "user", f"turn number {i} about gardening and tomatoes")
        mem.add_message(s, "assistant", f"reply {i} about watering schedules")
    mem.end_session(s)
    msgs = mem.list(s.user_scope, filters={"types": ["message"]}, limit=1000)
    assert len(msgs) == 24
    clock.advance(days=29)
    assert mem.maintain(s, retention=Retention.seed_002()).purged == 0
    clock.advance(days=2)
    assert mem.maintain(s).purged == 0  # by default turns are kept (recall needs them)
    report = mem.maintain(s, retention=Retention.seed_002())
    assert report.purged == 24
    assert mem.list(s.user_scope, filters={"types": ["message"], "include_deleted": True}) == []
    with pytest.raises(NotFoundError):
        mem.history(s, msgs[0].id)
    assert mem.list(s.user_scope, filters={"types": ["summary"]})  # summaries stay


def test_consolidation_merges_near_duplicates_with_provenance(
    mem: Memory, clock: FixedClock
) -> None:
    s = Scope("acme", "alice")
    a = mem.add(
        s,
        "The user likes hiking in the Alps every summer",
        dedup=False,
        source=Source.IMPLICIT_INFERENCE,
        type=RecordType.EPISODE,
    )
    clock.advance(minutes=1)  # the older one is kept
    b = mem.add(
        s,
        "The user likes hiking in the Alps every summer!",
        dedup=False,
        source=Source.IMPLICIT_INFERENCE,
        type=RecordType.EPISODE,
        source_ids=["m9"],
    )
    report = mem.maintain(s)
    assert report.merged == 1
    kept = mem.get(s, a.id)
    assert kept.metadata.get("mentions") == 2 and "m9" in kept.source_ids
    assert mem.get(s, b.id, include_deleted=True).metadata["forgotten"]["action"] == "merge"


def test_explicit_forget_and_tag_batch(mem: Memory) -> None:
    s = Scope("acme", "alice")
    r = mem.add(s, "I prefer tables over bullet lists", tags=["pref"], importance=0.5)
    [entry] = mem.forget(s, [r.id], reason="user asked")
    assert entry.reason == "user asked"
    with pytest.raises(NotFoundError):
        mem.get(s, r.id)
    mem.restore(s, r.id)
    [up] = mem.set_importance_by_tag(s, "pref", 0.95)
    assert mem.get(s, r.id).importance == 0.95 and up.version == mem.get(s, r.id).version
    with pytest.raises(NotFoundError):  # another user's id: not found, nothing forgotten
        mem.forget(Scope("acme", "bob"), [r.id])
    assert mem.get(s, r.id).is_active


def test_other_users_are_untouched(mem: Memory, clock: FixedClock) -> None:
    alice, bob = Scope("acme", "alice"), Scope("acme", "bob")
    _old_notes(mem, alice)
    bob_ids = _old_notes(mem, bob)
    clock.advance(days=200)
    mem.maintain(alice)
    assert all(mem.get(bob, i).is_active for i in bob_ids)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, s: m.maintain(s, policy="forget-everything"),
        lambda m, s: m.maintain(
            s,
            policy="capacity",
        ),
        lambda m, s: m.maintain(s, retention=Retention(messages_after_summary_days=0)),
        lambda m, s: m.maintain(s, retention=Retention(procedures_days=float("nan"))),
        lambda m, s: m.maintain(s, retention=Retention(procedures_days=-3)),
        lambda m, s: m.set_importance_by_tag(s, "x", float("nan")),
        lambda m, s: m.set_importance_by_tag(s, "", 0.5),
    ],
)
def test_bad_input_is_a_validation_error_and_changes_nothing(
    mem: Memory, clock: FixedClock, call: object
) -> None:
    s = Scope("acme", "alice")
    _old_notes(mem, s)
    clock.advance(days=400)
    before = [(r.id, r.version, r.status) for r in mem.list(s, filters={"include_deleted": True})]
    if call.__code__.co_consts and "capacity" in str(call.__code__.co_consts):  # type: ignore[attr-defined]
        from memstrata.policies.forgetting import CapacityPolicy

        with pytest.raises(ValidationError):
            mem.maintain(s, policy=CapacityPolicy(max_records=-1))
    else:
        with pytest.raises(ValidationError):
            call(mem, s)  # type: ignore[operator]
    after = [(r.id, r.version, r.status) for r in mem.list(s, filters={"include_deleted": True})]
    assert before == after


def test_periodic_job_runs_when_due_and_reschedules(
    tmp_path,
    clock: FixedClock,  # type: ignore[no-untyped-def]
    caplog: pytest.LogCaptureFixture,
) -> None:
    m = Memory(
        f"sqlite:///{tmp_path / 'j.db'}",
        embedder="hashing",
        clock=clock,
        background=False,
        maintenance_every=timedelta(hours=24),
    )
    s = Scope("acme", "alice", session="s1")
    weak, _, _ = _old_notes(m, s)
    m.add_message(s, "user", "hello there, planning a trip to Norway")
    m.end_session(s)
    [job] = [j for j in m.store.list_jobs("acme", "alice", status="pending") if j.kind == MAINTAIN]
    assert job.run_after == clock.now() + timedelta(hours=24)
    clock.advance(days=200)
    with caplog.at_level(logging.INFO, logger="memstrata.maintenance"):
        m._runner.run_pending()
    assert "forgotten" in caplog.text
    with pytest.raises(NotFoundError):
        m.get(s, weak)
    pending = [
        j for j in m.store.list_jobs("acme", "alice", status="pending") if j.kind == MAINTAIN
    ]
    assert len(pending) == 1 and pending[0].run_after == clock.now() + timedelta(hours=24)
    m.flush()  # runs the delayed job early: must not loop, and must not re-schedule
    assert not [
        j for j in m.store.list_jobs("acme", "alice", status="pending") if j.kind == MAINTAIN
    ]
    m.close()
    with pytest.raises(ValidationError):
        Memory("memory://", embedder="hashing", maintenance_every=timedelta(0))


def test_cli_maintain_dry_run_and_bad_policy(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from typer.testing import CliRunner

    from memstrata.cli.app import app

    db = f"sqlite:///{tmp_path / 'c.db'}"
    base = ["--db", db, "--tenant", "acme", "--user", "alice", "--embedder", "hashing"]
    runner = CliRunner()
    added = runner.invoke(app, [*base, "add", "a note about tea", "--json"])
    assert added.exit_code == 0, added.output
    out = runner.invoke(app, [*base, "maintain", "--dry-run", "--log", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["dry_run"] is True and data["scanned"] == 1 and data["log"] == []
    bad = runner.invoke(app, [*base, "maintain", "--policy", "nope"])
    assert bad.exit_code != 0 and "unknown forgetting policy" in bad.output


@pytest.mark.parametrize("value", [True, False])
def test_a_bool_importance_is_named_as_a_bool(value: bool) -> None:
    """Session 21: ``set_importance_by_tag(s, tag, True)`` said "got an integer out of
    range" (a bool is an int); the message names what was passed."""
    mem = Memory(embedder="hashing", background=False)
    with pytest.raises(ValidationError, match=f"got {value}$"):
        mem.set_importance_by_tag(Scope("acme", "alice"), "x", value)
