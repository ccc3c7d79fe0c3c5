"""A conversation of invented turns written in ``add_messages`` calls split at given cuts,
each call's turns grouped by session, for the property tests of what a reply is indexed
under (tests/privacy/test_purge_reply_terms.py, tests/reply29/test_one_definition.py)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from memstrata import FixedClock, Memory, Message, Scope

__all__ = ["add_in_calls", "word"]


def word(i: int) -> str:
    """An invented word of turn ``i``, in no other turn (and in no dictionary)."""
    return "zq" + "".join("bcdfghjklm"[int(c)] for c in str(i))


def add_in_calls(
    mem: Memory,
    clock: FixedClock,
    asks: Sequence[bool],
    sessions: Sequence[str | None],
    times: Sequence[datetime | None],
    cuts: Collection[int],
) -> list[str]:
    """Turn ``i`` (of ``len(asks)``) asks about ``word(i)`` if ``asks[i]`` (else it answers),
    in session ``sessions[i]`` of user acme/victim, observed at ``times[i]``. A call ends at
    each cut; the clock moves a second after each call. The turns' ids, in turn order."""
    n = len(asks)
    ids = [""] * n
    calls = [0, *sorted(c for c in cuts if c < n), n]
    for start, end in zip(calls, calls[1:], strict=False):
        by_session: dict[str | None, list[int]] = {}
        for i in range(start, end):
            by_session.setdefault(sessions[i], []).append(i)
        for session, idx in by_session.items():
            msgs = [
                Message(
                    role="user",
                    content=f"Is {word(i)} here?" if asks[i] else f"Yes {word(i)} is.",
                    observed_at=times[i],
                )
                for i in idx
            ]
            scope = Scope("acme", "victim", session=session)
            for i, rec in zip(idx, mem.add_messages(scope, msgs), strict=True):
                ids[i] = rec.id
        clock.advance(seconds=1)
    return ids
