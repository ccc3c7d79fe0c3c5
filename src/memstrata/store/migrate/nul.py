"""NUL characters in the text of records written before every store refused them.

Until the tenth session SQLite and ``memory://`` stored a content or summary holding a NUL
character; PostgreSQL text cannot hold one, so such a record could not be migrated there,
and could not be mended either (an update keeps the old version in the history). A
migration finds them (a dry run counts them) and, when asked, stores each NUL as U+FFFD,
the Unicode replacement character: the text keeps its length and shows where the
character was, nothing else changes (the vector, the lexical terms — a NUL makes none —
and the content hash stay those of the text as it was given), and the report counts the
texts so changed. The verification applies the same replacement to the source's side.
"""

from __future__ import annotations

from dataclasses import replace

from ...records import MemoryRecord
from ..types import RecordDump

__all__ = ["REPLACEMENT", "first_nul", "nul_texts", "without_nul"]

REPLACEMENT = "\ufffd"


def _texts(r: MemoryRecord) -> tuple[str, str]:
    return r.content.raw, r.content.summary or ""


def nul_texts(d: RecordDump) -> int:
    """How many texts (a version's content or summary) of the record hold a NUL."""
    return sum("\x00" in text for v in d.versions for text in _texts(v))


def first_nul(d: RecordDump) -> str:
    """Where the record's first NUL is, in words: ``"the content of version 2"``."""
    for v in d.versions:
        for name, text in zip(("content", "summary"), _texts(v), strict=True):
            if "\x00" in text:
                return f"the {name} of version {v.version}"
    return "no text"


def _clean(r: MemoryRecord) -> MemoryRecord:
    raw, summary = _texts(r)
    if "\x00" not in raw and "\x00" not in summary:
        return r
    content = replace(
        r.content,
        raw=raw.replace("\x00", REPLACEMENT),
        summary=None if r.content.summary is None else summary.replace("\x00", REPLACEMENT),
    )
    return replace(r, content=content)


def without_nul(d: RecordDump) -> RecordDump:
    """The record with every NUL of every version's content and summary as U+FFFD."""
    if not nul_texts(d):
        return d
    return replace(d, versions=tuple(_clean(v) for v in d.versions))
