"""Issue 7 §8: ``add()`` never waits on the LLM; §9: a summary is labelled with what
actually wrote it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from memstrata import FixedClock, Memory, Scope
from memstrata.errors import ProviderError
from memstrata.llm.chat import PromptedLLM
from memstrata.llm.fake import ScriptedChat
from memstrata.policies.importance import REFINE_IMPORTANCE, heuristic_importance

from .conftest import open_memory


class HangingChat:
    """A chat backend that blocks until released (at most ``timeout`` seconds), then
    answers; it counts the calls it receives."""

    name = "hanging"

    def __init__(self, reply: str, timeout: float = 30.0) -> None:
        self.release = threading.Event()
        self.calls = 0
        self._reply = reply
        self._timeout = timeout

    def complete(self, messages: list[dict[str, str]], *, json_mode: bool) -> str:
        self.calls += 1
        if not self.release.wait(self._timeout):
            raise ProviderError("the hanging endpoint timed out")
        return self._reply


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_add_without_importance_never_calls_the_llm(
    kind: str, tmp_path: Path, clock: FixedClock, alice: Scope
) -> None:
    chat = HangingChat('{"importance": 0.93}')
    mem = open_memory(kind, tmp_path, clock, llm=PromptedLLM(chat))
    try:
        text = "Remember: Alice is allergic to penicillin"
        rec = mem.add(alice, text)
        assert chat.calls == 0, "add() called the LLM on the caller's thread"
        assert rec.importance == heuristic_importance(text)
        (job,) = [
            j for j in mem.store.list_jobs(alice.tenant, alice.user) if j.kind == REFINE_IMPORTANCE
        ]
        assert job.payload["id"] == rec.id
        # the background pass refines it with the model
        chat.release.set()
        report = mem.flush()
        assert report.failed == 0 and not report.errors
        assert chat.calls == 1
        refined = mem.get(alice, rec.id)
        assert refined.importance == pytest.approx(0.93)
        assert refined.version == rec.version + 1
        assert refined.metadata["importance_by"] == "prompted/hanging"
        assert [v.importance for v in mem.history(alice, rec.id)][0] == rec.importance
    finally:
        chat.release.set()
        mem.close()


def test_refinement_yields_to_a_change_made_since(
    tmp_path: Path, clock: FixedClock, alice: Scope
) -> None:
    chat = HangingChat('{"importance": 0.93}')
    chat.release.set()
    mem = open_memory("sqlite", tmp_path, clock, llm=PromptedLLM(chat))
    try:
        rec = mem.add(alice, "Alice's locker code is 4411")
        mem.update(alice, rec.id, expected_version=rec.version, importance=0.2)
        assert mem.flush().failed == 0
        assert mem.get(alice, rec.id).importance == 0.2
        assert chat.calls == 0
    finally:
        mem.close()


def test_explicit_importance_and_the_offline_llm_queue_nothing(mem: Memory, alice: Scope) -> None:
    mem.add(alice, "a note without importance")  # heuristic LLM: nothing to refine
    mem.add(alice, "a note with importance", importance=0.4)
    assert not [
        j for j in mem.store.list_jobs(alice.tenant, alice.user) if j.kind == REFINE_IMPORTANCE
    ]


def _talk(mem: Memory, scope: Scope, rounds: int) -> None:
    for i in range(rounds):
        mem.add_message(scope, "user", f"Round {i}: I went sailing near Lisbon with Bob")
        mem.add_message(scope, "assistant", f"Round {i}: noted, sailing with Bob near Lisbon")


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_fallback_summaries_are_labelled_by_what_wrote_them(
    kind: str, tmp_path: Path, clock: FixedClock, alice: Scope
) -> None:
    chat = ScriptedChat()  # every call fails (no reply queued)
    mem = open_memory(kind, tmp_path, clock, llm=PromptedLLM(chat))
    try:
        _talk(mem, alice, 12)
        mem.end_session(alice)
        summaries = mem.list(alice, filters={"types": ["summary"]})
        assert summaries and chat.calls
        assert {s.metadata["summarizer"] for s in summaries} == {"heuristic-fallback"}
    finally:
        mem.close()


def test_summaries_the_model_wrote_keep_its_name(
    tmp_path: Path, clock: FixedClock, alice: Scope
) -> None:
    chat = ScriptedChat()
    for _ in range(200):
        chat.enqueue('{"summary": "Alice went sailing near Lisbon with Bob."}')
    mem = open_memory("sqlite", tmp_path, clock, llm=PromptedLLM(chat))
    try:
        _talk(mem, alice, 12)
        mem.end_session(alice)
        summaries = mem.list(alice, filters={"types": ["summary"]})
        assert summaries
        assert {s.metadata["summarizer"] for s in summaries} == {"prompted/scripted"}
    finally:
        mem.close()
