"""The layer services (``mem.facts``, ``mem.key``, ``mem.tasks``, ``mem.episodes``,
``mem.procedures``, ``mem.knowledge``) and the Memory methods ``test_fuzz_api`` leaves out
(``forget``, ``maintain``, ``set_importance_by_tag``), driven by hypothesis with valid and
hostile arguments. As there: the only exceptions allowed are ``MemstrataError`` subclasses,
and a refused call leaves the store as it was.

Found by this test and fixed: 42 distinct raw errors (by method, exception and line:
``TypeError``, ``AttributeError``, ``OverflowError``, ``UnicodeEncodeError``) from calls
given ``None``, a dict or a string for a scope, a list for an id, a date for a limit, a
400-digit number, a lone surrogate; a refusal that had written (an id given twice to
``forget``); and calls that did the wrong thing without an error
(``test_bad_input_services``)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import strategies as st

from memstrata import FixedClock
from memstrata.llm.models import ExtractedFact

from .conftest import STORES, open_memory
from .test_fuzz_api import (
    ALICE,
    EXAMPLES,
    SCOPES,
    TEXT,
    TIMES,
    WILD,
    Bound,
    Ids,
    bound,
    drive,
    maybe,
    named,
)

FACT = st.builds(
    ExtractedFact,
    category=st.sampled_from(["identity", "preference"]),
    key=st.sampled_from(["location", "employer", "likes_tea"]),
    value=st.sampled_from(["Paris", "Lyon", "Acme", "tea", "巷子里火锅"]),
    confidence=st.floats(0, 1),
    replaces=st.sampled_from(["", "Paris", "Acme"]),
)
KEYS = maybe(st.sampled_from(["location", "employer", "likes_tea", "name"]))
UNIT = maybe(st.floats(0, 1))
IDS_ARG = st.one_of(WILD, st.lists(WILD, max_size=2))


def calls(ids: Ids) -> st.SearchStrategy[Bound]:
    rid = ids.strategy()
    id_list = maybe(st.lists(rid, min_size=1, max_size=2))
    options: dict[str, st.SearchStrategy[Bound]] = {
        "forget": bound(lambda m, s, i, r: m.forget(s, i, reason=r), SCOPES, id_list, maybe(TEXT)),
        "maintain": bound(
            lambda m, s, p, d: m.maintain(s, policy=p, dry_run=d),
            SCOPES,
            maybe(st.sampled_from(["default", "decay", "capacity"])),
            maybe(st.booleans()),
        ),
        "set_importance_by_tag": bound(
            lambda m, s, t, i: m.set_importance_by_tag(s, t, i), SCOPES, maybe(TEXT), UNIT
        ),
        "facts.upsert": bound(
            lambda m, s, f, src, obs: m.facts.upsert(s, f, src, observed_at=obs),
            SCOPES,
            maybe(FACT),
            st.one_of(st.just(()), id_list, IDS_ARG),
            st.one_of(st.none(), TIMES),
        ),
        "facts.get": bound(lambda m, s, k: m.facts.get(s, k), SCOPES, KEYS),
        "facts.history": bound(lambda m, s, k: m.facts.history(s, k), SCOPES, KEYS),
        "facts.all": bound(lambda m, s, c: m.facts.all(s, min_confidence=c), SCOPES, UNIT),
        "facts.relevant": bound(
            lambda m, s, q, lim: m.facts.relevant(s, q, limit=lim),
            SCOPES,
            st.one_of(st.none(), maybe(TEXT)),
            st.one_of(st.none(), maybe(st.integers(1, 30))),
        ),
        "key.set": bound(
            lambda m, s, t, p: m.key.set(s, t, p),
            SCOPES,
            maybe(TEXT),
            maybe(st.integers(0, 10)),
        ),
        "key.get": bound(lambda m, s, i: m.key.get(s, i), SCOPES, rid),
        "key.edit": bound(
            lambda m, s, i, v, t, p: m.key.edit(s, i, expected_version=v, text=t, priority=p),
            SCOPES,
            rid,
            maybe(st.integers(1, 3)),
            st.one_of(st.none(), maybe(TEXT)),
            st.one_of(st.none(), maybe(st.integers(0, 10))),
        ),
        "key.remove": bound(lambda m, s, i: m.key.remove(s, i), SCOPES, rid),
        "key.list": bound(lambda m, s: m.key.list(s), SCOPES),
        "tasks.start": bound(
            lambda m, s, g, steps: m.tasks.start(s, g, steps),
            SCOPES,
            maybe(TEXT),
            maybe(st.lists(TEXT, max_size=3)),
        ),
        "tasks.update_step": bound(
            lambda m, s, i, st_: m.tasks.update_step(s, i, st_),
            SCOPES,
            maybe(st.integers(0, 3)),
            maybe(st.sampled_from(["pending", "in_progress", "completed", "failed"])),
        ),
        "tasks.add_step": bound(lambda m, s, d: m.tasks.add_step(s, d), SCOPES, maybe(TEXT)),
        "tasks.note": bound(lambda m, s, t: m.tasks.note(s, t), SCOPES, maybe(TEXT)),
        "tasks.next_iteration": bound(lambda m, s: m.tasks.next_iteration(s), SCOPES),
        "tasks.current": bound(lambda m, s: m.tasks.current(s), SCOPES),
        "episodes.recall": bound(
            lambda m, s, q, k: m.episodes.recall(s, q, k),
            SCOPES,
            maybe(TEXT),
            st.one_of(st.none(), maybe(st.integers(1, 10))),
        ),
        "episodes.record_feedback": bound(
            lambda m, s, t, src: m.episodes.record_feedback(s, t, source_ids=src),
            SCOPES,
            maybe(TEXT),
            st.one_of(st.just(()), id_list, IDS_ARG),
        ),
        "procedures.suggest": bound(
            lambda m, s, q: m.procedures.suggest(s, q), SCOPES, maybe(TEXT)
        ),
        "procedures.warnings": bound(
            lambda m, s, t: m.procedures.warnings(s, t), SCOPES, maybe(TEXT)
        ),
        "knowledge.ingest": bound(
            lambda m, s, t, q, ti, imp: m.knowledge.ingest(s, t, q, ti, importance=imp),
            SCOPES,
            maybe(TEXT),
            st.one_of(st.none(), maybe(TEXT)),
            st.one_of(st.none(), maybe(TEXT)),
            maybe(st.floats(0, 1)),
        ),
    }
    return named(options)


@pytest.mark.parametrize("kind", STORES)
def test_fuzz_the_layer_services(kind: str, tmp_path: Path) -> None:
    mem = open_memory(kind, tmp_path, FixedClock(datetime(2026, 1, 1, 12, tzinfo=UTC)))
    ids = Ids()
    ids.known.append(mem.add_message(ALICE, "user", "I live in Paris and work at Acme.").id)
    ids.known.append(mem.key.set(ALICE, "Alice is allergic to peanuts").id)
    try:
        outcomes = drive(mem, ids, calls(ids))
    finally:
        mem.close()
    assert sum(n for (_, how), n in outcomes.items() if how == "ok") > EXAMPLES // 10
