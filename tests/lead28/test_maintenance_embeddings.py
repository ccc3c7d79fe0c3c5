"""Maintenance's duplicate merge embeds the candidates' texts through the process-wide
embedder. Its in-process cache was keyed by text alone, so a text embedded when it was added
was found there; session 28 made those entries each user's own (caller28), and a call with no
user then found none of them: every run embedded every candidate again. It now embeds
through the user's cache (their LRU entries and, on SQLite and PostgreSQL, their durable
cache). Fails on the merged tree before the fix; passes on b369687."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata import Memory, RecordType, Scope, Source
from recording_embedder import RecordingEmbedder

ALICE = Scope("acme", "alice")


@pytest.mark.parametrize("store", ["sqlite", "memory"])
def test_a_maintenance_run_does_not_embed_what_was_embedded_when_added(
    store: str, tmp_path: Path
) -> None:
    emb = RecordingEmbedder()
    url = f"sqlite:///{tmp_path / 'm.db'}" if store == "sqlite" else "memory://"
    with Memory(url, embedder=emb, background=False) as mem:
        texts = [
            "The user likes hiking in the Alps every summer",
            "Her sister moved to Lisbon to study architecture",
            "The dentist appointment is on the third Tuesday",
            "He keeps sourdough starter in the fridge door",
            "Quarterly taxes are due before the fifteenth",
            "The cat refuses every brand of dry food but one",
        ]
        for text in texts:
            mem.add(
                ALICE, text, dedup=False, source=Source.IMPLICIT_INFERENCE, type=RecordType.EPISODE
            )
        before = len(emb.calls)
        report = mem.maintain(ALICE)
        passages = [t for texts_, query in emb.calls[before:] if not query for t in texts_]
        assert report.scanned == len(texts) and report.merged == 0
        assert not set(passages) & set(texts), passages
