"""A user's purge on PostgreSQL leaves no row naming them (issue 10 §6): every table of the
store's schema is read as text afterwards and holds none of their words, stemmed terms,
record ids, user id, scope token (the key of their ``scope_generation`` row) or quota hash,
while the bystander's data is intact; another process's vector cache still notices the
purge without that row.

(Raw bytes are another matter on PostgreSQL: a deleted tuple stays in its heap page until
the page is rewritten, and the WAL keeps every insert until its segment is recycled; see
README, "Audit log, purge, access control".)"""

from __future__ import annotations

from typing import Any

from memstrata import FixedClock, Memory, Scope
from memstrata.quotas import Quota, Quotas, subject_hash
from memstrata.search.tokenize import tokenize
from memstrata.store.sqlite.codec import scope_token

VICTIM = Scope("acme", "victim-user-7731", session="sv")
OTHER = Scope("acme", "bystander-4242", session="so")
WORDS = [
    "I am severely allergic to peanuts and cashews, my code is zqxjkvorple",
    "My locker number is 88231957 and my dog is called Flumblewick",
    "Remind me that the quarzanite shipment arrives on Thursday",
]


def _rows_containing(mem: Memory, needles: set[str]) -> dict[str, int]:
    store: Any = getattr(mem.store, "durable", mem.store)
    out: dict[str, int] = {}
    with store._pool.connection() as conn:  # noqa: SLF001 - a test looks inside
        tables = [
            next(iter(r.values())) if isinstance(r, dict) else r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = "
                "current_schema() AND table_type = 'BASE TABLE'"
            ).fetchall()
        ]
        for table in tables:
            for needle in sorted(needles):
                row = conn.execute(
                    f'SELECT count(*) AS n FROM "{table}" t WHERE lower(t::text) LIKE %s',
                    (f"%{needle.lower()}%",),
                ).fetchone()
                n = row["n"] if isinstance(row, dict) else row[0]
                if n:
                    out[f"{table}:{needle}"] = int(n)
    return out


def test_postgres_purge_leaves_no_row_of_the_user(pg_url: str, clock: FixedClock) -> None:
    quotas = Quotas(per_user=Quota(embeddings_per_day=500, max_records=500))
    mem = Memory(pg_url, embedder="hashing", clock=clock, background=False, quotas=quotas)
    try:
        ids = [mem.add_message(VICTIM, "user", w).id for w in WORDS]
        mem.add_message(OTHER, "user", "the weather in Porto is mild in spring")
        ids.append(mem.add(VICTIM, "Flumblewick likes quarzanite biscuits", dedup=False).id)
        mem.set_quota(VICTIM, Quota(max_records=400))
        mem.search(VICTIM.user_scope, "what is Flumblewick allergic to")
        mem.end_session(VICTIM)
        mem.forget(VICTIM, [ids[0]], actor="user:victim-user-7731")
        flt = {"include_deleted": True}
        ids += [r.id for r in mem.list(VICTIM.user_scope, filters=flt, limit=1000)]
        needles = {"flumblewick", "quarzanite", "zqxjkvorple", "88231957", "cashews"}
        for text in WORDS:
            needles |= {t for t in tokenize(text) if len(t) >= 6}  # peanut, allerg, quarzanit
        needles |= {"victim-user-7731", subject_hash(VICTIM.tenant, VICTIM.user), *ids}
        needles.add(scope_token(VICTIM.tenant, VICTIM.user))  # the scope_generation key
        assert _rows_containing(mem, needles)  # the scan does see them before
        report = mem.purge(VICTIM.user_scope)
        assert report.remaining == 0
        found = _rows_containing(mem, needles)
        assert found == {}, f"rows still naming the purged user: {found}"
        assert _rows_containing(mem, {"porto", "bystander-4242"})
    finally:
        mem.close()


def test_postgres_single_purge_drops_terms_only_it_had(pg_url: str, clock: FixedClock) -> None:
    mem = Memory(pg_url, embedder="hashing", clock=clock, background=False)
    try:
        gone = mem.add(VICTIM, "the zqxjkvorple quarzanite ledger", dedup=False)
        mem.add(VICTIM, "the weather in Porto is mild", dedup=False)
        terms = {t for t in tokenize(gone.text) if len(t) >= 6}
        assert len(terms) >= 2
        assert _rows_containing(mem, terms)
        mem.purge(VICTIM, [gone.id])
        assert _rows_containing(mem, terms) == {}
        assert mem.search(VICTIM.user_scope, "Porto weather", mode="lexical")
    finally:
        mem.close()


def test_another_process_cache_notices_the_purge(pg_url: str, clock: FixedClock) -> None:
    """The user's ``scope_generation`` row goes with the purge; another process that
    cached the user's vectors (before any removal, so with no row at all) must still drop
    them: a search there finds none of the purged records, then only what is new."""
    a = Memory(pg_url, embedder="hashing", clock=clock, background=False)
    b = Memory(pg_url, embedder="hashing", clock=clock, background=False)
    try:
        old = {a.add(VICTIM, w, dedup=False).id for w in WORDS}
        a.add(OTHER, "the weather in Porto is mild in spring", dedup=False)
        seen = {h.record.id for h in b.search(VICTIM.user_scope, "locker dog", mode="dense")}
        assert seen & old
        a.purge(VICTIM.user_scope)
        assert b.search(VICTIM.user_scope, "locker dog", mode="dense") == []
        new = a.add(VICTIM, "My locker is now number 12", dedup=False)
        hits = [h.record.id for h in b.search(VICTIM.user_scope, "locker dog", mode="dense")]
        assert hits == [new.id]
        assert b.search(OTHER.user_scope, "Porto weather", mode="dense")
    finally:
        a.close()
        b.close()
