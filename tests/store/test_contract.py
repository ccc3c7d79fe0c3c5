"""The store contract (``memstrata.store.base``), run against every backend."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import timedelta

import numpy as np
import pytest

from memstrata.errors import ConflictError, NotFoundError, ValidationError
from memstrata.filters import Filters, MetadataCondition
from memstrata.jobs import Job, JobStatus
from memstrata.records import RecordStatus, RecordType, Source, Visibility
from memstrata.scope import Scope
from memstrata.search.tokenize import tokenize
from memstrata.store import RecordWrite, Store

from .conftest import T0, Maker, unit

ME = Scope("t1", "u1")
OTHER_USER = Scope("t1", "u2")
OTHER_TENANT = Scope("t2", "u1")


def ids(records: list) -> list[str]:  # type: ignore[type-arg]
    return [r.id for r in records]


# --- records: insert, get, atomicity ------------------------------------------------------
def test_insert_then_get_round_trips_every_field(store: Store, maker: Maker) -> None:
    r = maker.record(
        "我喜欢喝茶 and green tea",
        agent="a1",
        session="s1",
        tags=("x", "y"),
        metadata={"n": 3, "nested": {"k": [1, 2]}},
        source_ids=("m1",),
        importance=0.7,
        confidence=0.4,
        valid_from=T0,
        observed_at=T0 + timedelta(microseconds=123457),
    )
    store.insert([maker.write(r)])
    assert store.get(ME, r.id) == r


def test_duplicate_id_in_batch_writes_nothing(store: Store, maker: Maker) -> None:
    a, b = maker.write(), maker.write()
    dup = maker.write(replace(a.record, content=a.record.content))
    with pytest.raises(ValidationError, match="exists already"):
        store.insert([a, b, dup])
    assert store.count(ME, Filters(include_deleted=True)) == 0
    assert store.lexical_search(ME, ["note"], 10, Filters()) == []
    assert store.vector_search(ME, a.vector, 10, Filters()) == []  # type: ignore[arg-type]


def test_existing_id_is_rejected_and_batch_rolled_back(store: Store, maker: Maker) -> None:
    first = maker.write()
    store.insert([first])
    fresh = maker.write()
    with pytest.raises(ValidationError):
        store.insert([fresh, first])
    with pytest.raises(NotFoundError):
        store.get(ME, fresh.record.id)


def test_vector_with_wrong_dims_is_rejected(store: Store, maker: Maker) -> None:
    w = maker.write()
    bad = RecordWrite(w.record, np.ones(3, np.float32), w.terms)
    with pytest.raises(ValidationError, match="dimensions"):
        store.insert([bad])


# --- isolation ---------------------------------------------------------------------------
@pytest.mark.parametrize("foreign", [OTHER_USER, OTHER_TENANT])
def test_foreign_records_are_not_found(store: Store, maker: Maker, foreign: Scope) -> None:
    w = maker.write(text="secret tea recipe")
    store.insert([w])
    r = w.record
    with pytest.raises(NotFoundError):
        store.get(foreign, r.id)
    with pytest.raises(NotFoundError):
        store.history(foreign, r.id)
    with pytest.raises(NotFoundError):
        store.replace(
            foreign, RecordWrite(replace(r, version=2), None, w.terms), expected_version=1
        )
    assert store.set_status(foreign, [r.id], RecordStatus.DELETED, T0) == []
    assert store.purge(foreign, [r.id]).records == 0
    store.touch(foreign, [r.id], T0)
    assert store.get_many(foreign, [r.id]) == []
    assert store.list(foreign, Filters()) == []
    assert store.count(foreign, Filters()) == 0
    assert store.lexical_search(foreign, tokenize("tea"), 5, Filters()) == []
    assert store.vector_search(foreign, w.vector, 5, Filters()) == []  # type: ignore[arg-type]
    assert store.find_by_hash(foreign, r.content_hash, []) is None
    assert store.stats(foreign).records == 0
    assert store.get(ME, r.id) == r  # untouched by all of the above


def test_visibility_rule_matches_scope_admits(store: Store, maker: Maker) -> None:
    agents, sessions = [None, "a1", "a2"], [None, "s1", "s2"]
    writes = [
        maker.write(agent=a, session=s, visibility=v, text=f"shared topic {a} {s} {v}")
        for a, s, v in itertools.product(agents, sessions, list(Visibility))
    ]
    store.insert(writes)
    records = [w.record for w in writes]
    for agent, session in itertools.product(agents, sessions):
        scope = Scope("t1", "u1", agent, session)
        expected = {r.id for r in records if r.visible_in(scope)}
        assert {r.id for r in store.list(scope, Filters(), limit=1000)} == expected
        assert store.count(scope, Filters()) == len(expected)
        lex = store.lexical_search(scope, tokenize("topic"), 1000, Filters())
        assert {c.id for c in lex} == expected
        vec = store.vector_search(scope, writes[0].vector, 1000, Filters())  # type: ignore[arg-type]
        assert {c.id for c in vec} == expected
        for r in records:
            if r.id in expected:
                assert store.get(scope, r.id) == r
            else:
                with pytest.raises(NotFoundError):
                    store.get(scope, r.id)


# --- filters --------------------------------------------------------------------------------
FILTERS = [
    Filters(),
    Filters(include_deleted=True),
    Filters(include_superseded=True),
    Filters(types=frozenset({RecordType.FACT})),
    Filters(types=frozenset()),
    Filters(tags_any=frozenset({"a", "z"})),
    Filters(tags_any=frozenset()),
    Filters(tags_all=frozenset({"a", "b"})),
    Filters(observed_after=T0 + timedelta(minutes=5), observed_before=T0 + timedelta(minutes=12)),
    Filters(valid_at=T0 + timedelta(days=2)),
    Filters(min_importance=0.5),
    Filters(sources=frozenset({Source.IMPLICIT_INFERENCE})),
    Filters(metadata=(MetadataCondition("n", "gt", 3),)),
    Filters(metadata=(MetadataCondition("n", "ne", 4), MetadataCondition("s", "contains", "b"))),
    Filters(metadata=(MetadataCondition("n", "in", [1, 2, "x"]),)),
    Filters(ids=frozenset({"r0003", "r0004", "nope"})),
    Filters.parse(
        {"types": ["fact", "note"], "tags": "a", "min_importance": 0.2, "include_deleted": True}
    ),
]


@pytest.fixture
def varied(store: Store, maker: Maker) -> list:  # type: ignore[type-arg]
    writes = []
    for i in range(16):
        r = maker.record(
            f"common word item {i}",
            type=[RecordType.NOTE, RecordType.FACT][i % 2],
            tags=[(), ("a",), ("a", "b"), ("b", "z")][i % 4],
            importance=(i % 5) / 4,
            source=[Source.EXPLICIT_USER_INPUT, Source.IMPLICIT_INFERENCE][i % 3 == 0],
            metadata=[{}, {"n": i % 7}, {"n": "x", "s": "abc"}, {"s": ["b", "c"]}][i % 4],
            valid_from=T0 + timedelta(days=i % 4),
            valid_to=T0 + timedelta(days=3) if i % 5 == 0 else None,
            superseded_by="r0001" if i % 6 == 5 else None,
        )
        writes.append(maker.write(r))
    store.insert(writes)
    store.set_status(ME, ["r0002", "r0007"], RecordStatus.DELETED, T0 + timedelta(days=9))
    return [store.get(ME, w.record.id, include_deleted=True) for w in writes]


@pytest.mark.parametrize("filters", FILTERS, ids=range(len(FILTERS)))
def test_filters_agree_with_reference_predicate(
    store: Store,
    varied: list,
    maker: Maker,  # type: ignore[type-arg]
    filters: Filters,
) -> None:
    expected = [r.id for r in varied if filters.matches(r)]
    assert expected or filters.types == frozenset() or filters.tags_any == frozenset()
    listed = store.list(ME, filters, limit=1000, newest_first=False)
    assert ids(listed) == expected
    assert store.count(ME, filters) == len(expected)
    lex = store.lexical_search(ME, tokenize("common"), 1000, filters)
    assert sorted(c.id for c in lex) == sorted(expected)
    vec = store.vector_search(ME, unit(maker.rng), 1000, filters)
    assert sorted(c.id for c in vec) == sorted(expected)
    k = 3
    assert len(store.vector_search(ME, unit(maker.rng), k, filters)) == min(k, len(expected))
    assert len(store.lexical_search(ME, ["common"], k, filters)) == min(k, len(expected))


def test_list_orders_by_observed_then_insertion_and_paginates(store: Store, maker: Maker) -> None:
    same = T0 + timedelta(hours=1)
    writes = [maker.write(observed_at=same) for _ in range(3)]
    writes.insert(1, maker.write(observed_at=T0))
    store.insert(writes)
    oldest_first = ids(store.list(ME, Filters(), newest_first=False))
    assert oldest_first == [
        writes[1].record.id,
        writes[0].record.id,
        writes[2].record.id,
        writes[3].record.id,
    ]
    assert ids(store.list(ME, Filters())) == oldest_first[::-1]
    assert (
        ids(store.list(ME, Filters(), limit=2, offset=1, newest_first=False)) == oldest_first[1:3]
    )


def test_list_pages_walks_the_list_by_key(store: Store, maker: Maker) -> None:
    same = T0 + timedelta(hours=1)
    writes = [maker.write(observed_at=same) for _ in range(4)]
    writes.insert(1, maker.write(observed_at=T0))
    writes.append(maker.write(observed_at=T0 + timedelta(hours=2)))
    store.insert(writes)
    oldest_first = ids(store.list(ME, Filters(), newest_first=False))
    pages = list(store.list_pages(ME, Filters(), batch_size=2))
    assert [len(p) for p in pages] == [2, 2, 2]
    assert [r.id for p in pages for r in p] == oldest_first
    # a filter some stores apply after the SQL: pages may shrink, none is empty
    tagged = Filters.parse({"metadata": {"k": {"ne": "x"}}})
    got = [r.id for p in store.list_pages(ME, tagged, batch_size=4) for r in p]
    assert got == ids(store.list(ME, tagged, newest_first=False))
    # a purge and a backfilled add between two pages: nothing skipped, nothing twice
    walk = store.list_pages(ME, Filters(), batch_size=2)
    seen = [r.id for r in next(walk)]
    store.purge(ME, [seen[0]])
    store.insert([maker.write(observed_at=T0 - timedelta(days=1))])
    seen += [r.id for p in walk for r in p]
    assert seen == oldest_first


# --- replace, history, status, touch ------------------------------------------------------
def test_replace_keeps_history_and_detects_conflicts(store: Store, maker: Maker) -> None:
    w = maker.write(text="likes coffee")
    store.insert([w])
    v2 = replace(w.record, version=2, content=replace(w.record.content, raw="likes tea"))
    store.replace(ME, RecordWrite(v2, None, tuple(tokenize(v2.text))), expected_version=1)
    with pytest.raises(ConflictError, match="version 2.*version 1"):
        store.replace(ME, RecordWrite(replace(v2, version=2), None, ()), expected_version=1)
    assert [r.version for r in store.history(ME, w.record.id)] == [1, 2]
    assert store.history(ME, w.record.id)[0] == w.record
    assert store.get(ME, w.record.id) == v2
    # new terms replace the old ones; vector=None keeps the old vector
    assert store.lexical_search(ME, tokenize("coffee"), 5, Filters()) == []
    assert [c.id for c in store.lexical_search(ME, tokenize("tea"), 5, Filters())] == [v2.id]
    hit = store.vector_search(ME, w.vector, 1, Filters())  # type: ignore[arg-type]
    assert hit[0].id == v2.id and hit[0].score == pytest.approx(1.0, abs=1e-5)


def test_replace_with_new_vector_is_searched(store: Store, maker: Maker) -> None:
    w = maker.write()
    store.insert([w, maker.write()])
    new_vec = unit(maker.rng)
    store.replace(
        ME, RecordWrite(replace(w.record, version=2), new_vec, w.terms), expected_version=1
    )
    assert store.vector_search(ME, new_vec, 1, Filters())[0].id == w.record.id


def test_replace_rejects_moving_to_another_user(store: Store, maker: Maker) -> None:
    w = maker.write()
    store.insert([w])
    with pytest.raises(ValidationError):
        store.replace(
            ME, RecordWrite(replace(w.record, user="u2", version=2), None, ()), expected_version=1
        )
    assert store.get(ME, w.record.id).version == 1


def test_set_status_soft_deletes_restores_and_versions(store: Store, maker: Maker) -> None:
    w = maker.write()
    store.insert([w])
    rid = w.record.id
    assert store.set_status(ME, [rid, "missing"], RecordStatus.DELETED, T0) == [rid]
    assert store.set_status(ME, [rid], RecordStatus.DELETED, T0) == []
    with pytest.raises(NotFoundError):
        store.get(ME, rid)
    deleted = store.get(ME, rid, include_deleted=True)
    assert (deleted.version, deleted.deleted_at) == (2, T0)
    assert store.vector_search(ME, w.vector, 5, Filters()) == []  # type: ignore[arg-type]
    assert store.set_status(ME, [rid], RecordStatus.ACTIVE, T0) == [rid]
    assert store.get(ME, rid).version == 3 and store.get(ME, rid).deleted_at is None
    assert len(store.history(ME, rid)) == 3


def test_touch_counts_access_without_new_version(store: Store, maker: Maker) -> None:
    w = maker.write()
    store.insert([w])
    at = T0 + timedelta(days=1)
    store.touch(ME, [w.record.id, w.record.id], at)
    r = store.get(ME, w.record.id)
    assert (r.access_count, r.last_accessed_at, r.version) == (1, at, 1)
    assert len(store.history(ME, r.id)) == 1


def test_get_many_keeps_given_order_and_includes_deleted(store: Store, maker: Maker) -> None:
    ws = [maker.write() for _ in range(3)]
    store.insert(ws)
    store.set_status(ME, [ws[0].record.id], RecordStatus.DELETED, T0)
    wanted = [ws[2].record.id, "nope", ws[0].record.id]
    assert ids(store.get_many(ME, wanted)) == [ws[2].record.id, ws[0].record.id]


def test_find_by_hash_only_active_current_of_given_types(store: Store, maker: Maker) -> None:
    a = maker.write(text="same text", type=RecordType.FACT)
    store.insert([a])
    h = a.record.content_hash
    assert store.find_by_hash(ME, h, ["fact"]) == a.record
    assert store.find_by_hash(ME, h, ["episode"]) is None
    store.set_status(ME, [a.record.id], RecordStatus.DELETED, T0)
    assert store.find_by_hash(ME, h, ["fact"]) is None


# --- purge -----------------------------------------------------------------------------------
def test_purge_destroys_records_history_vectors_terms(store: Store, maker: Maker) -> None:
    w, keep = maker.write(text="purple elephant"), maker.write(text="purple giraffe")
    store.insert([w, keep])
    store.set_status(ME, [w.record.id], RecordStatus.DELETED, T0)
    report = store.purge(ME, [w.record.id, "missing"])
    assert (report.records, report.versions, report.vectors, report.remaining) == (1, 1, 1, 0)
    with pytest.raises(NotFoundError):
        store.history(ME, w.record.id)
    assert [c.id for c in store.lexical_search(ME, tokenize("purple"), 5, Filters())] == [
        keep.record.id
    ]


def test_purge_user_removes_everything_and_verifies(store: Store, maker: Maker) -> None:
    mine = maker.write(text="only mine")
    shared_text = maker.write(text="everyone says hi")
    theirs = maker.write(maker.record("everyone says hi", user="u2"))
    store.insert([mine, shared_text, theirs])
    store.replace(
        ME, RecordWrite(replace(mine.record, version=2), None, mine.terms), expected_version=1
    )
    store.cache_vectors(
        ME,
        "m",
        {
            mine.record.content_hash: unit(maker.rng),
            shared_text.record.content_hash: unit(maker.rng),
            "q:" + shared_text.record.content_hash: unit(maker.rng),
        },
    )
    store.cache_vectors(OTHER_USER, "m", {shared_text.record.content_hash: unit(maker.rng)})
    store.enqueue([job("j1"), job("j2", user="u2")])
    report = store.purge_user("t1", "u1")
    assert (
        report.records,
        report.versions,
        report.vectors,
        report.jobs,
        report.cache_entries,
        report.remaining,
    ) == (2, 1, 2, 1, 3, 0)
    assert store.count(ME, Filters(include_deleted=True)) == 0
    assert store.list_jobs("t1", "u1") == []
    assert store.lexical_search(ME, tokenize("mine"), 5, Filters()) == []
    # every cache entry of the user is gone, query embeddings included
    assert (
        store.cached_vectors(
            ME, "m", [shared_text.record.content_hash, "q:" + shared_text.record.content_hash]
        )
        == {}
    )
    # other users keep their records, jobs and their own cache entries
    assert store.get(OTHER_USER, theirs.record.id) == theirs.record
    assert len(store.list_jobs("t1", "u2")) == 1
    assert set(store.cached_vectors(OTHER_USER, "m", [shared_text.record.content_hash])) == {
        shared_text.record.content_hash
    }


# --- retrieval ranking --------------------------------------------------------------------------
def test_vector_search_equals_brute_force_cosine(store: Store, maker: Maker) -> None:
    writes = [maker.write() for _ in range(40)]
    store.insert(writes)
    q = unit(maker.rng)
    got = store.vector_search(ME, q, 10, Filters())
    matrix = np.stack([w.vector for w in writes])  # type: ignore[misc]
    scores = matrix @ q
    best = np.argsort(-scores)[:10]
    assert [c.id for c in got] == [writes[i].record.id for i in best]
    assert [c.score for c in got] == pytest.approx([float(scores[i]) for i in best], abs=1e-5)


def test_vector_search_sees_inserts_after_a_search(store: Store, maker: Maker) -> None:
    first = maker.write()
    store.insert([first])
    assert len(store.vector_search(ME, first.vector, 5, Filters())) == 1  # type: ignore[arg-type]
    later = maker.write()
    store.insert([later])
    assert store.vector_search(ME, later.vector, 1, Filters())[0].id == later.record.id  # type: ignore[arg-type]


def test_lexical_ranks_documents_with_the_term_first(store: Store, maker: Maker) -> None:
    store.insert(
        [
            maker.write(text=t)
            for t in (
                "the weather is sunny today",
                "my cat likes sunny windows and the sunny garden",
                "I prefer tea over coffee",
                "我喜欢在北京喝茶",
                "北京的天气很好",
            )
        ]
    )
    hits = store.lexical_search(ME, tokenize("sunny"), 5, Filters())
    assert [c.id for c in hits] == ["r0002", "r0001"]
    assert hits[0].score > hits[1].score > 0
    zh = store.lexical_search(ME, tokenize("喝茶"), 5, Filters())
    assert [c.id for c in zh] == ["r0004"]
    both = store.lexical_search(ME, tokenize("北京 天气"), 5, Filters())
    assert [c.id for c in both][0] == "r0005" and {c.id for c in both} == {"r0004", "r0005"}


@pytest.mark.parametrize("terms", [[], [""], ['"'], ["AND", "OR", "NOT"], ["a*", "(x", "col:y"]])
def test_lexical_query_syntax_is_inert(store: Store, maker: Maker, terms: list[str]) -> None:
    store.insert([maker.write(text="and or not plain words")])
    hits = store.lexical_search(ME, terms, 5, Filters())
    assert all(c.id == "r0001" for c in hits)


# --- embeddings cache, scan, set_vectors ------------------------------------------------------
def test_embedding_cache_round_trips_per_model_and_user(store: Store, maker: Maker) -> None:
    v = unit(maker.rng)
    store.cache_vectors(ME, "m1", {"h1": v})
    got = store.cached_vectors(ME, "m1", ["h1", "h2"])
    assert list(got) == ["h1"] and np.array_equal(got["h1"], v)
    assert got["h1"].dtype == np.float32
    assert store.cached_vectors(ME, "m2", ["h1"]) == {}
    # keyed by tenant and user: another user (or tenant) never sees the entry
    assert store.cached_vectors(OTHER_USER, "m1", ["h1"]) == {}
    assert store.cached_vectors(OTHER_TENANT, "m1", ["h1"]) == {}
    # agent and session do not split a user's cache
    assert list(store.cached_vectors(Scope("t1", "u1", "a1", "s1"), "m1", ["h1"])) == ["h1"]


def test_embedding_cache_rejects_bad_vectors_and_writes_nothing(store: Store, maker: Maker) -> None:
    with pytest.raises(ValidationError):
        store.cache_vectors(
            ME, "m1", {"ok": unit(maker.rng), "bad": np.array([np.nan, 1.0], np.float32)}
        )
    assert store.cached_vectors(ME, "m1", ["ok", "bad"]) == {}


def test_scan_yields_every_tenant_in_batches(store: Store, maker: Maker) -> None:
    store.insert([maker.write(tenant=f"t{i % 2}", user=f"u{i % 3}") for i in range(7)])
    batches = list(store.scan(batch_size=3))
    assert [len(b) for b in batches] == [3, 3, 1]
    assert len({r.id for b in batches for r in b}) == 7


def test_set_vectors_reembeds_and_rejects_unknown_ids(store: Store, maker: Maker) -> None:
    ws = [maker.write() for _ in range(3)]
    store.insert(ws)
    store.vector_search(ME, ws[0].vector, 3, Filters())  # type: ignore[arg-type]  # warm cache
    new = unit(maker.rng, 8)
    store.set_vectors([(ws[1].record, new)], "m2", 8)
    assert store.vector_search(ME, new, 1, Filters())[0].id == ws[1].record.id
    assert store.get(ME, ws[1].record.id).embedding_model == "m2"
    assert store.get(ME, ws[1].record.id).version == 1
    with pytest.raises(NotFoundError):
        store.set_vectors([(replace(ws[0].record, id="missing"), new)], "m2", 8)
    with pytest.raises(NotFoundError):  # the same id under another user is another record
        store.set_vectors([(replace(ws[0].record, user="u2"), new)], "m2", 8)


def test_meta_round_trips(store: Store) -> None:
    assert store.get_meta("embedding_model") is None
    store.set_meta("embedding_model", "a")
    store.set_meta("embedding_model", "b")
    assert store.get_meta("embedding_model") == "b"


# --- jobs ---------------------------------------------------------------------------------------
def job(job_id: str, *, user: str = "u1", run_after_s: float = 0, **kw: object) -> Job:
    return Job(
        id=job_id,
        kind="summarise",
        tenant="t1",
        user=user,
        payload={"n": 1},
        created_at=T0,
        run_after=T0 + timedelta(seconds=run_after_s),
        **kw,
    )  # type: ignore[arg-type]


def test_claim_leases_and_expired_lease_is_claimable_again(store: Store) -> None:
    store.enqueue([job("j1"), job("j2", run_after_s=60)])
    claimed = store.claim_jobs(T0, limit=10, lease_seconds=30)
    assert [(j.id, j.status, j.attempts) for j in claimed] == [("j1", JobStatus.RUNNING, 1)]
    assert claimed[0].lease_until == T0 + timedelta(seconds=30)
    assert store.claim_jobs(T0 + timedelta(seconds=10), limit=10, lease_seconds=30) == []
    # the worker died: once the lease runs out the job is claimable again
    again = store.claim_jobs(T0 + timedelta(seconds=31), limit=1, lease_seconds=30)
    assert [(j.id, j.attempts) for j in again] == [("j1", 2)]


def test_fail_retry_finish_and_give_up(store: Store) -> None:
    store.enqueue([job("j1"), job("j2")])
    store.claim_jobs(T0, limit=10, lease_seconds=30)
    store.fail_job("j1", "boom", T0 + timedelta(seconds=5))
    store.fail_job("j2", "fatal", None)
    assert store.claim_jobs(T0 + timedelta(seconds=1), limit=10, lease_seconds=30) == []
    retried = store.claim_jobs(T0 + timedelta(seconds=5), limit=10, lease_seconds=30)
    assert [(j.id, j.last_error) for j in retried] == [("j1", "boom")]
    store.finish_job("j1")
    assert [j.id for j in store.list_jobs("t1", "u1", status="done")] == ["j1"]
    assert [j.id for j in store.list_jobs("t1", "u1", status="failed")] == ["j2"]
    assert store.stats(ME).failed_jobs == 1
    with pytest.raises(NotFoundError):
        store.finish_job("missing")
    with pytest.raises(ValidationError, match="not one of"):
        store.list_jobs("t1", "u1", status="bogus")


def test_claim_filters_by_scope_and_dedups(store: Store) -> None:
    store.enqueue(
        [job("j1", dedup_key="k"), job("j2", dedup_key="k"), job("j3", user="u2", session="s1")]
    )
    assert [j.id for j in store.list_jobs("t1", "u1")] == ["j1"]
    got = store.claim_jobs(T0, limit=10, lease_seconds=1, user="u2", session="s1")
    assert [j.id for j in got] == ["j3"]
    with pytest.raises(ValidationError):
        store.enqueue([job("j1")])


def test_stats_counts_scope(store: Store, maker: Maker) -> None:
    ws = [maker.write(type=RecordType.FACT), maker.write(), maker.write(user="u9")]
    store.insert(ws)
    store.set_status(ME, [ws[1].record.id], RecordStatus.DELETED, T0)
    store.enqueue([job("j1")])
    s = store.stats(ME)
    assert (s.records, s.active, s.deleted, s.pending_jobs, s.users) == (2, 1, 1, 1, 2)
    assert dict(s.by_type) == {"fact": 1, "note": 1}
