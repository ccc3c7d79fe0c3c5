"""A store copied by ``memstrata migrate`` (``copy_store``) has its public part: a caller's
search of the target finds the owner's public records with the source's scores, both ways
between SQLite and PostgreSQL (the load indexes through the stores' own insert, which keeps
the part). A check of the new structure; passes before, where there was no part to keep."""

from __future__ import annotations

from pathlib import Path

from memstrata import Memory, Scope
from memstrata.store.migrate import copy_store

BOB = Scope("acme", "bob")
CAROL = BOB.as_caller("carol")


def _seen(url: str) -> list[tuple[str, float]]:
    m = Memory(url, embedder="hashing", background=False)
    try:
        return [(h.record.text, h.score) for h in m.search(CAROL, "alpha harbour", mode="lexical")]
    finally:
        m.close()


def test_a_copied_store_keeps_its_public_part(tmp_path: Path, pg_url: str) -> None:
    src = f"sqlite:///{tmp_path / 's.db'}"
    m = Memory(src, embedder="hashing", background=False)
    for i in range(6):
        m.add(BOB, f"alpha harbour note {i} " + "word " * i, visibility="public")
    m.add(BOB, "alpha private note")
    gone = m.add(BOB, "alpha harbour deleted", visibility="public")
    m.delete(BOB, gone.id)
    shared = m.add(BOB, "harbour shared by name")
    m.set_access(BOB, shared.id, visibility="shared", allowed_users=["carol"])
    m.close()
    want = _seen(src)
    assert len(want) == 7 and "alpha harbour deleted" not in {t for t, _ in want}
    assert copy_store(src, pg_url).ok
    assert _seen(pg_url) == want
    back = f"sqlite:///{tmp_path / 'back.db'}"
    assert copy_store(pg_url, back).ok
    assert _seen(back) == want
