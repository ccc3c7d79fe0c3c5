"""What a caller is shown of the owner's records: the one place every read passes.

A caller (``Scope.caller``: another user reading what the owner shared) reads records
through the store's usual methods; :class:`AsyncCallerViewStore` wraps the store that
``Memory``, its layer services, its search and its context read through, and turns every
record (and context view) read through a caller's scope into
:func:`memstrata.records.caller_view`: no other reader's id, none of the owner's roles the
caller lacks, no access count, last access or decay (the owner's usage), and no id of a
record the caller cannot read. One extra read of the named ids (``get_many``) per call that
returns a record naming others. The owner's reads and every write pass through unchanged
(``__getattr__``). A store method that returns records must be listed here:
``tests/view27/test_caller_view_store.py`` checks every such method of the protocols is.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from memstrata._async.store.base import AsyncStore
from memstrata.errors import NotFoundError
from memstrata.filters import Filters
from memstrata.records import MemoryRecord, caller_view, references
from memstrata.scope import Scope
from memstrata.store.types import ListQuery, RecordView, Vector

__all__ = ["VIEWED", "AsyncCallerViewStore"]

# The store methods whose answer holds records (or context views) read in a scope.
VIEWED = frozenset(
    {
        "find_by_hash",
        "get",
        "get_many",
        "histories",
        "history",
        "history_parts",
        "list",
        "list_after",
        "list_many",
        "list_pages",
        "recent_turns",
        "vector_records",
        "views",
    }
)


class AsyncCallerViewStore:
    """``store`` with a caller's reads shown as :func:`caller_view` (see the module)."""

    def __init__(self, store: AsyncStore) -> None:
        self.viewed = store

    def __getattr__(self, name: str) -> Any:
        if name == "views":
            views = getattr(self.viewed, name)  # AttributeError: the store has none
            return self._views_of(views)
        return getattr(self.viewed, name)

    def __repr__(self) -> str:
        return repr(self.viewed)

    async def _readable(self, scope: Scope, records: Iterable[MemoryRecord]) -> frozenset[str]:
        """Which of the ids ``records`` name the caller may read (one read; none named,
        none read)."""
        named: set[str] = set()
        own: set[str] = set()
        for r in records:
            named |= references(r)
            own.add(r.id)
        ask = named - own
        found = await self.viewed.get_many(scope.user_scope, sorted(ask)) if ask else []
        return frozenset(own | {r.id for r in found})

    async def _shown(
        self,
        scope: Scope,
        records: builtins.list[MemoryRecord],
        shown: dict[str, builtins.list[int]] | None = None,
    ) -> builtins.list[MemoryRecord]:
        if scope.caller is None or not records:
            return records
        readable = await self._readable(scope, records)
        if shown is not None:
            return self._numbered([caller_view(r, scope, readable) for r in records], shown)
        # a record of version 1 has one version, shown: only edited ones are counted
        edited = {r.id: r.version for r in records if r.version > 1}
        counts = await self._counted(scope.user_scope, edited) if edited else {}
        return [
            caller_view(r, scope, readable, None if r.version == 1 else max(1, counts.get(r.id, 1)))
            for r in records
        ]

    # --- versions (caller28) ------------------------------------------------------------
    # A record's stored ``version`` counts every write of the owner, the ones the caller was
    # not shown too (a private edit before the record was shared, between two shared
    # versions): a caller seeing version 4 whose history holds 2 learnt of 2 unshared
    # versions. A caller never writes (every write through a caller's scope is refused), so
    # it needs no version for optimistic locking: it is shown the number of the version
    # among those it may read (its history numbered 1, 2, ... oldest first; a record read
    # anywhere else has the number of its version in that history). The store counts them
    # for a page (``shown_versions``, caller29) rather than returning every version.

    @staticmethod
    def _numbered(
        records: builtins.list[MemoryRecord], shown: dict[str, builtins.list[int]]
    ) -> builtins.list[MemoryRecord]:
        """``records`` (a caller's views) with each ``version`` counted among the stored
        versions ``shown`` to the caller (by id: a history read whole)."""
        return [
            r
            if r.version == 1
            else replace(r, version=max(1, sum(v <= r.version for v in shown.get(r.id, ()))))
            for r in records
        ]

    async def _counted(self, scope: Scope, versions: dict[str, int]) -> dict[str, int]:
        """How many versions up to each ``id: version`` ``scope`` may read: the store's
        ``shown_versions`` (every store of memstrata has it: the three columns that decide
        it, read for the page's records, caller29), else counted from ``histories`` (caller28
        read those for every page: ~0.15 ms a record on SQLite)."""
        count = getattr(self.viewed, "shown_versions", None)
        if count is not None:
            found: dict[str, int] = await count(scope, versions)
            return found
        histories = await self.viewed.histories(scope, sorted(versions))
        return {rid: sum(v.version <= versions[rid] for v in vs) for rid, vs in histories.items()}

    # --- reads --------------------------------------------------------------------------

    async def get(
        self, scope: Scope, record_id: str, *, include_deleted: bool = False
    ) -> MemoryRecord:
        found = await self.viewed.get(scope, record_id, include_deleted=include_deleted)
        return (await self._shown(scope, [found]))[0]

    async def get_many(self, scope: Scope, ids: Sequence[str]) -> builtins.list[MemoryRecord]:
        return await self._shown(scope, await self.viewed.get_many(scope, ids))

    async def find_by_hash(self, scope: Scope, *args: Any, **kwargs: Any) -> Any:
        found = await self.viewed.find_by_hash(scope, *args, **kwargs)
        if found is None or scope.caller is None:
            return found
        return (await self._shown(scope, [found]))[0]

    async def history(self, scope: Scope, record_id: str) -> builtins.list[MemoryRecord]:
        found = await self.viewed.history(scope, record_id)
        return await self._shown(scope, found, {record_id: [v.version for v in found]})

    async def histories(
        self, scope: Scope, ids: Sequence[str]
    ) -> dict[str, builtins.list[MemoryRecord]]:
        found = await self.viewed.histories(scope, ids)
        if scope.caller is None:
            return found
        readable = await self._readable(scope, (v for vs in found.values() for v in vs))
        shown = {rid: [v.version for v in versions] for rid, versions in found.items()}
        return {
            rid: self._numbered([caller_view(v, scope, readable) for v in versions], shown)
            for rid, versions in found.items()
        }

    async def list(
        self,
        scope: Scope,
        filters: Filters,
        *,
        limit: int = 100,
        offset: int = 0,
        newest_first: bool = True,
    ) -> builtins.list[MemoryRecord]:
        found = await self.viewed.list(
            scope, filters, limit=limit, offset=offset, newest_first=newest_first
        )
        return await self._shown(scope, found)

    async def list_after(
        self,
        scope: Scope,
        filters: Filters,
        record_id: str,
        *,
        limit: int = 20,
        newest_first: bool = False,
    ) -> builtins.list[MemoryRecord]:
        found = await self.viewed.list_after(
            scope, filters, record_id, limit=limit, newest_first=newest_first
        )
        return await self._shown(scope, found)

    async def list_many(
        self, queries: Sequence[ListQuery]
    ) -> builtins.list[builtins.list[MemoryRecord]]:
        found = await self.viewed.list_many(queries)
        return [await self._shown(q.scope, f) for q, f in zip(queries, found, strict=True)]

    async def list_pages(
        self, scope: Scope, filters: Filters, *, batch_size: int = 1000
    ) -> AsyncIterator[builtins.list[MemoryRecord]]:
        async for page in self.viewed.list_pages(scope, filters, batch_size=batch_size):
            yield await self._shown(scope, page)

    async def recent_turns(self, scope: Scope, n: int) -> builtins.list[MemoryRecord]:
        return await self._shown(scope, await self.viewed.recent_turns(scope, n))

    async def vector_records(
        self,
        scope: Scope,
        vector: Vector,
        k: int,
        filters: Filters,
        *,
        keep: Callable[[MemoryRecord], bool] | None = None,
        want: int | None = None,
    ) -> builtins.list[tuple[MemoryRecord, float]]:
        found = await self.viewed.vector_records(scope, vector, k, filters, keep=keep, want=want)
        if scope.caller is None or not found:
            return found
        shown = await self._shown(scope, [r for r, _ in found])
        return [(r, s) for r, (_, s) in zip(shown, found, strict=True)]

    # --- exphist28: a long history read in parts (an export) ---------------------------------
    async def history_parts(
        self, scope: Scope, record_id: str, *, below: int, size: int
    ) -> AsyncIterator[builtins.list[MemoryRecord]]:
        if scope.caller is None:
            async for part in self.viewed.history_parts(scope, record_id, below=below, size=size):
                yield part
            return
        # A caller's ``below`` is a version as the caller is shown it (numbered among the
        # versions it may read, caller28's ``_numbered``): the stored versions below the
        # current one come oldest first, so they are numbered as they come, a part at a
        # time (``_shown`` would read the whole history again for each part).
        try:
            stored = await self.viewed.get(scope, record_id)
        except NotFoundError:
            return
        number = 0
        async for part in self.viewed.history_parts(
            scope, record_id, below=stored.version, size=size
        ):
            readable = await self._readable(scope, part)
            shown = []
            for v in part:
                number += 1
                if number >= below:
                    break
                shown.append(replace(caller_view(v, scope, readable), version=number))
            if shown:
                yield shown
            if number >= below:
                return

    def _views_of(self, views: Any) -> Any:
        async def viewed(scope: Scope, ids: Sequence[str]) -> dict[str, RecordView]:
            found: dict[str, RecordView] = await views(scope, ids)
            if scope.caller is None or not found:
                return found
            named = {i for v in found.values() for i in v.source_ids} - set(found)
            got = await self.viewed.get_many(scope.user_scope, sorted(named)) if named else []
            readable = set(found) | {r.id for r in got}
            return {
                rid: replace(
                    v, source_ids=tuple(i for i in v.source_ids if i == rid or i in readable)
                )
                for rid, v in found.items()
            }

        return viewed
