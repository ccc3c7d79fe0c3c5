"""Query parameters the route does not read, or repeated when it reads one value, are
refused (422), as unknown body fields are.

FastAPI reads the last of ``?agent=a&agent=b`` and drops the others without a word: the
client meant two agents, or built its URL wrongly; either way an answer for one of them is
not what it asked for (schemathesis's negative-data check found it). And it ignores a name
the route does not take: ``GET /memories?observed_after=...`` listed every record, unfiltered
(the audit found it). Parameters that take a list (``type``, ``tag``) repeat as before.
"""

from __future__ import annotations

import types
from collections import Counter
from collections.abc import Iterator
from typing import Annotated, Any, Union, get_args, get_origin

from fastapi import Request

from memstrata.errors import ValidationError

__all__ = ["query_as_declared"]

_MANY = (list, tuple, set, frozenset)
# kept on each route: every query name it reads, and those that take one value (on the
# route, not in a table by id(route): a route of an app that has gone may share its id)
_NAMES = "_memstrata_query_names"


async def query_as_declared(request: Request) -> None:
    """Refuse a request with a query parameter its route does not read, or that repeats
    one its route reads one value of."""
    query = request.query_params
    if not query:
        return
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None:
        return
    names: tuple[frozenset[str], frozenset[str]] | None = getattr(route, _NAMES, None)
    if names is None:
        fields = list(_query_fields(dependant))
        names = (
            frozenset(f.alias for f in fields),
            frozenset(f.alias for f in fields if not _takes_many(f.field_info.annotation)),
        )
        setattr(route, _NAMES, names)
    known, singles = names
    unknown = sorted(set(query) - known)
    if unknown:
        takes = ", ".join(sorted(known)) or "none"
        raise ValidationError(
            f"query parameter {unknown[0]!r} is not one this route reads (it takes: {takes}); "
            "remove it or check its spelling"
        )
    if len(query) == len(query.multi_items()):  # no name repeated
        return
    counts = Counter(name for name, _ in query.multi_items())
    repeated = sorted(name for name, n in counts.items() if n > 1 and name in singles)
    if repeated:
        name = repeated[0]
        raise ValidationError(
            f"query parameter {name!r} was given {counts[name]} times, but takes one value; "
            "send it once (one request per value)"
        )


def _query_fields(dependant: Any) -> Iterator[Any]:
    yield from dependant.query_params
    for sub in dependant.dependencies:
        yield from _query_fields(sub)


def _takes_many(annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin is Annotated:
        return _takes_many(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return any(_takes_many(a) for a in get_args(annotation))
    return annotation in _MANY or origin in _MANY
