"""``build_context`` counts what it shows, and only that (issue 8 §1/§6, issue 13 §3).

The context asks the search for one candidate per 10 tokens of budget (200 at 2k) and shows
a few dozen. Counting an access on every candidate made access heat (retention, the access
score term) count records nobody saw, and wrote ~200 counters per build, whose flushes made
the searches after a build wait. Cluster hits were a job enqueued on the read path (a write
transaction per build) for every cluster offered, shown or not.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from memstrata import BudgetError, Memory, Message, Role, Scope
from memstrata.context.config import ContextConfig


def _sailing(mem: Memory, scope: Scope, n: int = 80) -> None:
    mem.add_messages(
        scope,
        [
            Message(role=Role.USER, content=f"note {i}: sailing the boat across the bay at dawn")
            for i in range(n)
        ],
    )
    mem.flush()


def _accessed(mem: Memory, scope: Scope) -> dict[str, int]:
    records = mem.list(scope.user_scope, limit=1000)  # every type
    return {r.id: r.access_count for r in records if r.access_count}


def test_unshown_candidates_are_not_counted_as_accessed(mem: Memory, alice: Scope) -> None:
    _sailing(mem, alice)
    other = Scope(alice.tenant, alice.user, session="s2")  # s1's turns are not a window
    ctx = mem.build_context(other, "sailing the boat", token_budget=300, reserve_ratio=0.0)
    shown = {it.record_id for it in ctx.items if it.record_id}
    # the budget cut candidates: 30 were asked for, fewer fit
    assert shown and len(ctx.dropped) > 0
    assert _accessed(mem, alice) == dict.fromkeys(shown, 1)
    mem.build_context(other, "sailing the boat", token_budget=300, reserve_ratio=0.0)
    assert _accessed(mem, alice) == dict.fromkeys(shown, 2)


def test_a_search_still_counts_every_hit_it_returns(mem: Memory, alice: Scope) -> None:
    _sailing(mem, alice, 20)
    hits = mem.search(alice, "sailing the boat", top_k=15)
    assert len(hits) == 15 and all(h.record.access_count == 1 for h in hits)
    assert _accessed(mem, alice) == {h.record.id: 1 for h in hits}


def test_a_refused_build_counts_nothing(mem: Memory, alice: Scope) -> None:
    _sailing(mem, alice, 20)
    with pytest.raises(BudgetError):  # the search ran; the system prompt does not fit
        mem.build_context(alice, "sailing the boat", token_budget=50, system_prompt="x " * 200)
    assert _accessed(mem, alice) == {}


def _fill(mem: Memory, scope: Scope) -> None:
    # 60 rounds: the first 40 leave the 20-round short-term window and are clustered.
    # 40 candidates at 4k tokens: fewer than the turns, so a cluster is not redundant, and
    # the budget has room for clusters (they score below every turn found).
    mem.context_config = replace(ContextConfig(), tokens_per_candidate=100)
    msgs = []
    for i in range(60):
        topic = "sailing the boat across the bay" if i % 2 else "baking sourdough bread loaves"
        msgs.append(Message(role=Role.USER, content=f"turn {i}: we talked about {topic}"))
        msgs.append(Message(role=Role.ASSISTANT, content=f"reply {i} about {topic}"))
    mem.add_messages(scope, msgs)
    mem.flush()


_OVERVIEW = "summarize what we said about sailing the boat"


def test_cluster_hits_are_counters_no_job_on_the_read_path(
    mem: Memory, alice: Scope, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(mem, alice)
    store: Any = mem.layers.ctx.store
    enqueued: list[Any] = []
    real = store.enqueue
    monkeypatch.setattr(store, "enqueue", lambda jobs: (enqueued.extend(jobs), real(jobs)))
    other = Scope(alice.tenant, alice.user, session="s2")
    ctx = mem.build_context(other, _OVERVIEW, token_budget=4000, reserve_ratio=0.0)
    shown = [it.record_id for it in ctx.items if it.layer == "mid_term" and it.record_id]
    assert shown  # an overview question at 4k tokens shows clusters
    assert enqueued == []  # counted without a job (a job is a write transaction)
    assert mem.layers.mid_term.hits(alice, shown) == dict.fromkeys(shown, 1)


def test_a_cluster_shown_promote_hits_times_is_promoted_once(mem: Memory, alice: Scope) -> None:
    _fill(mem, alice)
    other = Scope(alice.tenant, alice.user, session="s2")
    floor = mem.layers.ctx.config.promote_hits
    counts: dict[str, int] = {}
    for _ in range(floor + 2):
        ctx = mem.build_context(other, _OVERVIEW, token_budget=4000, reserve_ratio=0.0)
        for it in ctx.items:
            if it.layer == "mid_term" and it.record_id:
                counts[it.record_id] = counts.get(it.record_id, 0) + 1
        mem.flush()  # the promotion job, when one is due
    due = {cid for cid, n in counts.items() if n >= floor}
    assert due  # the same clusters answer the same question
    assert mem.layers.mid_term.hits(alice, list(counts)) == counts
    keys = [k for k in mem.layers.key.list(alice) if k.metadata.get("origin") == "auto"]
    assert sorted(k.metadata["cluster_id"] for k in keys) == sorted(due)  # once each
    for cid in due:
        cluster = mem.get(alice.user_scope, cid)
        assert cluster.content.structured["promoted_key"] in {k.id for k in keys}


def test_a_build_takes_no_write_transaction_on_sqlite(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the counter flusher (a background thread, when its buffer is due) writes."""
    import threading

    mem = Memory(f"sqlite:///{tmp_path / 'w.db'}", embedder="hashing", background=False)
    try:
        alice = Scope("acme", "alice", session="s1")
        _fill(mem, alice)
        store: Any = mem.layers.ctx.store
        writers: list[str] = []
        real = store._write

        def write() -> Any:
            writers.append(threading.current_thread().name)
            return real()

        monkeypatch.setattr(store, "_write", write)
        other = Scope(alice.tenant, alice.user, session="s2")
        for _ in range(3):
            ctx = mem.build_context(other, _OVERVIEW, token_budget=4000, reserve_ratio=0.0)
            assert any(it.layer == "mid_term" for it in ctx.items)
        assert [w for w in writers if not w.startswith("memstrata-counters")] == []
    finally:
        mem.close()
