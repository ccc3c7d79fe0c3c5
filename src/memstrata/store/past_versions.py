"""Earlier versions written back to a record (``UnitOfWork.insert_history``): what every
store checks before it writes them (the SQL stores then keep them as reverse deltas,
:func:`memstrata.store.sqlite.history.past_deltas`).

An import restores an export's history this way: the records are inserted first (their
current versions), then each one's earlier versions, oldest first, in the same
transaction. A record's history too long to hold at once is given in parts, oldest part
first, each but the last with the version after it (``newer``: the first of the next
part, which a SQL store needs to write the part's newest version as a delta); the unit
of work keeps that version (``pending``), and the record's next part must begin with it:
a record with earlier versions takes no others, and a unit of work that ends with a part
still waiting for the next writes nothing (:func:`check_finished`). The checks hold the store's own
invariants (a version belongs to one record, versions only grow) whatever the caller
passes; the import's reader has refused a file that breaks them, naming its line
(:func:`memstrata.portability.read_pages`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..errors import ValidationError
from ..records import MemoryRecord

__all__ = ["check_finished", "check_past", "checked_parts", "history_key", "newer_of"]


def history_key(past: Sequence[MemoryRecord]) -> tuple[str, str, str]:
    """The ``(tenant, user, id)`` of the record whose earlier versions ``past`` holds."""
    first = past[0]
    return first.tenant, first.user, first.id


def checked_parts(
    record: MemoryRecord, parts: Iterable[Sequence[MemoryRecord]]
) -> Iterator[tuple[Sequence[MemoryRecord], MemoryRecord]]:
    """Each part of ``record``'s earlier versions given newest part first (a bulk dump's
    ``RecordDump.earlier``), empty ones left out, with the version after it (the oldest of
    the part before; ``record`` for the first), each checked as it comes
    (:func:`check_past`: versions of ``record`` only, in order, each below the next):
    ``ValidationError`` otherwise."""
    after = record
    key = (record.tenant, record.user, record.id)
    for part in parts:
        if not part:
            continue
        if history_key(part) != key:
            tenant, user, rid = history_key(part)
            raise ValidationError(
                f"earlier versions of record {record.id!r} name {tenant}/{user}/{rid!r}: "
                "nothing was written"
            )
        check_past(part, after.version, False)
        yield part, after
        after = part[0]


def check_past(
    past: Sequence[MemoryRecord],
    version: int,
    has_history: bool,
    newer: MemoryRecord | None = None,
    resumes: int | None = None,
) -> None:
    """Refuse earlier versions ``past`` of a stored record at ``version`` (``has_history``:
    it has earlier versions already) that the store cannot keep as its history. ``newer``:
    the version after ``past`` when that is not the stored record (a part of a longer
    history); ``resumes``: the ``newer`` of the record's part before, in this unit of
    work (``None`` for none), the only version a record with history takes next."""
    tenant, user, rid = history_key(past)
    if has_history and (resumes is None or past[0].version != resumes):
        raise ValidationError(
            f"record {rid!r} has earlier versions already; insert_history only gives them "
            "to a record that has none (one just inserted), or goes on with the version "
            "after the part before (its newer): nothing was written"
        )
    if newer is not None:
        if (newer.tenant, newer.user, newer.id) != (tenant, user, rid):
            raise ValidationError(
                f"the version after the earlier versions of record {rid!r} names "
                f"{newer.tenant}/{newer.user}/{newer.id!r}: nothing was written"
            )
        if not past[-1].version < newer.version < version:
            raise ValidationError(
                f"the version after the earlier versions of record {rid!r} is {newer.version}"
                f": it must be above {past[-1].version} and below the stored version "
                f"{version}; nothing was written"
            )
    previous = 0
    for v in past:
        if (v.tenant, v.user, v.id) != (tenant, user, rid):
            raise ValidationError(
                f"an earlier version of record {rid!r} names {v.tenant}/{v.user}/{v.id!r}: "
                "each sequence holds the versions of one record; nothing was written"
            )
        if not previous < v.version < version:
            raise ValidationError(
                f"version {v.version} of record {rid!r} is out of order: its earlier "
                f"versions go oldest first, each below the next and below the stored "
                f"version {version}; nothing was written"
            )
        previous = v.version


def newer_of(
    histories: Sequence[Sequence[MemoryRecord]], newer: Sequence[MemoryRecord | None] | None
) -> list[MemoryRecord | None] | None:
    """``newer`` of the non-empty sequences of ``histories`` (checked to match them)."""
    if newer is None:
        return None
    if len(newer) != len(histories):
        raise ValidationError(
            f"insert_history got {len(newer)} newer versions for {len(histories)} "
            "sequences: give one (or None) for each; nothing was written"
        )
    return [n for h, n in zip(histories, newer, strict=True) if h]


def check_finished(pending: Mapping[Any, int]) -> None:
    """Refuse the end of a unit of work whose ``pending`` (see :func:`check_past`) holds a
    part of a history still waiting for the next: its newest version was kept against a
    version never given."""
    if pending:
        version = next(iter(pending.values()))
        raise ValidationError(
            f"a record's earlier versions were given in parts and the part beginning with "
            f"version {version} (the newer of the part before) never came: give every part, "
            "the last without a newer; nothing was written"
        )
