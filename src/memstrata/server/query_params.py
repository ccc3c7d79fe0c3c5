"""A query parameter that takes one value, given more than once, is refused (422).

FastAPI reads the last of ``?agent=a&agent=b`` and drops the others without a word: the
client meant two agents, or built its URL wrongly; either way an answer for one of them is
not what it asked for (schemathesis's negative-data check found it). Parameters that take a
list (``type``, ``tag``) repeat as before.
"""

from __future__ import annotations

import types
from collections import Counter
from collections.abc import Iterator
from typing import Annotated, Any, Union, get_args, get_origin

from fastapi import Request

from memstrata.errors import ValidationError

__all__ = ["one_value_each"]

_MANY = (list, tuple, set, frozenset)
_SINGLES: dict[int, frozenset[str]] = {}  # per route: the query names that take one value


async def one_value_each(request: Request) -> None:
    """Refuse a request that repeats a query parameter its route reads one value of."""
    query = request.query_params
    if len(query) == len(query.multi_items()):  # no name repeated: nothing to ask
        return
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None:
        return
    singles = _SINGLES.get(id(route))
    if singles is None:
        singles = frozenset(
            f.alias for f in _query_fields(dependant) if not _takes_many(f.field_info.annotation)
        )
        _SINGLES[id(route)] = singles
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
