"""A caller's reads of every layer hold nothing the owner did not share: bob's turns (and the
summaries, clusters, facts and episodes derived from them), key memory, a document, a task
and a failure pattern stay out of carol's context, searches, lists, layer services, export
and stats, while the one note bob shared is there. A guard over every store (caller27's
audit found no leak here; the deleted-record and counting defects have their own tests)."""

from __future__ import annotations

import io

from memstrata import Memory, Scope
from memstrata.llm.models import ExtractedFact

BOB = Scope("acme", "bob")
SECRET = "kumquat"
QUERY = f"ferry {SECRET} secretword"


def _bob(mem: Memory) -> str:
    s1 = BOB.with_session("s1")
    for i in range(10):
        mem.add_message(s1, "user", f"my private secretword{i} is {SECRET}{i} by ferry")
        mem.add_message(s1, "assistant", f"noted {SECRET}{i} ferry")
    mem.key.set(BOB, f"always mention {SECRET} ferry", 2)
    fact = ExtractedFact(category="home", key="city", value=f"{SECRET} ferry", confidence=0.9)
    mem.facts.upsert(BOB, fact)
    mem.knowledge.ingest(BOB, f"a {SECRET} ferry document")
    mem.episodes.record_feedback(BOB, f"{SECRET} ferry feedback")
    mem.procedures.add_failure_pattern(BOB, f"{SECRET} ferry", ["ferry"], f"{SECRET} fix")
    mem.tasks.start(BOB.with_session("s2"), f"{SECRET} ferry goal", [f"{SECRET} step"])
    mem.end_session(s1)
    mem.flush()
    note = mem.add(BOB, "the shared ferry note")
    mem.set_access(BOB, note.id, visibility="shared", allowed_users=["carol"])
    return note.id


def test_a_caller_reads_nothing_derived_from_unshared_records(mem: Memory) -> None:
    note = _bob(mem)
    kinds = {r.type.value for r in mem.list(BOB, limit=1000)}
    assert {"summary", "cluster", "fact", "episode", "key", "task"} <= kinds  # all made
    for scope in (BOB, BOB.with_session("s1"), BOB.with_session("s2")):
        carol = scope.as_caller("carol")
        built = mem.build_context(carol, QUERY, 8000)
        shown = built.text.replace(QUERY, "")
        assert "the shared ferry note" in shown and SECRET not in shown, shown
        assert [h.id for h in mem.search(carol.user_scope, QUERY, 50)] == [note]
        assert [r.id for r in mem.list(carol.user_scope, limit=1000)] == [note]
        assert mem.list(carol, limit=1000) == ([] if scope.session else [mem.get(carol, note)])
        buf = io.StringIO()
        mem.export_records(carol, buf)
        reads = [
            buf.getvalue(),
            mem.key.list(carol),
            mem.facts.all(carol),
            mem.facts.get(carol, "city"),
            mem.facts.history(carol, "city"),
            mem.episodes.recall(carol, "ferry"),
            mem.procedures.warnings(carol, "ferry"),
            mem.procedures.suggest(carol, "ferry"),
            mem.layers.summaries.summaries(carol),
            mem.layers.mid_term.clusters(carol),
            mem.stats(carol),
        ]
        if scope.session:
            reads += [mem.tasks.current(carol), mem.layers.short_term.window(carol)]
        for read in reads:
            assert SECRET not in str(read), read
        assert mem.stats(carol.user_scope)["by_type"] == {"note": 1}
