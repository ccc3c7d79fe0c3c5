"""NUL characters in the text of records written before every store refused them.

Until the tenth session SQLite and ``memory://`` stored a content or summary holding a NUL
character; PostgreSQL text cannot hold one, so such a record could not be migrated there,
and could not be mended either (an update keeps the old version in the history). A
migration finds them (a dry run counts them) and, when asked, stores each NUL as U+FFFD,
the Unicode replacement character: the text keeps its length and shows where the
character was, nothing else changes (the vector, the lexical terms — a NUL makes none —
and the content hash stay those of the text as it was given), and the report counts the
texts so changed. The verification applies the same replacement to the source's side.

Tags count as texts too: until the twentieth session a tag could hold a NUL on every store,
and PostgreSQL stores one (inside the JSON list) but cannot read it back out, so every
tag-filtered list and search of that user failed there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from ...records import MemoryRecord
from ..types import RecordDump

__all__ = [
    "REPLACEMENT",
    "first_nul",
    "nul_texts",
    "part_nul_texts",
    "watched_parts",
    "without_nul",
]

REPLACEMENT = "\ufffd"


def _texts(r: MemoryRecord) -> tuple[str, ...]:
    return (r.content.raw, r.content.summary or "", *r.tags)


def _names(r: MemoryRecord) -> tuple[str, ...]:
    return ("content", "summary", *(f"tag {t!r}" for t in r.tags))


def nul_texts(d: RecordDump) -> int:
    """How many texts (a version's content, summary or tags) of ``d.versions`` hold a NUL
    (a long history's parts: :func:`part_nul_texts`, as they are read)."""
    return part_nul_texts(d.versions)


def part_nul_texts(versions: Sequence[MemoryRecord]) -> int:
    """How many texts of ``versions`` hold a NUL."""
    return sum("\x00" in text for v in versions for text in _texts(v))


def first_nul(versions: Sequence[MemoryRecord]) -> str:
    """Where the first NUL of ``versions`` is, in words: ``"the content of version 2"``."""
    for v in versions:
        for name, text in zip(_names(v), _texts(v), strict=True):
            if "\x00" in text:
                return f"the {name} of version {v.version}"
    return "no text"


def _clean(r: MemoryRecord) -> MemoryRecord:
    if not any("\x00" in text for text in _texts(r)):
        return r
    raw, summary = r.content.raw, r.content.summary
    content = replace(
        r.content,
        raw=raw.replace("\x00", REPLACEMENT),
        summary=None if summary is None else summary.replace("\x00", REPLACEMENT),
    )
    tags = tuple(dict.fromkeys(t.replace("\x00", REPLACEMENT) for t in r.tags))
    return replace(r, content=content, tags=tags)


def _clean_part(part: list[MemoryRecord]) -> list[MemoryRecord]:
    return [_clean(v) for v in part]


def without_nul(d: RecordDump) -> RecordDump:
    """The record with every NUL of every version's content, summary and tags as U+FFFD
    (a long history's parts as they are read)."""
    if d.earlier is not None:
        d = replace(d, earlier=d.earlier.changed(_clean_part))
    if not nul_texts(d):
        return d
    return replace(d, versions=tuple(_clean(v) for v in d.versions))


def watched_parts(d: RecordDump, see: Callable[[list[MemoryRecord]], None]) -> RecordDump:
    """``d`` with ``see`` called on each part of its long history as it is read, before it
    is given (a copy counts, or refuses, their NUL characters so)."""
    if d.earlier is None:
        return d

    def seen(part: list[MemoryRecord]) -> list[MemoryRecord]:
        see(part)
        return part

    return replace(d, earlier=d.earlier.changed(seen))
