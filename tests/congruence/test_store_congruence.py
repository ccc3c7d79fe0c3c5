"""Congruence: one random workload on every backend gives what SQLite, the reference, gives.

The same writes (inserts, content and vector updates, deletes, restores, purges, counters)
by several users go to each store; afterwards every search must return the same ids in the
same order with the same scores (lexical BM25 and exact dense), and every record the same
history. PostgreSQL must agree bit for bit. The in-memory store ranks lexical hits with
``bm25s`` (another BM25 variant), so it is held to the dense, history and listing parts.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from memstrata.filters import Filters
from memstrata.records import RecordStatus
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize
from memstrata.store import RecordWrite, Store
from store.conftest import DIMS, T0, Maker, make_store, unit

USERS = [Scope("t1", "u1"), Scope("t1", "u2"), Scope("t2", "u1")]
WORDS = (
    "tea coffee river stone apple lisbon paris moved work painting guitar dog cat "
    "我 喜欢 喝茶 北京 上海 搬家 工作 东京・大阪 アイ・ラブ foo_bar e-mail café naïve "
    "running runs ran 2024 12"
).split()
SEEDS = (1, 2, 3)


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9)))


def _workload(store: Store, seed: int) -> list[str]:
    """Apply the seed's workload to ``store``; return every id ever written."""
    rng = random.Random(seed)
    vecs = np.random.default_rng(seed)
    maker = Maker(rng=np.random.default_rng(seed))
    live: dict[str, RecordWrite] = {}
    written: list[str] = []
    for step in range(160):
        scope = rng.choice(USERS)
        roll = rng.random()
        mine = [
            w
            for w in live.values()
            if (w.record.tenant, w.record.user) == (scope.tenant, scope.user)
        ]
        if roll < 0.55 or not mine:
            batch = []
            for _ in range(rng.randint(1, 4)):
                r = maker.record(
                    _text(rng),
                    tenant=scope.tenant,
                    user=scope.user,
                    observed_at=T0 + timedelta(minutes=rng.randint(0, 50)),
                )
                batch.append(RecordWrite(r, unit(vecs, DIMS), tuple(tokenize(r.text))))
            store.insert(batch)
            for w in batch:
                live[w.record.id] = w
                written.append(w.record.id)
        elif roll < 0.75:
            w = rng.choice(mine)
            cur = store.get(scope, w.record.id, include_deleted=True)
            text = _text(rng)
            new = replace(
                cur,
                content=replace(cur.content, raw=text),
                version=cur.version + 1,
                updated_at=T0 + timedelta(hours=step),
            )
            vector = unit(vecs, DIMS) if rng.random() < 0.5 else None
            nw = RecordWrite(new, vector, tuple(tokenize(text)))
            store.replace(scope, nw, expected_version=cur.version)
            live[new.id] = nw
        elif roll < 0.87:
            w = rng.choice(mine)
            status = rng.choice([RecordStatus.DELETED, RecordStatus.ACTIVE])
            store.set_status(scope, [w.record.id], status, T0 + timedelta(hours=step))
        elif roll < 0.93:
            store.touch(
                scope,
                [w.record.id for w in rng.sample(mine, min(3, len(mine)))],
                T0 + timedelta(hours=step),
            )
        else:
            w = rng.choice(mine)
            store.purge(scope, [w.record.id])
            del live[w.record.id]
    return written


def _observe(store: Store, ids: list[str], seed: int, *, lexical: bool) -> dict[str, object]:
    rng = random.Random(seed * 7919)
    probe = np.random.default_rng(seed * 31)
    seen: dict[str, object] = {}
    every = Filters(include_deleted=True, include_superseded=True)
    for scope in USERS:
        for n in range(12):
            query = _text(rng)
            vector = unit(probe, DIMS)
            for name, flt in (("default", Filters()), ("every", every)):
                if lexical:
                    seen[f"lex {scope} {n} {name}"] = [
                        (c.id, c.score)
                        for c in store.lexical_search(scope, tokenize(query), 10, flt)
                    ]
                seen[f"vec {scope} {n} {name}"] = [
                    (c.id, c.score) for c in store.vector_search(scope, vector, 10, flt)
                ]
        seen[f"list {scope}"] = [r.id for r in store.list(scope, every, limit=1000)]
        for rid in ids:
            try:
                seen[f"history {scope} {rid}"] = store.history(scope, rid)
            except Exception as exc:  # NotFoundError for foreign and purged ids, everywhere
                seen[f"history {scope} {rid}"] = type(exc).__name__
    return seen


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", ["postgresql", "postgresql+redis", "memory"])
def test_a_random_workload_gives_what_sqlite_gives(kind: str, seed: int, tmp_path: Path) -> None:
    reference = make_store("sqlite-file", tmp_path)
    other = make_store(kind, tmp_path / "other")
    try:
        ids = _workload(reference, seed)
        assert _workload(other, seed) == ids
        lexical = kind != "memory"
        want = _observe(reference, ids, seed, lexical=lexical)
        got = _observe(other, ids, seed, lexical=lexical)
        assert want.keys() == got.keys()
        differ = [k for k in want if want[k] != got[k]]
        assert not differ, (
            f"{len(differ)} observations differ, first {differ[0]}: "
            f"sqlite {want[differ[0]]} vs {kind} {got[differ[0]]}"
        )
        hits = sum(bool(v) for k, v in want.items() if k.startswith("lex"))
        assert not lexical or hits > 50  # the workload really exercises BM25
    finally:
        reference.close()
        other.close()
