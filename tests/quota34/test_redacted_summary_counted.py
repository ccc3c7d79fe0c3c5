"""A summary re-embedded because redaction changed its text is counted (quota34).

A summary's (and a cluster's) vector is the mean of its turns' vectors, counted when the
turns were added; but when redaction changes the summary's text (an LLM's summary that
writes an address out, a policy stricter than the turns'), its own redacted text is
embedded again (``AsyncLayerContext.write_with``). Session 33 counted every other derived
embedding, with no limit, in the write's transaction; this one was counted nowhere. Now it
is counted like them: never refused. Checked by the embedder itself: every text the model
embedded is in the day's counter (the embedding cache answers the turns' vectors again).
SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence

from tests.embedders import WrappedHashing

from memstrata import Memory
from memstrata.embedder.base import Matrix
from memstrata.filters import Filters
from memstrata.llm.heuristic import HeuristicLLM
from memstrata.records import Message, RecordType, Role

from .conftest import ALICE, NOW, served, used

TURNS = [
    Message(Role.USER, f"round {i}: the kiln runs at {900 + i} degrees tonight") for i in range(24)
]


class Counting(WrappedHashing):
    """Counts the texts the model embedded (documents and queries apart)."""

    def __init__(self) -> None:
        super().__init__()
        self.documents: list[str] = []
        self.queries: list[str] = []

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> Matrix:
        (self.queries if query else self.documents).extend(texts)
        return super().embed_batch(texts, query=query)


class WritesAnAddress(HeuristicLLM):
    """Summaries that name an e-mail address (which redaction then replaces)."""

    @property
    def name(self) -> str:
        return "writes-an-address"

    calls = 0

    def summarize(self, texts: Sequence[str], *, max_words: int = 200) -> str:
        # each its own text (the embedding cache would answer a repeated one)
        self.calls += 1
        return f"Kiln log {self.calls} ({len(texts)} turns): ask kiln.keeper@example.com."


def _run(url: str, llm: HeuristicLLM) -> tuple[Counting, int, int]:
    from datetime import datetime

    from memstrata import FixedClock

    embedder = Counting()
    mem = Memory(
        url,
        embedder=embedder,
        llm=llm,
        pii="redact",
        clock=FixedClock(datetime.fromisoformat(NOW.isoformat())),
        background=False,
    )
    try:
        mem.add_messages(ALICE, TURNS)
        mem.end_session(ALICE)
        mem.flush()
        kinds = Filters(types=frozenset({RecordType.SUMMARY}))
        summaries = int(mem.store.count(ALICE.user_scope, kinds))
        return embedder, used(mem), summaries
    finally:
        mem.close()


def test_a_summary_redaction_re_embedded_is_counted(shared_url: str) -> None:
    """A memory without quotas (the flag set by one with quotas) writes turns, and its
    jobs write summaries whose text redaction changed: each was embedded again, and the
    day counts every text the model embedded (before: the summaries' were missing)."""
    flag = served(shared_url)
    try:
        embedder, counted, summaries = _run(shared_url, WritesAnAddress())
        assert summaries >= 1
        assert any("[EMAIL" in t for t in embedder.documents), "a summary was re-embedded"
        assert counted == len(embedder.documents)
    finally:
        flag.close()


def test_a_summary_kept_as_written_is_not_embedded(shared_url: str) -> None:
    """Guard: summaries redaction leaves alone take their turns' mean, no embedding of
    their own, and the day counts what the model embedded."""
    flag = served(shared_url)
    try:
        embedder, counted, summaries = _run(shared_url, HeuristicLLM())
        assert summaries >= 1
        assert counted == len(embedder.documents)
    finally:
        flag.close()
