"""Record ids on the command line: the short ids tables print are accepted back.

A full id is used as is; anything shorter is a prefix matched against the ids of the
command's scope only (soft-deleted and superseded records included, since ``restore``,
``purge`` and ``history`` need them). No match is the library's ``NotFoundError``; several
matches are an error listing them, so the user can type a longer prefix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..memory import Memory
    from ..records import MemoryRecord
    from ..scope import Scope

__all__ = ["FULL_ID_LENGTH", "resolve_id"]

FULL_ID_LENGTH = 32  # uuid4().hex
_PAGE = 1000
_SHOWN = 10


def _matches(mem: Memory, scope: Scope, prefix: str) -> list[MemoryRecord]:
    from ..filters import Filters

    flt = Filters(include_deleted=True, include_superseded=True)
    found: list[MemoryRecord] = []
    for batch in mem.store.list_pages(scope, flt, batch_size=_PAGE):  # keyset: none skipped
        # case-blind, as the tables' short hex ids may be typed in capitals
        found.extend(r for r in batch if r.id.lower().startswith(prefix.lower()))
    return found


def resolve_id(mem: Memory, scope: Scope, given: str) -> str:
    """The one id in ``scope`` that is ``given`` or starts with it."""
    from ..errors import NotFoundError, ValidationError
    from ..validation import check_id

    given = given.strip()
    if not given:
        raise ValidationError("a record id (or a unique prefix of one) is required")
    check_id(given)  # a NUL or a lone surrogate (argv's surrogateescape) reaches no store
    try:
        # as typed: an imported record's id, or a document's, may hold capitals
        return mem.store.get(scope, given, include_deleted=True).id
    except NotFoundError:
        if len(given) >= FULL_ID_LENGTH:
            raise
    found = _matches(mem, scope, given)
    ids = sorted({r.id for r in found})
    if len(ids) == 1:
        return ids[0]
    if not ids:
        raise NotFoundError(
            f"no record id in {scope} starts with {given!r}; `memstrata list` shows the ids"
        )
    newest = {r.id: r for r in found}
    lines = [
        f"  {rid}  {newest[rid].type.value}  {newest[rid].text[:60]!r}" for rid in ids[:_SHOWN]
    ]
    more = f"\n  ... and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else ""
    raise ValidationError(
        f"id prefix {given!r} is ambiguous in {scope}: it matches "
        f"{len(ids)} records; type more of the id:\n" + "\n".join(lines) + more
    )
