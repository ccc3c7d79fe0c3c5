"""PostgreSQL: a write sharing a record with a user while that user is purged cannot
commit naming them after the purge read the index of readers (schema step 21). Two real
connections, the interleaving fixed by row locks and pg_blocking_pids, no sleeps to
order them:

- the purge is held inside its pass over the records shared with the user (after it
  read the index), and bob shares another record with her: refused (ConflictError:
  nothing written), where before it committed and the record kept her after the purge;
- bob's write is under way (its row added to the index, not committed) when the purge
  starts: the purge waits for it, then takes her out of that record too.
"""

from __future__ import annotations

import pytest

from memstrata import Memory, Scope
from memstrata.errors import ConflictError, NotFoundError
from pg_sessions import blocked_by, purge_in_thread, schema_conn

BOB = Scope("acme", "bob")
CAROL = Scope("acme", "carol")


def _named(mem: Memory, rid: str) -> bool:
    return any("carol" in v.access.allowed_users for v in mem.history(BOB, rid))


def test_a_share_during_the_purge_is_refused(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        mem.add(CAROL, "carol's note")
        shared = mem.add(BOB, "bob's note shared with carol")
        mem.set_access(BOB, shared.id, visibility="shared", allowed_users=["carol"])
        later = mem.add(BOB, "bob's note shared with carol during her purge")
        holder = schema_conn(mem, autocommit=False)
        admin = schema_conn(mem)
        # the purge will wait for this row lock inside its pass over carol's shared records
        holder.execute("SELECT 1 FROM records WHERE id = %s FOR UPDATE", (shared.id,))
        t, out = purge_in_thread(mem, CAROL)
        try:
            blocked_by(admin, holder.info.backend_pid, out["done"])
            assert not out["done"].is_set()
            with pytest.raises(ConflictError, match="purge"):
                mem.set_access(BOB, later.id, visibility="shared", allowed_users=["carol"])
        finally:
            holder.rollback()
            t.join(60)
            holder.close()
            admin.close()
        assert "error" not in out, out
        assert out["report"].remaining == 0
        assert not _named(mem, shared.id) and not _named(mem, later.id)
        mem.add(CAROL, "a new carol")
        for rid in (shared.id, later.id):
            with pytest.raises(NotFoundError):
                mem.get(BOB.as_caller("carol"), rid)
        # after the purge, sharing with the new carol is a new share, and it works
        mem.set_access(BOB, later.id, visibility="shared", allowed_users=["carol"])
        assert mem.get(BOB.as_caller("carol"), later.id).id == later.id


def test_the_purge_waits_for_a_share_under_way(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        mem.add(CAROL, "carol's note")
        rec = mem.add(BOB, "bob's note")
        writer = schema_conn(mem, autocommit=False)
        admin = schema_conn(mem)
        access = '{"allowed_roles":[],"allowed_users":["carol","dave"],"visibility":"shared"}'
        writer.execute(
            "UPDATE records SET access = %s, version = version + 1 WHERE id = %s",
            (access, rec.id),
        )
        t, out = purge_in_thread(mem, CAROL)
        try:
            blocked_by(admin, writer.info.backend_pid, out["done"])
            writer.commit()
        finally:
            t.join(60)
            writer.close()
            admin.close()
        assert "error" not in out, out
        kept = mem.get(BOB, rec.id)
        assert kept.access.allowed_users == ("dave",)
        with mem.store._pool.connection() as c:  # type: ignore[attr-defined]
            rows = c.execute(
                "SELECT count(*) AS n FROM record_readers WHERE reader = 'carol'"
            ).fetchone()
        assert rows["n"] == 0
