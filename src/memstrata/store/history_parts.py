"""A record's earlier versions read in parts (``Store.history_parts``), oldest part first,
holding a part in memory whatever the record's number of versions.

The SQL stores keep a history as reverse deltas from the current row down
(:mod:`memstrata.store.sqlite.history`), so its versions are made newest first; an export
writes them oldest first. :class:`PartSpool` turns the one order into the other on disk:
each part made (newest part first) is pickled into a temporary file, and read back last
part first. The deltas are read in one read of the store (one snapshot: a history
rewritten meanwhile, by a purged reader's rewrite, is never mixed with the one read) and
spooled as they come; the versions are made from them after that read has ended
(:func:`memstrata.store.sqlite.history.parts_of`) and given out after that, so a read is
held only while the deltas are fetched (SQLite's commits that flush counters wait for its
readers), never while the caller writes what it got.
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Generic, TypeVar

from ..errors import StoreError
from ..records import MemoryRecord
from ..scope import Scope

__all__ = ["EarlierVersions", "PartSpool", "batch_cut", "part_size", "readable_part"]

T = TypeVar("T")


def readable_part(part: list[MemoryRecord], scope: Scope) -> list[MemoryRecord]:
    """A part as ``scope`` may read it: through a caller, only the versions whose access
    admitted the caller (``store.types.readable_versions``, a part at a time)."""
    if scope.caller is None:
        return part
    return [v for v in part if v.visible_in(scope)]


def part_size() -> int:
    """How many earlier versions a part of a long history holds, and how many a record
    may have before its history is read in parts: ``portability.HISTORY_PAGE`` (read when
    called: a test sets it smaller)."""
    from .. import portability  # it imports the stores' types

    return portability.HISTORY_PAGE


def batch_cut(pasts: Sequence[int], limit: int) -> int:
    """How many records of a dump's batch (``pasts``: each one's number of earlier
    versions, ``version - 1``, in order) to give at once: the first ones whose short
    histories (``limit`` versions or fewer; a longer one is given in parts and held on
    disk) add up to ``limit`` at most, and always the first record (as
    ``portability.history_runs`` cuts an export's page). A batch of records with short
    histories thus holds ``limit`` versions besides its records, whatever the batch size."""
    held = 0
    for i, past in enumerate(pasts):
        if past > limit:
            continue
        held += past
        if held > limit:
            return max(1, i)
    return len(pasts)


class EarlierVersions:
    """The earlier versions of a record with a long history in a bulk dump
    (``StoreCopy.dump_records``; its ``RecordDump.versions`` then holds its current
    version only): ``count`` of them, given a part at a time, newest part first, each part
    oldest first (a SQL store keeps them as reverse deltas from the current row down, so
    that is the order they are made and written in). They can be read once, before the
    dump is asked for its next batch (a SQL store's parts come from a spool that the dump
    closes then)."""

    __slots__ = ("_parts", "count")

    def __init__(self, count: int, parts: Iterable[list[MemoryRecord]]) -> None:
        self.count = count
        self._parts: Iterable[list[MemoryRecord]] | None = parts

    def __iter__(self) -> Iterator[list[MemoryRecord]]:
        parts, self._parts = self._parts, None
        if parts is None:
            raise StoreError(
                "a long history of a dump can be read once (its parts are not kept): "
                "read the dump again"
            )
        return iter(parts)

    def changed(
        self, change: Callable[[list[MemoryRecord]], list[MemoryRecord]]
    ) -> EarlierVersions:
        """The same versions with ``change`` made to each part as it is read."""
        return EarlierVersions(self.count, map(change, self))

    @staticmethod
    def of(history: Sequence[MemoryRecord], size: int) -> EarlierVersions:
        """A history held in memory (oldest first), given in parts of ``size``."""
        starts = range(max(0, len(history) - size), -size, -size)
        parts = (list(history[max(0, s) : s + size]) for s in starts)
        return EarlierVersions(len(history), (part for part in parts if part))


class PartSpool(Generic[T]):
    """Parts of a history added newest part first, each oldest first within, given back
    oldest part first (:meth:`oldest_first`), from a temporary file (deleted when closed,
    and by the system if the process dies: it has no name). Written and read back by this
    process only (pickle of its own values: the SQL stores' rows, plain values, which
    pickle ten times faster than records)."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()/__exit__
        self._starts: list[int] = []  # the file's offset of each part

    def add(self, part: Sequence[T]) -> None:
        if part:
            self._starts.append(self._file.tell())
            pickle.dump(list(part), self._file, protocol=pickle.HIGHEST_PROTOCOL)

    def in_order(self) -> Iterator[list[T]]:
        """Every part added, in the order added."""
        if self._file.closed:  # a contract broken by the caller: say which
            raise StoreError(
                "the parts of a long history were read after they were let go (a bulk "
                "dump's, after its next batch was asked for): read a record's "
                "RecordDump.earlier before asking for the next batch"
            )
        self._file.flush()
        self._file.seek(0)
        for _ in self._starts:
            part: list[T] = pickle.load(self._file)  # noqa: S301 - our own file
            yield part

    def oldest_first(self) -> Iterator[list[T]]:
        """Every part added, the last added first."""
        self._file.flush()
        for start in reversed(self._starts):
            self._file.seek(start)
            part: list[T] = pickle.load(self._file)  # noqa: S301 - our own file
            yield part

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> PartSpool[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
