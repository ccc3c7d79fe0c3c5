"""The scale bench's bulk loader (1M records) writes exactly what ``add_messages`` writes:
the same records, index entries, vectors, queued jobs and cache entries, many users per
transaction instead of one call per batch."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata import Memory, Message, Role, Scope
from memstrata.bench import scale
from memstrata.bench.synth import synth_messages, synth_queries
from memstrata.clock import FixedClock
from memstrata.filters import Filters

USERS = 4
_VOLATILE = {"id", "created_at", "updated_at"}


def _batches() -> list[tuple[Scope, list[Message]]]:
    out: list[tuple[Scope, list[Message]]] = []
    for batch in scale._batches(synth_messages(240, USERS, 5), 25):
        msgs = [
            Message(role=Role(m.role), content=m.content, observed_at=m.observed_at) for m in batch
        ]
        out.append((Scope("scale", f"user-{batch[0].user}"), msgs))
    return out


@pytest.fixture(params=["sqlite", "postgresql"])
def two_urls(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
        return
    base = request.getfixturevalue("pg_url")
    other = base.replace("schema=", f"schema=b{uuid.uuid4().hex[:6]}_")
    yield base, other
    from servers import postgres

    postgres().drop(other.rsplit("schema=", 1)[1].split("&")[0])


def _content(mem: Memory, scope: Scope) -> dict[str, Any]:
    store: Any = mem.store
    records = store.list(scope, Filters(include_deleted=True), limit=10_000, newest_first=False)
    rows = sorted(
        tuple(
            sorted(
                (k, "own id" if k == "source_ids" and v == (r.id,) else repr(v))
                for k, v in dataclasses.asdict(r).items()
                if k not in _VOLATILE
            )
        )
        for r in records
    )
    jobs = store.list_jobs(scope.tenant, scope.user, status="pending")
    searches = [
        [(h.record.content.raw, round(h.score, 12)) for h in mem.search(scope, q, top_k=5)]
        for q in synth_queries(6, 3)
    ]
    return {
        "records": rows,
        "jobs": sorted((j.kind, len(j.payload.get("record_ids", []))) for j in jobs),
        "searches": searches,
        "stats": store.stats(scope),
    }


def test_bulk_load_writes_what_add_messages_writes(two_urls: tuple[str, str]) -> None:
    clock = FixedClock(datetime(2026, 1, 1, 12, 0, tzinfo=UTC))
    one = Memory(two_urls[0], embedder="hashing", background=False, clock=clock)
    bulk = Memory(two_urls[1], embedder="hashing", background=False, clock=clock)
    try:
        for scope, msgs in _batches():
            one.add_messages(scope, msgs)
        written = bulk._bulk_add_messages(_batches())
        assert len(written) == 240
        for u in range(USERS):
            scope = Scope("scale", f"user-{u}")
            assert _content(bulk, scope) == _content(one, scope)
        if two_urls[0].startswith("postgresql"):
            assert _pg_tables(bulk) == _pg_tables(one)
    finally:
        one.close()
        bulk.close()


def _pg_tables(mem: Memory) -> dict[str, Any]:
    store: Any = mem.store
    with store._read() as c:
        return {
            "postings": c.execute(
                "SELECT count(*) AS n, sum(tf) AS tf, sum(len) AS len FROM lex_postings"
            ).fetchone(),
            "df": c.execute(
                "SELECT sum(df) AS df, count(DISTINCT token) AS n FROM lex_df"
            ).fetchone(),
            "stats": c.execute("SELECT sum(docs) AS d, sum(tokens) AS t FROM lex_stats").fetchone(),
            "vectors": c.execute("SELECT count(*) AS n FROM vectors").fetchone(),
            "cache": c.execute("SELECT count(*) AS n FROM embedding_cache").fetchone(),
            "jobs": c.execute("SELECT count(*) AS n FROM jobs").fetchone(),
        }


def test_a_bulk_row_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scale, "users_for", lambda size: 3)
    res = scale.run_scale(
        scale.ScaleConfig(
            sizes=(300,),
            store="memory",
            queries=3,
            batch=100,
            zh_sizes=(),
            worker_messages=0,
            context_threads=(),
            bulk_above=200,
            bulk_users=2,
        )
    )
    (row,) = res["results"]
    assert row["users"] == 3 and row["ingest"]["messages"] == 300
    assert row["ingest"]["loader"].startswith("bulk")
    assert row["search"]["n"] == 3
