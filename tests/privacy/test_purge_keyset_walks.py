"""A purge rebuilds every summary that cites a purged turn, found by walking the user's
summaries. The walk reads keyset pages: summaries deleted meanwhile (another request, a
maintenance pass) cannot shift a page past the one that cites the turn, which then kept
the purged words (the walk read pages of 1,000 by offset). Since purge31 no walk: the
store's index of citations names the summary (tests/purge31)."""

from __future__ import annotations

from typing import Any

import pytest

from memstrata import Memory, Message, RecordType, Scope
from memstrata.filters import Filters
from midwalk import after_first_page


def test_a_summary_past_the_first_page_is_rebuilt_when_a_delete_lands_mid_walk(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = Memory(f"sqlite:///{tmp_path}/m.db", embedder="hashing", background=False)
    scope = Scope("acme", "alice", session="s")
    try:
        secret = mem.add_messages(scope, [Message(role="user", content="my code is zebracorn")])[0]
        fillers = [
            mem.add(scope, f"summary of chat {i}", type=RecordType.SUMMARY).id for i in range(1_050)
        ]
        cites = mem.add(
            scope,
            "alice said her code is zebracorn",
            type=RecordType.SUMMARY,
            source_ids=[secret.id],
        ).id
        fired = after_first_page(
            mem.store,
            monkeypatch,
            lambda: [mem.delete(scope, rid) for rid in fillers[:200]],  # in the first page
            only=lambda filters: filters.types == frozenset({RecordType.SUMMARY}),
        )
        mem.purge(scope, [secret.id])
        monkeypatch.undo()
        # since purge31 the summaries citing the turn come from the store's index of
        # citations (Store.citing), not a walk of the user's summaries: no page to shift
        assert not fired
        everything = Filters(include_deleted=True, include_superseded=True)
        kept = [r for r in mem.store.list(scope, everything, limit=10_000) if "zebracorn" in r.text]
        assert kept == [], f"{[r.id for r in kept]} kept the purged words (cites={cites})"
    finally:
        mem.close()
