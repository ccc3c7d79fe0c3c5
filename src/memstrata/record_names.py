"""The record types' names as plain strings, written once: the HTTP API's request bodies
(``server/dto.py``) and the CLI's ``--type`` choices take them from here without importing
the library (the CLI's import stays typer and rich; see ``cli/app.py``). They are the
values of :class:`memstrata.records.RecordType`, in its order."""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["RECORD_TYPE_NAMES", "RecordTypeName"]

RecordTypeName = Literal[
    "message",
    "summary",
    "episode",
    "fact",
    "knowledge",
    "cluster",
    "key",
    "procedure",
    "task",
    "note",
]
RECORD_TYPE_NAMES: tuple[str, ...] = get_args(RecordTypeName)
