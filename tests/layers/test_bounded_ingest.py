"""Issue 7 item 6: an ingest job reads its own turns plus one window, not the session.

- ``left_by`` hands every turn that leaves the window to exactly one job (the jobs' sets
  partition what the whole-session computation says has left), however the turns arrive;
- a cluster's stored member list is bounded while its count keeps growing."""

from __future__ import annotations

from pathlib import Path

import pytest
from strata_kit import ALICE, add_turns, layer_ctx, minutes_after

from memstrata.layers import mid_term
from memstrata.layers.mid_term import MidTermService
from memstrata.layers.short_term import ShortTermService


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
@pytest.mark.parametrize("batches", [[1] * 70, [3, 1, 7, 2, 25, 1, 1, 30], [70]])
def test_left_by_partitions_the_overflow(tmp_path: Path, kind: str, batches: list[int]) -> None:
    with layer_ctx(tmp_path, kind) as ctx:
        short = ShortTermService(ctx)
        handed: list[str] = []
        n = 0
        for size in batches:
            turns = [
                ("user" if (n + i) % 3 == 0 else "assistant", f"turn {n + i} text")
                for i in range(size)
            ]
            recs = add_turns(ctx, ALICE, turns, start=minutes_after(n))
            n += size
            handed += [m.id for m in short.left_by(ALICE, [r.id for r in recs])]
        expected = [m.id for m in short.overflowed(ALICE)]
        assert expected, "the window overflowed"
        assert len(handed) == len(set(handed)), "a turn was handed on twice"
        assert handed == expected


def test_a_clusters_member_list_is_bounded_but_its_count_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mid_term, "MEMBERS_KEPT", 4)
    with layer_ctx(tmp_path) as ctx:
        mid = MidTermService(ctx)
        turns = add_turns(ctx, ALICE, [("user", "we sail to the fjords in June")] * 9)
        mid.absorb(ALICE, turns[:5])
        mid.absorb(ALICE, turns[5:])
        mid.absorb(ALICE, turns[-2:])  # a re-run: nothing joins twice
        (cluster,) = mid.clusters(ALICE)
        s = cluster.content.structured
        assert s["count"] == 9 and s["interaction_length"] == 9
        assert s["members"] == [t.id for t in turns[-4:]]
        assert cluster.source_ids == tuple(t.id for t in turns[-4:])
