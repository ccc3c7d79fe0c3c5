"""Ingest a user ↔ assistant conversation as an agent would: each turn with its role.

The LoCoMo runner stores every turn as ``Role.USER`` with "Speaker: " written before it (two
people chatting). An agent stores the user's turns as ``user`` and its own replies as
``assistant``, without a name in the text; what depends on the role (profile facts are read
from the user's turns only, summaries split rounds at the user's turns) then works as it does
for an agent. This writes one kept store per conversation, in the layout ``run_locomo``
reuses (``<sample_id>.db`` + ``<sample_id>.ids.json``), so the questions run through the same
measurement path as every other set.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..locomo.dataset import Conversation
from .assistant import ASSISTANT

__all__ = ["Ingested", "ingest_with_roles"]


@dataclass(frozen=True, slots=True)
class Ingested:
    messages: int = 0
    seconds: float = 0.0
    flush_seconds: float = 0.0


def ingest_with_roles(
    convs: Sequence[Conversation],
    folder: Path,
    embedder: str,
    progress: Callable[[str, int], None] | None = None,
) -> Ingested:
    """Store each conversation not stored yet in ``folder`` (turns by ``assistant`` as
    ``Role.ASSISTANT``, the others as ``Role.USER``); the time it took."""
    from memstrata import Memory, Message, Role, Scope

    folder.mkdir(parents=True, exist_ok=True)
    n, secs, flush_secs = 0, 0.0, 0.0
    for conv in convs:
        marker = folder / f"{conv.sample_id}.ids.json"
        if marker.is_file():
            continue
        db = folder / f"{conv.sample_id}.db"
        for stale in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            stale.unlink(missing_ok=True)  # an ingest that did not finish
        if progress is not None:
            progress(f"ingest {conv.sample_id}", 0)
        mem = Memory(f"sqlite:///{db}", embedder=embedder, background=False)
        try:
            id_to_dia: dict[str, str] = {}
            t0 = time.perf_counter()
            for sess in conv.sessions:
                scope = Scope("locomo", conv.sample_id, session=f"session_{sess.number}")
                msgs = [
                    Message(
                        role=Role.ASSISTANT if t.speaker == ASSISTANT else Role.USER,
                        content=t.text,
                        observed_at=t.observed_at,
                        metadata={"dia_id": t.dia_id},
                    )
                    for t in sess.turns
                ]
                for rec, turn in zip(mem.add_messages(scope, msgs), sess.turns, strict=True):
                    id_to_dia[rec.id] = turn.dia_id
            secs += time.perf_counter() - t0
            t0 = time.perf_counter()
            mem.flush()
            flush_secs += time.perf_counter() - t0
        finally:
            mem.close()
        marker.write_text(json.dumps(id_to_dia), encoding="utf-8")
        n += len(id_to_dia)
    return Ingested(n, secs, flush_secs)
