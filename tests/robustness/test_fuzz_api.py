"""Issue 7, "Bad input": hypothesis drives the whole public ``Memory`` API with valid and
hostile arguments on every store. The only exceptions allowed are ``MemstrataError``
subclasses, and a refused call must leave the store exactly as it was.

Fast by default (a few seconds per store). ``MEMSTRATA_FUZZ_EXAMPLES=5000`` runs a larger
campaign; the counts per method are logged (``-o log_cli=true --log-cli-level=INFO``).
"""

from __future__ import annotations

import io
import json
import logging
import os
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import FixedClock, Memory, MemstrataError, Scope
from memstrata.codec import record_to_dict

from .conftest import STORES, open_memory, snapshot

log = logging.getLogger(__name__)
EXAMPLES = int(os.environ.get("MEMSTRATA_FUZZ_EXAMPLES", "250"))

ALICE = Scope("acme", "alice", session="s1")
ALICE_S2 = Scope("acme", "alice", agent="bot", session="s2")
BOB = Scope("acme", "bob")


def _deep(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(depth):
        node["d"] = {}
        node = node["d"]
    return root


ZONES = st.sampled_from(
    [
        None,
        UTC,
        timezone(timedelta(hours=14)),
        timezone(timedelta(hours=-12)),
        timezone(timedelta(minutes=330)),
    ]
)
TIMES = st.one_of(
    st.datetimes(timezones=ZONES),
    st.sampled_from(
        [
            datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))),
            datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5))),
            datetime(999, 1, 1, tzinfo=UTC),
            datetime(9999, 12, 31, 23, 59),
        ]
    ),
    st.sampled_from(["2024-01-01", "2024-02-30", "yesterday", "0001-01-01T00:00:00+01:00"]),
)
JSONISH = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(),
        st.text(max_size=8),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
WILD = st.one_of(
    JSONISH,
    st.sampled_from(
        [
            10**400,
            -(10**400),
            float("nan"),
            float("inf"),
            "\ud800",
            b"\xff\xfe",
            Decimal("0.5"),
            Decimal("NaN"),
            object(),
            _deep(200),
            {1, 2},
            frozenset({"a"}),
            (1, "a"),
            [True],
            {"k": {1, 2}},
            {1: "int key"},
            "",
            "   ",
            "x" * 120_000,
        ]
    ),
    TIMES,
)
TEXT = st.one_of(
    st.text(min_size=1, max_size=40),
    st.sampled_from(
        [
            "Take 5 mg of the medication daily",
            "Take 50 mg of the medication daily",
            "我喜欢早上喝茶",
            "Alice weighs 65 kg",
        ]
    ),
)


