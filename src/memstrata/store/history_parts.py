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
from collections.abc import Iterator, Sequence
from typing import Generic, TypeVar

from ..records import MemoryRecord
from ..scope import Scope

__all__ = ["PartSpool", "readable_part"]

T = TypeVar("T")


def readable_part(part: list[MemoryRecord], scope: Scope) -> list[MemoryRecord]:
    """A part as ``scope`` may read it: through a caller, only the versions whose access
    admitted the caller (``store.types.readable_versions``, a part at a time)."""
    if scope.caller is None:
        return part
    return [v for v in part if v.visible_in(scope)]


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
