"""PostgreSQL: the audit log's trigger lets the reader's redaction through only while the
purge's transaction has set ``memstrata.redact_reader`` to that reader (migration 18), and
a whole-user purge leaves no row of the schema naming the user."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from memstrata import Memory, Scope

BOB = Scope("acme", "bob")
CAROL_ID = "carol.smith@example.com"
CAROL = Scope("acme", CAROL_ID)

_DROP = (
    "UPDATE audit_log SET details = jsonb_set(details::jsonb, '{allowed_users}', "
    "'[\"dave\"]')::text WHERE action = 'set_access'"
)


@pytest.mark.parametrize(
    ("sql", "reader", "refused"),
    [
        (_DROP, CAROL_ID, False),  # the purge's redaction, inside its transaction
        (_DROP, None, True),  # not set: refused
        (_DROP, "dave", True),  # set to another reader: refused
        (_DROP.replace("SET details", "SET reason = 'x', details"), CAROL_ID, True),
        (_DROP.replace('["dave"]', "[]"), CAROL_ID, True),  # another reader removed too
        (_DROP.replace('["dave"]', '["dave", "mallory"]'), CAROL_ID, True),
        (
            "UPDATE audit_log SET details = jsonb_set(details::jsonb, '{visibility}', "
            "'\"public\"')::text",
            CAROL_ID,
            True,
        ),
        ("DELETE FROM audit_log", CAROL_ID, True),
    ],
)
def test_the_trigger_allows_only_the_readers_redaction(
    pg_url: str, sql: str, reader: str | None, refused: bool
) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        rec = mem.add(BOB, "bob's note")
        mem.set_access(BOB, rec.id, visibility="shared", allowed_users=[CAROL_ID, "dave"])
        store: Any = mem.store
        with store._pool.connection() as conn:
            try:
                with conn.transaction():
                    if reader is not None:
                        conn.execute(
                            "SELECT set_config('memstrata.redact_reader', %s, true)", (reader,)
                        )
                    conn.execute(sql)
                    raise _Undo
            except psycopg.errors.RaiseException as exc:
                assert "append-only" in str(exc)
                got = True
            except _Undo:
                got = False
        assert got is refused
        # the setting lasts for its transaction only
        with store._pool.connection() as conn, pytest.raises(psycopg.errors.RaiseException):
            conn.execute(_DROP)


class _Undo(Exception):
    """Rolls the allowed update back."""


def test_no_row_of_the_schema_names_the_purged_user(pg_url: str) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        mem.add(CAROL, "carol's own note")
        rec = mem.add(BOB, "bob's door code is 4471")
        mem.set_access(BOB, rec.id, visibility="shared", allowed_users=[CAROL_ID, "dave"])
        mem.set_access(BOB, rec.id, allowed_users=["dave"])
        assert mem.purge(CAROL).remaining == 0
        store: Any = mem.store
        n = 0
        with store._pool.connection() as conn:
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = "
                "current_schema() AND table_type = 'BASE TABLE'"
            ).fetchall():
                n += conn.execute(
                    f'SELECT count(*) AS n FROM "{r["table_name"]}" t WHERE t::text LIKE %s',
                    (f"%{CAROL_ID}%",),
                ).fetchone()["n"]
        assert n == 0
        # the deltas are deflated (no row text shows the id): decoded, none names carol
        hist = mem.history(BOB, rec.id)
        assert [v.access.allowed_users for v in hist] == [(), ("dave",), ("dave",), ("dave",)]
