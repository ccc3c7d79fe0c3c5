"""A reply observed at the calendar's last instant keeps its question's terms in a new version.

Session 27's ``kept_terms`` (a version that keeps a reply's text keeps the words of the
question it answers) read the session's turns up to ``observed_at`` plus a microsecond: for
a turn observed at 9999-12-31 23:59:59.999999 (a date the stores accept, and which
``memstrata migrate``'s own test store holds) that raised a bare ``OverflowError``, so a
``set_access`` on such a reply failed. Now there is no upper bound there.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata import Memory, Scope

LAST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
ME = Scope("acme", "alice", session="s1")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_reply_at_the_last_instant_can_be_shared_and_found(kind: str, tmp_path: Path) -> None:
    url = "memory://" if kind == "memory" else f"sqlite:///{tmp_path / 'm.db'}"
    with Memory(url, embedder="hashing", background=False) as mem:
        mem.add_messages(
            ME,
            [
                {
                    "role": "user",
                    "content": "where did grandma hide the spare key?",
                    "observed_at": LAST,
                },
                {"role": "assistant", "content": "under the mat", "observed_at": LAST},
            ],
        )
        reply = next(r for r in mem.list(ME) if r.text == "under the mat")
        shared = mem.set_access(ME, reply.id, visibility="shared", allowed_users=["bob"])
        assert shared.version == reply.version + 1
        hits = mem.search(ME.user_scope, "grandma spare key", top_k=5, mode="lexical")
        assert reply.id in [h.record.id for h in hits]
