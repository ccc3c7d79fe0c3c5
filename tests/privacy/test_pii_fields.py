"""Every string a user writes goes through the tenant's PII policy, not only the text
(issue 10 §3): record metadata (keys and values, nested), tags, a message's metadata, an
update's metadata and tags, imported records' metadata, a forget reason (on the record and
in the audit log), a tag used to change importance, and a task's outcome and feedback
before they reach the LLM. Nothing of it is left in any version or in the SQLite file."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import FixedClock, Memory, Scope
from memstrata.llm.base import Reflection, TaskOutcome
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.policies.pii import PIIPolicy, PIIRedactor
from memstrata.records import Message

from .store_dump import all_versions, file_bytes

S = Scope("acme", "alice", session="s1")
EMAIL = "zed.quarz@example.org"
PHONE = "+44 20 7946 0958"
CARD = "4111 1111 1111 1111"
VALUES = (EMAIL, PHONE, CARD)


def _memory(path: Path, clock: FixedClock, **kw: object) -> Memory:
    return Memory(
        f"sqlite:///{path}", embedder="hashing", clock=clock, background=False, pii="redact", **kw
    )  # type: ignore[arg-type]


def _dump(mem: Memory, scope: Scope) -> str:
    return "\n".join(
        json.dumps(
            [r.text, r.content.summary, r.content.structured, list(r.tags), dict(r.metadata)],
            ensure_ascii=False,
            default=str,
        )
        for r in all_versions(mem, scope)
    )


def _assert_clean(mem: Memory, path: Path, scope: Scope = S) -> None:
    dump = _dump(mem, scope)
    audit = "\n".join(json.dumps(e.as_dict()) for e in mem.audit.query(scope.tenant))
    mem.close()
    data = file_bytes(path)
    for value in VALUES:
        assert value not in dump, f"{value} stored in a record"
        assert value not in audit, f"{value} stored in the audit log"
        assert value.encode() not in data, f"{value} in the database file"


def _meta() -> dict[str, object]:
    return {
        "contact": f"mail {EMAIL}",
        "nested": {"phones": [PHONE], "n": 3},
        EMAIL: "a key that is an address",
        "card": CARD,
    }


def test_add_redacts_metadata_and_tags(tmp_path: Path, clock: FixedClock) -> None:
    path = tmp_path / "a.db"
    mem = _memory(path, clock)
    rec = mem.add(S, "a plain note about plumbing", tags=[f"to {EMAIL}", "home"], metadata=_meta())
    assert rec.tags == ("to [EMAIL_1]", "home")
    assert rec.metadata["contact"] == "mail [EMAIL_1]"
    assert rec.metadata["nested"] == {"phones": ["[PHONE_1]"], "n": 3}
    assert rec.metadata["[EMAIL_1]"] == "a key that is an address"
    assert rec.metadata["pii"] == {"EMAIL": 3, "PHONE": 1, "CARD": 1}
    assert mem.get(S, rec.id) == rec  # returned as stored
    _assert_clean(mem, path)


def test_message_update_and_import_redact_metadata(tmp_path: Path, clock: FixedClock) -> None:
    path = tmp_path / "m.db"
    mem = _memory(path, clock)
    mem.add_messages(S, [Message("user", "hello there", metadata=_meta())])
    mem.add_message(S, "user", "and again", metadata={"from": EMAIL})
    note = mem.add(S, "a plain note about gardening")
    mem.update(S, note.id, expected_version=1, metadata=_meta(), tags=[CARD])
    source = Memory("memory://", embedder="hashing", background=False)  # no policy: clear
    source.add(Scope("old", "alice"), "an imported note", tags=[PHONE], metadata=_meta())
    buf = io.StringIO()
    source.export_records(Scope("old", "alice"), buf)
    source.close()
    assert EMAIL in buf.getvalue()
    buf.seek(0)
    assert mem.import_records(buf, into=Scope("acme", "alice")).imported == 1
    mem.flush()
    _assert_clean(mem, path)


def test_forget_reason_and_tag_are_redacted_on_record_and_audit(
    tmp_path: Path, clock: FixedClock
) -> None:
    path = tmp_path / "f.db"
    mem = _memory(path, clock)
    a = mem.add(S, "a note on tomatoes", tags=[EMAIL])
    b = mem.add(S, "a note on cucumbers")
    assert a.tags == ("[EMAIL_1]",)
    changed = mem.set_importance_by_tag(S, EMAIL, 0.9)  # matches the stored placeholder
    assert [r.id for r in changed] == [a.id]
    mem.forget(S, [b.id], reason=f"the user {EMAIL} asked, call {PHONE}")
    forgotten = mem.get(S, b.id, include_deleted=True)
    assert forgotten.metadata["forgotten"]["reason"] == "the user [EMAIL_1] asked, call [PHONE_1]"
    _assert_clean(mem, path)


class _Recording(HeuristicLLM):
    """Remembers every text it is shown."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def reflect(self, task: TaskOutcome) -> Reflection:
        self.seen.append(task.model_dump_json())
        return super().reflect(task)


def test_task_outcome_and_feedback_are_redacted_before_the_llm(
    tmp_path: Path, clock: FixedClock
) -> None:
    path = tmp_path / "t.db"
    llm = _Recording()
    mem = _memory(path, clock, llm=llm)
    mem.tasks.start(S, "book the plumber", steps=["call"])
    mem.tasks.complete(S, True, f"booked, confirmation sent to {EMAIL}", f"call me on {PHONE}")
    assert llm.seen and not any(v in s for s in llm.seen for v in VALUES)
    assert "[EMAIL_1]" in llm.seen[0]
    _assert_clean(mem, path)


def test_a_tenant_that_keeps_pii_keeps_its_metadata(clock: FixedClock) -> None:
    mem = Memory(
        "memory://",
        embedder="hashing",
        clock=clock,
        background=False,
        pii=PIIRedactor(PIIPolicy(), {"open": PIIPolicy(mode="keep")}),
    )
    try:
        rec = mem.add(Scope("open", "u"), "a note", tags=[EMAIL], metadata={"m": EMAIL})
        assert rec.tags == (EMAIL,) and rec.metadata == {"m": EMAIL}
        mem.forget(Scope("open", "u"), [rec.id], reason=EMAIL)
        assert mem.audit.query("open", action="forget")[0].reason == EMAIL
    finally:
        mem.close()


_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=10)
_emails = st.builds(lambda a, b, c: f"{a}.{b}@{c}.org", _word, _word, _word)
_json = st.recursive(
    st.one_of(st.integers(-5, 5), st.booleans(), st.none(), _word, _emails),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.one_of(_word, _emails), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(meta=st.dictionaries(st.one_of(_word, _emails), _json, max_size=4))
def test_no_address_survives_in_any_metadata(meta: dict[str, object]) -> None:
    red = PIIRedactor(PIIPolicy())
    mem = Memory("memory://", embedder="hashing", background=False, pii=red)
    try:
        rec = mem.add(S, "a note", metadata=meta, dedup=False)
        assert "@" not in json.dumps(dict(rec.metadata))
        assert mem.get(S, rec.id).metadata == rec.metadata
    finally:
        mem.close()


@pytest.mark.parametrize("text", [f"mail {EMAIL}", "no pii here"])
def test_redacting_a_record_twice_changes_nothing(text: str, clock: FixedClock) -> None:
    mem = Memory("memory://", embedder="hashing", clock=clock, background=False, pii="redact")
    try:
        rec = mem.add(S, text, tags=[text], metadata={"k": text, text: 1})
        red = PIIRedactor(PIIPolicy())
        assert red.redact_record(rec) is rec
    finally:
        mem.close()
