"""``update`` with nothing to change: the HTTP API refused it (422 "nothing to change"); the
library wrote a new version equal to the last one (a version and a history entry for
nothing, and a concurrent editor's ``expected_version`` made stale by it). Now the library
refuses it alike, sync and async, nothing written (session 34's audit)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata.errors import ValidationError

from .surfaces import USERS, Surfaces


@pytest.fixture
def surfaces(tmp_path: Path) -> Iterator[Surfaces]:
    s = Surfaces(f"sqlite:///{tmp_path / 'm.db'}", tmp_path)
    yield s
    s.close()


def test_an_update_with_nothing_to_change_is_refused_everywhere(surfaces: Surfaces) -> None:
    s = surfaces
    ids = {w: s.mem.add(s.scope(w), "the note to edit").id for w in ("lib", "aio", "http")}
    before = {w: s.snapshot(w) for w in ids}
    with pytest.raises(ValidationError, match="^nothing to change"):
        s.mem.update(s.scope("lib"), ids["lib"], expected_version=1)
    with pytest.raises(ValidationError, match="^nothing to change"):
        s.mem.update(
            s.scope("lib"), ids["lib"], expected_version=1, content=None, tags=None, metadata=None
        )
    with pytest.raises(ValidationError, match="^nothing to change"):
        s.loop.run_until_complete(s.amem.update(s.scope("aio"), ids["aio"], expected_version=1))
    r = s.http(
        "PATCH", f"/v1/users/{USERS['http']}/memories/{ids['http']}", {"expected_version": 1}
    )
    assert r.status_code == 422 and "nothing to change" in r.json()["error"]["message"]
    assert {w: s.snapshot(w) for w in ids} == before
    assert s.mem.get(s.scope("lib"), ids["lib"]).version == 1


def test_an_empty_change_is_still_a_change(surfaces: Surfaces) -> None:
    """Clearing the tags or the metadata is a change (``[]`` and ``{}`` are not "nothing")."""
    s = surfaces
    rec = s.mem.add(s.scope("lib"), "the note to edit", tags=["a"], metadata={"k": 1})
    cleared = s.mem.update(s.scope("lib"), rec.id, expected_version=1, tags=[], metadata={})
    assert cleared.version == 2 and cleared.tags == () and dict(cleared.metadata) == {}
