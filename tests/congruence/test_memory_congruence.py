"""Congruence through ``Memory``: hybrid search and built contexts agree with SQLite.

The same conversation, notes, updates and deletes go into a ``Memory`` on SQLite and on
PostgreSQL (ids made deterministic), background jobs run, and then every hybrid, lexical
and dense search returns the same ids in the same order and every context is the same text.
"""

from __future__ import annotations

import itertools
import random
import uuid
from pathlib import Path

import pytest

from memstrata import FixedClock, Memory, Scope
from servers import PgServer

from .test_store_congruence import WORDS

SCOPES = [
    Scope("acme", "alice", session="s1"),
    Scope("acme", "bob", session="s1"),
    Scope("umbrella", "alice", session="s9"),
]


def _run(
    url: str,
    seed: int,
    clock: FixedClock,
    monkeypatch: pytest.MonkeyPatch,
    buffer: str | None = None,
) -> dict[str, object]:
    counter = itertools.count()
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=next(counter) + (seed << 64)))
    rng = random.Random(seed)
    seen: dict[str, object] = {}
    with Memory(url, embedder="hashing", clock=clock, background=False, buffer=buffer) as mem:
        notes: list[tuple[Scope, str]] = []
        for turn in range(60):
            scope = rng.choice(SCOPES)
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 10)))
            if rng.random() < 0.6:
                mem.add_message(scope, rng.choice(["user", "assistant"]), text)
            elif rng.random() < 0.7 or not notes:
                rec = mem.add(scope, text + f" n{turn}")
                notes.append((scope, rec.id))
            else:
                owner, rid = rng.choice(notes)
                cur = mem.get(owner, rid)
                if rng.random() < 0.5:
                    mem.update(owner, rid, expected_version=cur.version, content=text)
                else:
                    mem.delete(owner, rid)
                    notes.remove((owner, rid))
        for scope in SCOPES:
            mem.flush(scope)
        for scope in SCOPES:
            for n in range(6):
                query = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
                for mode in ("hybrid", "lexical", "dense"):
                    seen[f"{scope} {n} {mode}"] = [
                        (h.id, round(h.score, 9)) for h in mem.search(scope, query, 10, mode=mode)
                    ]
                seen[f"{scope} {n} context"] = mem.build_context(scope, query, 2000).text
            seen[f"{scope} list"] = [
                (r.id, r.version, r.status.value, r.text) for r in mem.list(scope, limit=1000)
            ]
    return seen


@pytest.mark.parametrize("redis", [False, True], ids=["postgresql", "postgresql+redis"])
@pytest.mark.parametrize("seed", [11, 12])
def test_memory_on_postgresql_answers_like_sqlite(
    seed: int,
    redis: bool,
    tmp_path: Path,
    pg_server: PgServer,
    clock: FixedClock,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    want = _run(f"sqlite:///{tmp_path / 'ref.db'}", seed, clock, monkeypatch)
    schema = f"cong_{seed}_{random.getrandbits(40):x}"
    buffer = request.getfixturevalue("redis_buffer_url") if redis else None
    got = _run(pg_server.url(schema), seed, clock, monkeypatch, buffer)
    pg_server.drop(schema)
    assert want.keys() == got.keys()
    differ = [k for k in want if want[k] != got[k]]
    assert not differ, (
        f"{len(differ)} differ, first {differ[0]}: {want[differ[0]]!r} vs {got[differ[0]]!r}"
    )
    assert sum(bool(v) for k, v in want.items() if k.endswith("hybrid")) > 5
