"""PostgreSQL: the audit log's trigger (schema step 21) lets a purge make an event's actor
``[purged]`` only while its transaction has set ``memstrata.redact_reader`` to that very
actor, with every other column unchanged; and takes a reader out of a set_access event
holding a legacy NUL id only as exactly that reader removed (the NUL id kept)."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from memstrata import Memory, Scope

BOB = Scope("acme", "bob")
ACTOR = "UPDATE audit_log SET actor = '[purged]' WHERE action = 'delete'"
LEGACY = "old\x00id"


class _Undo(Exception):
    """Rolls the allowed update back."""


def _try(mem: Memory, sql: str, args: Any, setting: str | None) -> bool:
    """Whether the trigger refused ``sql``."""
    store: Any = mem.store
    with store._pool.connection() as conn:
        try:
            with conn.transaction():
                if setting is not None:
                    conn.execute(
                        "SELECT set_config('memstrata.redact_reader', %s, true)", (setting,)
                    )
                conn.execute(sql, args)
                raise _Undo
        except psycopg.errors.RaiseException as exc:
            assert "append-only" in str(exc)
            return True
        except _Undo:
            return False


@pytest.mark.parametrize(
    ("sql", "setting", "refused"),
    [
        (ACTOR, "carol", False),  # the purge's redaction of carol as actor
        (ACTOR, None, True),
        (ACTOR, "dave", True),
        (ACTOR.replace("SET actor", "SET reason = 'x', actor"), "carol", True),
        (ACTOR.replace("'[purged]'", "'mallory'"), "carol", True),
        (ACTOR.replace("SET actor", "SET details = '{\"a\": 1}', actor"), "carol", True),
    ],
)
def test_the_actor_redaction_only(
    pg_url: str, sql: str, setting: str | None, refused: bool
) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        rec = mem.add(BOB, "bob's note")
        mem.delete(BOB, rec.id, actor="carol")
        assert _try(mem, sql, (), setting) is refused


def _legacy_event(mem: Memory) -> None:
    store: Any = mem.store
    details = json.dumps({"allowed_users": [LEGACY, "carol", "dave"], "visibility": "shared"})
    with store._pool.connection() as c:
        c.execute(
            'INSERT INTO audit_log (id, tenant, "user", actor, action, at, record_ids, '
            "details) VALUES ('legacy', 'acme', 'bob', 'library', 'set_access', "
            "'2020-01-01T00:00:00+00:00', ARRAY['r1'], %s)",
            (details,),
        )


@pytest.mark.parametrize(
    ("readers", "refused"),
    [
        ([LEGACY, "dave"], False),  # carol out, the rest as it was
        (["carol", "dave"], True),  # the NUL id out instead
        (["\ufffdid", "dave"], True),  # the NUL id changed
        (["old\uffffid", "dave"], True),
        ([LEGACY], True),  # dave out too
    ],
)
def test_a_reader_out_of_an_event_with_a_legacy_id(
    pg_url: str, readers: list[str], refused: bool
) -> None:
    with Memory(pg_url, embedder="hashing", background=False) as mem:
        _legacy_event(mem)
        new = json.dumps({"allowed_users": readers, "visibility": "shared"})
        sql = "UPDATE audit_log SET details = %s WHERE id = 'legacy'"
        assert _try(mem, sql, (new,), "carol") is refused
