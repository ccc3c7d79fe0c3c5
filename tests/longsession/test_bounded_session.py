"""Issue 7 item 6: the background work per message does not grow with the session.

One session of the synthetic conversation the ``bench scale`` long-session row uses, fed a
turn at a time (``add_message`` + ``flush``: every ingest job runs at once). The work of a
window of turns is counted — store calls, rows the store returns, SQLite VM instructions —
at N and at 4N turns; a cost that grows with the session (a reload of the user's vectors
after every cluster update, a scan of every job the user ever had, a list read whole) shows
up as a ratio near 4, bounded work as a ratio near 1. (Provenance ids handled per turn are
reported too: they grow until a cluster's kept member list is full, a constant bound.)
"""

from __future__ import annotations

from pathlib import Path

from session_kit import long_session

N = 120  # past the short-term window (20 rounds) and several summary blocks
WINDOW = 40
LIMIT = 1.5  # 4x the turns may cost at most 1.5x the work per turn


def test_work_per_turn_is_bounded_from_n_to_4n_turns(tmp_path: Path) -> None:
    with long_session(tmp_path) as measure:
        early = measure(N, WINDOW)
        late = measure(4 * N, WINDOW)
    report = f"\n  {early}\n  {late}"
    assert late.vm_steps <= LIMIT * early.vm_steps, "SQLite work grew" + report
    assert late.rows <= LIMIT * early.rows, "rows read grew" + report
    assert late.calls <= LIMIT * early.calls, "store calls grew" + report
    # the turn's own vector plus the cluster and summary vectors its job rewrote
    assert late.vector_rows <= 4, "the vector cache reloaded rows it had" + report
