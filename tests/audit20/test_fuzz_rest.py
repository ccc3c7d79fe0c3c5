"""Hypothesis drives the public calls that ``tests/robustness/test_fuzz_api.py`` and
``test_fuzz_services.py`` leave out — ``set_access``, ``delete``/``restore``/``purge`` with
their ``actor``, ``flush``/``compact`` with their timeouts, ``remember``, ``export_chunks``,
``key.promote``, task episodes, conversation episodes and procedure lessons — with valid
and hostile arguments on SQLite and ``memory://``. As there, the only exceptions allowed
are ``MemstrataError``s that leave both users' records and jobs as they were
(``MEMSTRATA_FUZZ_EXAMPLES`` sets the number of calls).

Before session 20's audit its runs found: a refused actor after ``set_access``, ``delete``,
``restore`` or ``purge`` had written (a purge destroyed the records first), a list or a
lone surrogate as ``set_access``'s id (TypeError, UnicodeEncodeError), ``flush(timeout=
"x")`` (TypeError), and ``AttributeError``s from the services given a string, ``None`` or a
mapping where a record, a ``TaskOutcome`` or a ``Reflection`` belongs. A long run
(``MEMSTRATA_FUZZ_EXAMPLES=1500``) found conversation episodes of earlier episodes whose
``source_ids`` doubled with every generation (``test_provenance_growth.py``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from memstrata import FixedClock, Memory
from memstrata.llm.models import Reflection, TaskOutcome
from robustness.conftest import STORES, open_memory
from robustness.test_fuzz_api import (
    ALICE,
    BOB,
    META,
    SCOPES,
    TAGS,
    TEXT,
    WILD,
    Bound,
    Ids,
    bound,
    drive,
    maybe,
    named,
)

ACTORS = maybe(st.sampled_from(["library", "ops:alice", "a\x00b", "", 5]))
TASKS = maybe(
    st.builds(
        TaskOutcome,
        goal=TEXT,
        steps=st.lists(TEXT, max_size=3),
        success=st.booleans(),
        outcome=st.text(max_size=10),
    )
)
REFLECTIONS = maybe(
    st.builds(
        Reflection,
        summary=TEXT,
        lessons=st.lists(TEXT, max_size=2),
        importance=st.floats(0, 1),
    )
)


def _records(mem: Memory, ids: Ids) -> list[Any]:
    """The records behind the known ids (alice's), for calls that take records."""
    return [r for r in mem.list(ALICE.user_scope, limit=20) if r.id in ids.known]


def calls(ids: Ids) -> st.SearchStrategy[Bound]:
    rid = ids.strategy()
    options: dict[str, st.SearchStrategy[Any]] = {
        "add": bound(lambda m, s, c, t: m.add(s, c, tags=t), SCOPES, TEXT, TAGS),
        "set_access": bound(
            lambda m, s, i, v, u, r, a: m.set_access(
                s, i, visibility=v, allowed_users=u, allowed_roles=r, actor=a
            ),
            SCOPES,
            rid,
            maybe(st.sampled_from([None, "private", "shared", "public"])),
            maybe(st.one_of(st.none(), st.lists(st.sampled_from(["bob", "carol"]), max_size=2))),
            maybe(st.one_of(st.none(), st.lists(st.sampled_from(["viewer", "admin"]), max_size=2))),
            ACTORS,
        ),
        "delete": bound(lambda m, s, i, a: m.delete(s, i, actor=a), SCOPES, rid, ACTORS),
        "restore": bound(lambda m, s, i, a: m.restore(s, i, actor=a), SCOPES, rid, ACTORS),
        "purge": bound(
            lambda m, s, i, a, c: m.purge(s, [i], actor=a, compact=c),
            SCOPES,
            rid,
            ACTORS,
            maybe(st.just(False)),
        ),
        "flush": bound(
            lambda m, s, t: m.flush(s, timeout=t),
            SCOPES,
            maybe(st.one_of(st.none(), st.floats(0, 5))),
        ),
        "compact": bound(lambda m, t: m.compact(lock_timeout=t), maybe(st.floats(0, 30))),
        "remember": bound(
            lambda m, s, c, t, md: m.remember(s, c, tags=t, metadata=md),
            SCOPES,
            maybe(TEXT),
            TAGS,
            META,
        ),
        "export_chunks": bound(
            lambda m, s, e, d: sum(
                len(c) for c in m.export_chunks(s, include_embeddings=e, include_deleted=d)
            ),
            SCOPES,
            maybe(st.booleans()),
            maybe(st.booleans()),
        ),
        "key.promote": bound(
            lambda m, s, i: m.key.promote(s, next(iter(_records(m, ids)), i)), SCOPES, WILD
        ),
        "episodes.record_task": bound(
            lambda m, s, t, r: m.episodes.record_task(s, t, r), SCOPES, TASKS, REFLECTIONS
        ),
        "episodes.record_conversation": bound(
            lambda m, s, pick, tr: m.episodes.record_conversation(
                s, _records(m, ids) if pick else [pick], trigger=tr
            ),
            SCOPES,
            maybe(st.just(True)),
            maybe(st.just("session_end")),
        ),
        "procedures.learn": bound(
            lambda m, s, t, r, sg: m.procedures.learn(s, t, r, strategy=sg),
            SCOPES,
            TASKS,
            REFLECTIONS,
            maybe(st.just("sequential")),
        ),
        "procedures.store_lessons": bound(
            lambda m, s, t, r, other: m.procedures.store_lessons(
                s, m.procedures.lessons(BOB if other else ALICE, t, r) if other else [(t, r)]
            ),
            SCOPES,
            TASKS,
            REFLECTIONS,
            st.booleans(),
        ),
    }
    return named(options)


@pytest.mark.parametrize("kind", STORES)
def test_fuzz_the_calls_the_other_fuzzers_leave_out(kind: str, tmp_path: Path) -> None:
    mem = open_memory(kind, tmp_path, FixedClock(datetime(2026, 1, 1, 12, tzinfo=UTC)))
    ids = Ids()
    ids.known.append(mem.add(ALICE, "Alice prefers window seats", tags=["travel"]).id)
    ids.known.append(mem.add_message(ALICE, "user", "hello there").id)
    try:
        outcomes = drive(mem, ids, calls(ids))
    finally:
        mem.close()
    methods = {name for name, _ in outcomes}
    assert len(methods) >= 12, f"too few methods exercised: {sorted(methods)}"
    assert any(o == "ok" for _, o in outcomes) and any(o != "ok" for _, o in outcomes)
