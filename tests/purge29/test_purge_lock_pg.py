"""PostgreSQL: the purge's lock (schema step 23) refuses only a write that shares with the
user being purged. Until session 29 (step 21) a write sharing with any reader of the purged
user's bucket (1 in 1,024 of the tenant's readers) was refused while the purge ran, and a
transaction sharing with many readers took up to 1,024 advisory locks (an import against a
server with a small ``max_locks_per_transaction`` failed). Now a write whose bucket a purge
holds falls back on its reader's own key, and buckets are 64 per tenant. Real connections,
interleavings fixed by row locks and ``pg_blocking_pids`` (tests/purge28/test_purge_race_pg.py
keeps the race it fixed: a share with the purged user during the purge is refused, one under
way is waited for)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from memstrata import Memory, Scope
from memstrata.errors import ConflictError
from pg_sessions import blocked_by, purge_in_thread, schema_conn

BOB = Scope("acme", "bob")
CAROL = Scope("acme", "carol")


def _neighbour(admin: Any) -> str:
    """A reader whose bucket is carol's, under step 21's 1,024 buckets and step 23's 64."""
    row = admin.execute(
        "SELECT 'reader-' || i FROM generate_series(1, 200000) AS i "
        "WHERE hashtext('reader-' || i) & 1023 = hashtext('carol') & 1023 LIMIT 1"
    ).fetchone()
    return str(row[0])


def _held_purge(mem: Memory, holder: Any, admin: Any, user: str) -> tuple[Any, dict[str, Any]]:
    """A purge of ``user`` held inside its pass over what was shared with them (after its
    locks and its read of the index)."""
    rec = mem.add(BOB, f"bob's note shared with {user}")
    mem.set_access(BOB, rec.id, visibility="shared", allowed_users=[user])
    holder.execute("SELECT 1 FROM records WHERE id = %s FOR UPDATE", (rec.id,))
    t, out = purge_in_thread(mem, Scope("acme", user))
    blocked_by(admin, holder.info.backend_pid, out["done"])
    assert not out["done"].is_set()
    return t, out


def test_a_share_with_a_neighbour_during_a_purge_is_written(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        admin = schema_conn(mem)
        holder = schema_conn(mem, autocommit=False)
        dave = _neighbour(admin)
        mem.add(CAROL, "carol's note")
        later = mem.add(BOB, "bob's note for a reader of carol's bucket")
        t, out = _held_purge(mem, holder, admin, "carol")
        try:
            mem.set_access(BOB, later.id, visibility="shared", allowed_users=[dave])
            with pytest.raises(ConflictError, match="purge"):  # carol herself: refused
                mem.set_access(BOB, later.id, visibility="shared", allowed_users=["carol"])
        finally:
            holder.rollback()
            t.join(60)
            holder.close()
            admin.close()
        assert "error" not in out, out
        assert mem.get(BOB, later.id).access.allowed_users == (dave,)
        assert mem.get(BOB.as_caller(dave), later.id).id == later.id


def test_a_neighbours_purge_waits_for_a_share_that_fell_back(pg_url: str) -> None:
    """A share with carol written while a purge of her bucket's other reader holds the
    bucket takes carol's own key; carol's purge, started then, waits for it and takes her
    out of the record."""
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        admin = schema_conn(mem)
        holder = schema_conn(mem, autocommit=False)
        writer = schema_conn(mem, autocommit=False)
        dave = _neighbour(admin)
        mem.add(CAROL, "carol's note")
        mem.add(Scope("acme", dave), "dave's note")
        rec = mem.add(BOB, "bob's note")
        t1, out1 = _held_purge(mem, holder, admin, dave)
        access = '{"allowed_roles":[],"allowed_users":["carol","erin"],"visibility":"shared"}'
        try:
            writer.execute(
                "UPDATE records SET access = %s, version = version + 1 WHERE id = %s",
                (access, rec.id),
            )
            t2, out2 = purge_in_thread(mem, CAROL)
            blocked_by(admin, writer.info.backend_pid, out2["done"])
            writer.commit()
        finally:
            writer.close()
            holder.rollback()  # dave's purge ends; carol's, next in the bucket, then runs
            t1.join(60)
            holder.close()
        t2.join(60)
        assert "error" not in out1 and "error" not in out2, (out1, out2)
        assert mem.get(BOB, rec.id).access.allowed_users == ("erin",)
        n = admin.execute("SELECT count(*) FROM record_readers WHERE reader = 'carol'").fetchone()[
            0
        ]
        admin.close()
        assert n == 0


def test_a_purge_of_an_older_process_takes_the_users_key(pg_url: str) -> None:
    """A process opened before step 23 locks ``record_readers_key(t, u)`` as step 21's
    purge did: that call now takes the user's own key too, so a share with the user is
    refused and one with a neighbour is written."""
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        admin = schema_conn(mem)
        old = schema_conn(mem, autocommit=False)
        dave = _neighbour(admin)
        rec = mem.add(BOB, "bob's note")
        try:
            old.execute("SELECT pg_advisory_xact_lock(record_readers_key('acme', 'carol'))")
            with pytest.raises(ConflictError, match="purge"):
                mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol"])
            mem.set_access(BOB, rec.id, visibility="shared", allowed_users=[dave])
        finally:
            old.rollback()
            old.close()
            admin.close()
        assert mem.get(BOB, rec.id).access.allowed_users == (dave,)


def test_a_share_with_many_readers_takes_few_locks(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        rec = mem.add(BOB, "bob's note for everyone")
        readers = [f"reader-{i}" for i in range(2000)]
        access = (
            '{"allowed_roles":[],"allowed_users":['
            + ",".join(f'"{r}"' for r in readers)
            + '],"visibility":"shared"}'
        )
        conn = schema_conn(mem, autocommit=False)
        try:
            conn.execute("UPDATE records SET access = %s WHERE id = %s", (access, rec.id))
            held = conn.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                "AND pid = pg_backend_pid()"
            ).fetchone()[0]
        finally:
            conn.rollback()
            conn.close()
        assert 0 < held <= 64, held


def test_the_error_says_what_to_do(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        rec = mem.add(BOB, "bob's note")
        old = schema_conn(mem, autocommit=False)
        try:
            old.execute("SELECT record_readers_purge_lock('acme', 'carol')")
            with pytest.raises(ConflictError) as err:
                mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["carol"])
        finally:
            old.rollback()
            old.close()
        assert "purge" in str(err.value)
        assert isinstance(err.value.__cause__ or err.value, (psycopg.Error, ConflictError))
