"""A refused turn of a batch is named by its place: ``add_messages`` (sync, async) and the
HTTP API's ``/messages/batch`` said "content holds a NUL character (position 1)" of one of
up to 1,000 turns, without saying which; pydantic's own refusals over HTTP already said
``body.messages.1.content``. Now "messages[1]: content holds ... (nothing of the 3 turns
was written)"; nothing written, as before (session 34's audit)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata import Scope
from memstrata.errors import ValidationError

from .surfaces import USERS, Surfaces

BAD = [
    ({"content": "a\x00b"}, "content holds a NUL"),
    ({"content": " \n "}, "content is empty"),
    ({"metadata": {"a": float("nan")}}, "metadata.a is nan"),
    (
        {"observed_at": "9999-12-31T23:59:59-12:00"},
        "observed_at 9999-12-31T23:59:59-12:00 is outside",
    ),
]


@pytest.fixture
def surfaces(tmp_path: Path) -> Iterator[Surfaces]:
    s = Surfaces(f"sqlite:///{tmp_path / 'm.db'}", tmp_path)
    yield s
    s.close()


def _batch(bad: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "the first turn"},
        {"role": "assistant", "content": "the second turn", **bad},
        {"role": "user", "content": "the third turn"},
    ]


@pytest.mark.parametrize(("bad", "says"), BAD)
def test_the_refused_turn_of_a_batch_is_named(
    surfaces: Surfaces, bad: dict[str, Any], says: str
) -> None:
    s = surfaces
    want = f"messages[1]: {says}"
    with pytest.raises(ValidationError, match=r"^messages\[1\]: ") as sync:
        s.mem.add_messages(Scope("acme", USERS["lib"], session="s1"), _batch(bad))
    with pytest.raises(ValidationError, match=r"^messages\[1\]: ") as aio:
        s.loop.run_until_complete(
            s.amem.add_messages(Scope("acme", USERS["aio"], session="s1"), _batch(bad))
        )
    assert str(sync.value) == str(aio.value) and want in str(sync.value)
    assert "nothing of the 3 turns was written" in str(sync.value)
    r = s.http(
        "POST", f"/v1/users/{USERS['http']}/sessions/s1/messages/batch", {"messages": _batch(bad)}
    )
    assert r.status_code == 422 and want in r.json()["error"]["message"], r.text
    assert all(s.snapshot(w)[0] == 0 for w in ("lib", "aio", "http"))


def test_one_turn_is_refused_as_before(surfaces: Surfaces) -> None:
    with pytest.raises(ValidationError, match="^content holds a NUL"):
        surfaces.mem.add_message(Scope("acme", "u", session="s1"), "user", "a\x00b")
    r = surfaces.http(
        "POST", "/v1/users/u/sessions/s1/messages", {"role": "user", "content": "\x00"}
    )
    assert r.status_code == 422 and r.json()["error"]["message"].startswith("content holds a NUL")
