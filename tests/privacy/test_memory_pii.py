"""``Memory(..., pii=...)``: PII is replaced before anything is embedded, indexed, stored or
handed to the LLM, per tenant; the raw text is kept only where the tenant allows it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.errors import ValidationError
from memstrata.policies.pii import PIIPolicy, PIIRedactor

SECRET_TEXT = "my email is zed.quux@example.org and my phone is 13812345678"


@pytest.fixture(params=["sqlite", "memory"])
def pmem(request: pytest.FixtureRequest, tmp_path: Path, clock: FixedClock) -> Iterator[Memory]:
    url = f"sqlite:///{tmp_path / 'p.db'}" if request.param == "sqlite" else "memory://"
    red = PIIRedactor(
        PIIPolicy(), {"open": PIIPolicy(mode="keep"), "audited": PIIPolicy(keep_raw=True)}
    )
    m = Memory(url, embedder="hashing", clock=clock, background=False, pii=red)
    yield m
    m.close()


def test_messages_are_redacted_before_storage_and_search(pmem: Memory) -> None:
    s = Scope("acme", "alice", session="s1")
    rec = pmem.add_message(s, "user", SECRET_TEXT)
    assert rec.text == "my email is [EMAIL_1] and my phone is [PHONE_1]"
    assert rec.metadata["pii"] == {"EMAIL": 1, "PHONE": 1}
    assert "pii_raw" not in rec.metadata
    stored = pmem.get(s, rec.id)
    assert "zed.quux" not in stored.text and "13812345678" not in stored.text
    assert not pmem.search(s.user_scope, "zed quux", mode="lexical")
    pmem.flush()  # summaries, facts, clusters made by the (heuristic) LLM from stored text
    for r in pmem.list(s.user_scope, filters={"include_superseded": True}, limit=1000):
        assert "zed.quux" not in r.text and "13812345678" not in r.text


def test_notes_and_updates_are_redacted(pmem: Memory) -> None:
    s = Scope("acme", "alice")
    note = pmem.add(s, "API key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z for the bot")
    assert note.text == "API key [SECRET_1] for the bot"
    upd = pmem.update(s, note.id, expected_version=note.version, content="server is 10.0.0.7 now")
    assert upd.text == "server is [IP_1] now" and upd.metadata["pii"] == {"IP": 1}


def test_tenant_policies(pmem: Memory) -> None:
    kept = pmem.add_message(Scope("open", "u", session="s"), "user", SECRET_TEXT)
    assert kept.text == SECRET_TEXT and "pii" not in kept.metadata
    raw = pmem.add_message(Scope("audited", "u", session="s"), "user", SECRET_TEXT)
    assert raw.text.startswith("my email is [EMAIL_1]")
    assert raw.metadata["pii_raw"] == SECRET_TEXT


def test_without_a_policy_nothing_changes(mem: Memory, alice: Scope) -> None:
    assert mem.add_message(alice, "user", SECRET_TEXT).text == SECRET_TEXT


def test_a_bad_policy_is_refused_before_anything_opens(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        Memory(f"sqlite:///{tmp_path / 'x.db'}", embedder="hashing", pii="hide")
    assert not (tmp_path / "x.db").exists()
