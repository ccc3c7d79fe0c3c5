"""A caller (another user given access to one record) reads only what each version gave
them: a record private at first, edited, then shared, must not show the caller the
words it held while it was private — through ``history``, ``facts.history``, an export
made through the caller's scope, or the HTTP routes a user-bound key reaches.
(``facts.history`` holds: a fact's earlier value is another record, checked on its own.)

Found by audit26: the caller check was made on the current version only, so every past
version came back with it (on every store, and over HTTP with a key bound to another
user). Fixed in session 26: ``store.types.readable_versions`` in every store's
``histories``."""

from __future__ import annotations

import io
import json

from memstrata import Memory, Scope
from memstrata.llm.models import ExtractedFact

from .conftest import served  # noqa: F401

BOB = Scope("acme", "bob")
ALICE_ON_BOB = BOB.as_caller("alice")
SECRET = "zanzibarsecret"


def _shared_after_a_private_edit(mem: Memory) -> str:
    rec = mem.add(BOB, f"the plan is {SECRET} at dawn")
    mem.update(BOB, rec.id, expected_version=1, content="the plan is ready")
    mem.set_access(BOB, rec.id, visibility="shared", allowed_users=["alice"])
    return rec.id


def test_the_owner_still_reads_every_version(mem: Memory) -> None:
    rid = _shared_after_a_private_edit(mem)
    texts = [v.text for v in mem.history(BOB, rid)]
    assert SECRET in texts[0] and texts[-1] == "the plan is ready"
    assert mem.get(ALICE_ON_BOB, rid).text == "the plan is ready"  # shared now


def test_history_through_a_caller_hides_private_versions(mem: Memory) -> None:
    rid = _shared_after_a_private_edit(mem)
    texts = [v.text for v in mem.history(ALICE_ON_BOB, rid)]
    assert texts and not any(SECRET in t for t in texts), texts


def test_an_export_through_a_caller_hides_private_versions(mem: Memory) -> None:
    _shared_after_a_private_edit(mem)
    buf = io.StringIO()
    mem.export_records(ALICE_ON_BOB, buf)
    assert "the plan is ready" in buf.getvalue()  # the shared record is exported
    assert SECRET not in buf.getvalue()


def test_fact_history_through_a_caller_hides_private_values(mem: Memory) -> None:
    for value, confidence in ((SECRET, 0.6), ("changed", 0.9)):
        mem.facts.upsert(
            BOB, ExtractedFact(category="code", key="pin", value=value, confidence=confidence)
        )
    live = mem.facts.get(BOB, "pin")
    assert live is not None and SECRET not in live.text  # the value now
    assert SECRET in mem.facts.history(BOB, "pin")[0].text  # the value before
    mem.set_access(BOB, live.id, visibility="shared", allowed_users=["alice"])
    texts = [v.text for v in mem.facts.history(ALICE_ON_BOB, "pin")]
    assert not any(SECRET in t for t in texts), texts


def test_a_key_bound_to_another_user_reads_no_private_version(served) -> None:  # noqa: F811
    mem: Memory = served.memory
    rid = _shared_after_a_private_edit(mem)
    alice = served.keys.create("acme", user="alice").secret
    h = served.h(alice)
    got = served.client.get(f"/v1/users/bob/memories/{rid}", headers=h)
    assert got.status_code == 200, got.text  # the shared record is readable
    history = served.client.get(f"/v1/users/bob/memories/{rid}/history", headers=h)
    exported = served.client.get("/v1/users/bob/export", headers=h)
    assert history.status_code == exported.status_code == 200
    assert SECRET not in history.text
    assert SECRET not in exported.text
    assert json.loads(exported.text.splitlines()[-1])["end"] == "complete"