def maybe(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly valid values (7 in 8), sometimes hostile ones."""
    return st.integers(0, 7).flatmap(lambda roll: WILD if roll == 0 else valid)


SCOPES = st.integers(0, 15).flatmap(
    lambda roll: (
        st.sampled_from([None, "acme/alice", 5, {"tenant": "acme"}])
        if roll == 0
        else st.sampled_from([ALICE, ALICE, ALICE_S2, BOB, ALICE.user_scope])
    )
)
TAGS = maybe(st.lists(st.text(min_size=1, max_size=6), max_size=3))
META = maybe(st.dictionaries(st.text(max_size=6), JSONISH, max_size=3))
FILTER_KEYS = [
    "types",
    "tags",
    "tags_all",
    "observed_after",
    "observed_before",
    "valid_at",
    "min_importance",
    "sources",
    "metadata",
    "include_deleted",
    "include_superseded",
    "ids",
    "bogus",
]
FILTERS = st.one_of(
    st.none(),
    WILD,
    st.dictionaries(
        st.sampled_from(FILTER_KEYS),
        st.one_of(
            WILD,
            st.sampled_from(
                [["note"], "fact", ["x"], 0.3, True, {"k": 1}, {"k": {"gt": 1}}, {"k": {"bad": 1}}]
            ),
        ),
        max_size=3,
    ),
)


class Bound:
    """One drawn call: ``fn(memory, *args)``, shown as ``name(args)`` when it fails."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], name: str = "") -> None:
        self.fn, self.args, self.name = fn, args, name

    def __call__(self, mem: Memory) -> Any:
        return self.fn(mem, *self.args)

    def __repr__(self) -> str:
        return self.name + "(" + ", ".join(repr(a)[:200] for a in self.args) + ")"


# Drawn by composites, not st.builds or .map of a lambda: hypothesis prints those by the
# lambda's source (a call of ``remember`` read ``call=(name, call)``), a composite's value
# by its repr (``call=remember(...)``).
@st.composite
def _bound(draw: st.DrawFn, fn: Callable[..., Any], strategies: tuple[Any, ...]) -> Bound:
    return Bound(fn, tuple(draw(strategy) for strategy in strategies))


@st.composite
def _named(draw: st.DrawFn, name: str, strategy: st.SearchStrategy[Bound]) -> Bound:
    call = draw(strategy)
    return Bound(call.fn, call.args, name)


def bound(fn: Callable[..., Any], *strategies: st.SearchStrategy[Any]) -> st.SearchStrategy[Bound]:
    return _bound(fn, strategies)


def named(options: dict[str, st.SearchStrategy[Bound]]) -> st.SearchStrategy[Bound]:
    """One of ``options``' calls, each named by its key."""
    return st.one_of(*(_named(name, strategy) for name, strategy in options.items()))


class Ids:
    """Record ids seen so far, so calls hit real records as well as bogus ids."""

    def __init__(self) -> None:
        self.known: list[str] = []

    def strategy(self) -> st.SearchStrategy[Any]:
        return st.one_of(
            st.integers(min_value=0, max_value=10**6).map(
                lambda i: self.known[i % len(self.known)] if self.known else "none"
            ),
            WILD,
        )


def _import_text(rec: dict[str, Any], field: str, value: Any) -> str:
    d = json.loads(json.dumps(rec))
    d["id"] = f"imp{abs(hash((field, repr(value)))) % 10**9}"
    target = d["content"] if field.startswith("content.") else d
    target[field.split(".", 1)[-1]] = value
    head = {
        "format": "memstrata.export",
        "version": 1,
        "embedding_model": "m",
        "dims": 1,
        "exported_at": "2026-01-01T00:00:00+00:00",
        "count": 1,
    }
    try:
        line = json.dumps({"record": d, "embedding": None})
    except (TypeError, ValueError):
        line = "{not json"
    return json.dumps(head) + "\n" + line + "\n"


def calls(ids: Ids, sample: dict[str, Any]) -> st.SearchStrategy[Bound]:
    rid = ids.strategy()
    version = maybe(st.integers(min_value=1, max_value=4))
    unit = maybe(st.floats(min_value=0, max_value=1))
    options: dict[str, st.SearchStrategy[Bound]] = {
        "add": bound(
            lambda m, s, c, ty, imp, tags, meta, obs, dd: m.add(
                s, c, type=ty, importance=imp, tags=tags, metadata=meta, observed_at=obs, dedup=dd
            ),
            SCOPES,
            maybe(TEXT),
            maybe(st.sampled_from(["note", "fact", "episode"])),
            st.one_of(st.none(), unit),
            TAGS,
            META,
            st.one_of(st.none(), TIMES),
            maybe(st.booleans()),
        ),
        "add_message": bound(
            lambda m, s, r, c, obs, meta: m.add_message(s, r, c, observed_at=obs, metadata=meta),
            SCOPES,
            maybe(st.sampled_from(["user", "assistant", "tool"])),
            maybe(TEXT),
            st.one_of(st.none(), TIMES),
            META,
        ),
        "add_messages": bound(
            lambda m, s, msgs: m.add_messages(s, msgs),
            SCOPES,
            maybe(
                st.lists(
                    st.one_of(
                        st.fixed_dictionaries({"role": st.just("user"), "content": maybe(TEXT)}),
                        WILD,
                    ),
                    max_size=3,
                )
            ),
        ),
        "update": bound(
            lambda m, s, i, v, c, imp, tags, meta, src: m.update(
                s,
                i,
                expected_version=v,
                content=c,
                importance=imp,
                tags=tags,
                metadata=meta,
                source=src,
            ),
            SCOPES,
            rid,
            version,
            st.one_of(st.none(), maybe(TEXT)),
            st.one_of(st.none(), unit),
            st.one_of(st.none(), TAGS),
            st.one_of(st.none(), META),
            st.one_of(st.none(), maybe(st.just("corrected_memory"))),
        ),
        "get": bound(
            lambda m, s, i, d: m.get(s, i, include_deleted=d), SCOPES, rid, maybe(st.booleans())
        ),
        "history": bound(lambda m, s, i: m.history(s, i), SCOPES, rid),
        "list": bound(
            lambda m, s, f, lim, off: m.list(s, filters=f, limit=lim, offset=off),
            SCOPES,
            FILTERS,
            maybe(st.integers(1, 50)),
            maybe(st.integers(0, 5)),
        ),
        "search": bound(
            lambda m, s, q, k, layers, f, mode, ex: m.search(
                s, q, k, layers=layers, filters=f, mode=mode, explain=ex
            ),
            SCOPES,
            maybe(TEXT),
            maybe(st.integers(1, 20)),
            st.one_of(
                st.none(), maybe(st.sampled_from(["messages", "summaries", ["facts", "episodes"]]))
            ),
            FILTERS,
            st.one_of(st.none(), maybe(st.sampled_from(["hybrid", "lexical", "dense"]))),
            maybe(st.booleans()),
        ),
        "delete": bound(lambda m, s, i: m.delete(s, i), SCOPES, rid),
        "restore": bound(lambda m, s, i: m.restore(s, i), SCOPES, rid),
        "purge": bound(
            lambda m, s, ids_: m.purge(s, ids_),
            SCOPES,
            maybe(st.lists(rid, min_size=1, max_size=2)),
        ),
        "build_context": bound(
            lambda m, s, q, b, sp, rr: m.build_context(s, q, b, sp, reserve_ratio=rr),
            SCOPES,
            st.one_of(st.none(), maybe(TEXT)),
            maybe(st.integers(50, 20_000)),
            st.one_of(st.none(), maybe(TEXT)),
            st.one_of(st.none(), maybe(st.floats(0, 0.9))),
        ),
        "export_records": bound(
            lambda m, s, emb, dl: m.export_records(
                s, io.StringIO(), include_embeddings=emb, include_deleted=dl
            ),
            SCOPES,
            maybe(st.booleans()),
            maybe(st.booleans()),
        ),
        "import_records": bound(
            lambda m, f, v, into: m.import_records(
                io.StringIO(_import_text(sample, f, v)), into=into
            ),
            st.sampled_from(
                [
                    "content.raw",
                    "content.summary",
                    "content.structured",
                    "content_hash",
                    "access",
                    "metadata",
                    "tags",
                    "importance",
                    "observed_at",
                    "tenant",
                    "type",
                    "relations",
                    "source_ids",
                    "version",
                    "id",
                ]
            ),
            WILD,
            st.one_of(st.none(), st.none(), SCOPES),
        ),
        "remember": bound(
            lambda m, s, c, tags, meta: m.remember(s, c, tags=tags, metadata=meta),
            SCOPES,
            maybe(TEXT),
            TAGS,
            META,
        ),
        "stats": bound(lambda m, s: m.stats(s), SCOPES),
        "end_session": bound(lambda m, s: m.end_session(s), SCOPES),
        "flush": bound(lambda m, s: m.flush(s), st.one_of(st.none(), SCOPES)),
    }
    return named(options)


def drive(mem: Memory, ids: Ids, strategy: st.SearchStrategy[Bound]) -> Counter[tuple[str, str]]:
    """Run ``EXAMPLES`` drawn calls: each succeeds or raises a ``MemstrataError`` that left
    both users' records and jobs as they were; returns the outcomes per method. A record a
    call returns (or a result's ``record``) joins the ids later calls draw from."""
    outcomes: Counter[tuple[str, str]] = Counter()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(call=strategy)
    def run(call: Bound) -> None:
        name, fn = call.name, call
        before = [snapshot(mem, s, history=False) for s in (ALICE, BOB)]
        try:
            result = fn(mem)
        except MemstrataError as exc:
            outcomes[name, type(exc).__name__] += 1
            after = [snapshot(mem, s, history=False) for s in (ALICE, BOB)]
            assert after == before, f"{name} raised {exc!r} but changed the store"
            return
        outcomes[name, "ok"] += 1
        record_id = getattr(getattr(result, "record", result), "id", None)
        if isinstance(record_id, str) and len(ids.known) < 200:
            ids.known.append(record_id)

    run()
    return outcomes


@pytest.mark.parametrize("kind", STORES)
def test_fuzz_the_public_api(kind: str, tmp_path: Path) -> None:
    mem = open_memory(kind, tmp_path, FixedClock(datetime(2026, 1, 1, 12, tzinfo=UTC)))
    ids = Ids()
    seeded = mem.add(ALICE, "Alice prefers window seats", importance=0.5, tags=["travel"])
    ids.known.append(seeded.id)
    ids.known.append(mem.add_message(ALICE, "user", "hello there").id)
    sample = record_to_dict(seeded)
    try:
        outcomes = drive(mem, ids, calls(ids, sample))
    finally:
        mem.close()
    per_method = Counter(name for name, _ in outcomes.elements())
    log.info(
        "fuzz on %s: %d calls; per method %s; outcomes %s",
        kind,
        sum(per_method.values()),
        dict(sorted(per_method.items())),
        dict(sorted(outcomes.items())),
    )
    report = os.environ.get("MEMSTRATA_FUZZ_REPORT")
    if report:
        with open(report, "a", encoding="utf-8") as fp:
            fp.write(
                json.dumps(
                    {
                        "store": kind,
                        "examples": EXAMPLES,
                        "per_method": per_method,
                        "outcomes": {f"{n}:{o}": c for (n, o), c in outcomes.items()},
                    }
                )
                + "\n"
            )
    assert len(per_method) >= 15, f"too few methods exercised: {sorted(per_method)}"
